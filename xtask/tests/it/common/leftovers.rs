//! The lab tests' shared guard: one lab at a time in the test process
//! (the lab names its namespaces and taps after the process id, and all
//! the integration tests share one process), and the check that a lab
//! left none of them behind. Every test that starts a lab (QEMU or the
//! host's namespaces) holds [`one_at_a_time`] while it runs.

/// Serialises the labs of every test file.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the lock until dropped; a panicked holder does not poison it.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Panics naming any `xlab-<pid>-…` namespace or `xl<pid>_…` tap of
/// this process still present.
pub fn no_lab_leftovers() {
    let pid = std::process::id();
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let netns = String::from_utf8_lossy(&netns.stdout);
    assert!(
        !netns.contains(&format!("xlab-{pid}-")),
        "namespaces left: {netns}"
    );
    for link in std::fs::read_dir("/sys/class/net").unwrap() {
        let name = link.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(&format!("xl{pid}_")), "tap {name} left");
    }
}
