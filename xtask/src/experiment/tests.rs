//! The runner's own state: where each lab records, so that a killed
//! experiment's labs are found and taken over; one experiment at a time.

use super::*;

#[test]
fn a_lab_s_directory_is_kept_before_it_starts_and_taken_over_once_it_recorded() {
    let root = tempfile::tempdir().unwrap();
    let layout = Layout::new(root.path());
    let path = state_file(&layout, "flags");
    let mut state = State::read(&path).unwrap();
    let Start::NewIn(dir) = lab_start(&layout, &mut state, &path, "brcm47xx").unwrap() else {
        panic!("a new lab first");
    };
    assert!(dir.starts_with(layout.work_dir().join("lab/brcm47xx")));
    // Kept on disk before the lab starts: a crash during its kernel
    // builds finds it again.
    let mut again = State::read(&path).unwrap();
    assert_eq!(again.labs["brcm47xx"], dir);
    assert_eq!(
        lab_start(&layout, &mut again, &path, "brcm47xx").unwrap(),
        Start::NewIn(dir.clone())
    );
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(crate::lab::record::FILE_NAME), "{}").unwrap();
    assert_eq!(
        lab_start(&layout, &mut again, &path, "brcm47xx").unwrap(),
        Start::Resume(dir.clone())
    );
    // Another target gets a directory of its own.
    let other = lab_start(&layout, &mut again, &path, "ath79").unwrap();
    assert!(matches!(other, Start::NewIn(d) if d.starts_with(layout.work_dir().join("lab/ath79"))));
}

#[test]
fn a_second_experiment_is_refused_naming_the_first_s_pid() {
    let root = tempfile::tempdir().unwrap();
    let layout = Layout::new(root.path());
    let first = lock(&layout).unwrap();
    let err = lock(&layout).unwrap_err().to_string();
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    assert!(err.contains("experiment.lock"), "{err}");
    drop(first);
    lock(&layout).unwrap();
}

#[test]
fn a_report_file_is_named_by_its_format() {
    let dir = Path::new("/r");
    let names: Vec<PathBuf> = report::Format::ALL
        .iter()
        .map(|&f| plan::report_file(dir, f))
        .collect();
    assert_eq!(
        names,
        [
            "report.txt",
            "report.mail",
            "report.md",
            "report.json",
            "report.csv",
            "report.svg"
        ]
        .map(|n| dir.join(n))
    );
}
