//! The host lab end to end, for real: this machine's kernel, runtime
//! variants applied in a private network namespace, tbench and iperf3
//! over its loopback.
//!
//! * baseline against `lo-no-tso-gso`, 2 runs × 2 s of tbench with 2
//!   clients (and the A/A control): samples per arm and run, the settings
//!   read back inside the namespace after every run, the host's own `lo`
//!   untouched, the size report's tbench lines, nothing left behind;
//! * iperf3 over the namespace's loopback (Mbit/s);
//! * a setting the driver does not allow (`lro on`, `[fixed]` on lo)
//!   stops the lab, naming it;
//! * a device the namespace does not have is refused before anything
//!   runs;
//! * Ctrl-C (SIGINT) in the middle of a run: the lab stops, records
//!   `failed: interrupted`, and removes its namespace and processes.
//!
//! Needs root (network namespaces) and dbench's tbench, iperf3 and
//! ethtool. Without them the gate (`common/gate.rs`) skips the tests,
//! except under CI (`CI` set), where they fail naming the packages: CI
//! runs as root after `cargo xtask setup --tests`. About a minute on 2
//! cores.

use crate::common::gate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use xtask::lab::host_lab::{self, features, BenchName, HostRequest};
use xtask::report::{Format, LabRuns, ReportRequest, Style};
use xtask::results::lab::{Benchmark, Condition, LabMetric, LabRecord, Status};
use xtask::util::layout::Layout;

use crate::common::leftovers::one_at_a_time;

/// This file's tests one at a time on the whole machine, each holding
/// both locks while it runs: the in-process one every lab test takes
/// (each checks that no namespace of its process is left), and a file
/// lock in the temporary directory across processes (nextest runs each
/// test in one), since each checks the whole machine for tbench and iperf3
/// after its lab, which another's lab would leave running.
struct HostLabTurn {
    _process: std::sync::MutexGuard<'static, ()>,
    _machine: xtask::util::lock::Lock,
}

fn host_lab_turn() -> HostLabTurn {
    let process = one_at_a_time();
    let machine = xtask::util::lock::Lock::acquire(
        &std::env::temp_dir().join("xtask-test-lab-host.lock"),
        "a test of the host lab",
        xtask::util::lock::Wait::Yes,
    )
    .expect("the host lab tests' lock");
    HostLabTurn {
        _process: process,
        _machine: machine,
    }
}

/// Whether the host lab can run here: root and its tools. Under CI a
/// missing one fails the test; elsewhere the gate skips it.
fn ready() -> bool {
    gate::Needs::new()
        .root("network namespaces")
        .check(host_lab::check_host_tools())
        .met()
}

/// A workspace in a temporary directory with the repository's runtime
/// variants (or `runtime_toml`), so the lab's results stay out of the
/// real `target/xtask/lab/`.
fn workspace(runtime_toml: Option<&str>) -> (tempfile::TempDir, Layout) {
    let tmp = tempfile::tempdir().unwrap();
    let layout = Layout::new(tmp.path());
    let file = layout.runtime_variants_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    match runtime_toml {
        Some(text) => std::fs::write(&file, text).unwrap(),
        None => {
            std::fs::copy(Layout::from_manifest_dir().runtime_variants_file(), &file).unwrap();
        }
    }
    (tmp, layout)
}

fn request(variants: &[&str], runs: u32, benches: &[BenchName]) -> HostRequest {
    HostRequest {
        variants: variants.iter().map(|v| v.to_string()).collect(),
        runs,
        duration_seconds: 2,
        benches: benches.to_vec(),
        tbench_clients: 2,
        control: true,
    }
}

/// Running processes (zombies have exited) whose command line, its
/// arguments joined by spaces, satisfies `pick`: `pgrep -f` without
/// needing procps.
fn running(pick: impl Fn(&str) -> bool) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        let cmdline = cmdline.trim().to_string();
        if pick(&cmdline) && !xtask::lab::net::exited(pid) {
            out.push((pid, cmdline));
        }
    }
    out
}

/// No namespace named after `pid` and no benchmark process is left.
fn nothing_left(pid: u32) {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{}{pid}-", xtask::lab::net::NETNS_PREFIX);
    assert!(!list.contains(&prefix), "namespaces left:\n{list}");
    let program = |c: &str| {
        let first = c.split_whitespace().next().unwrap_or("");
        first.rsplit('/').next().unwrap_or("").to_string()
    };
    let left = running(|c| {
        let p = program(c);
        p == "tbench"
            || p == "tbench_srv"
            || c.starts_with("iperf3 --server --one-off --json --bind 127.0.0.1")
            || c.starts_with("iperf3 --client 127.0.0.1")
    });
    assert!(left.is_empty(), "still running: {left:?}");
}

/// The host's own loopback offloads, as `ethtool -k lo` shows them.
fn host_lo() -> (String, String) {
    let out = Command::new("ethtool").args(["-k", "lo"]).output().unwrap();
    let k = features::parse_k(&String::from_utf8_lossy(&out.stdout));
    let get = |n: &str| k.get(n).map_or("?".to_string(), |s| s.value.clone());
    (
        get("tcp-segmentation-offload"),
        get("generic-segmentation-offload"),
    )
}

#[test]
fn tbench_baseline_against_lo_without_tso_gso() {
    let _serial = host_lab_turn();
    if !ready() {
        return;
    }
    let (_tmp, layout) = workspace(None);
    let lo_before = host_lo();
    let started = Instant::now();
    let dir = host_lab::run(
        &layout,
        &request(&["baseline", "lo-no-tso-gso"], 2, &[BenchName::Tbench]),
    )
    .unwrap();
    eprintln!("the host lab took {:.0} s", started.elapsed().as_secs_f64());
    nothing_left(std::process::id());
    assert_eq!(host_lo(), lo_before, "the host's own lo changed");

    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    assert_eq!(record.target, "host");
    let h = record.machine.host().expect("the host kernel is recorded");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(h.kernel_release, release.trim());
    assert!(
        h.proc_version.starts_with("Linux version "),
        "{}",
        h.proc_version
    );
    assert!(record.boots.is_empty());
    let arms: Vec<&str> = record.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(arms, ["baseline", "baseline~control", "lo-no-tso-gso"]);
    let lo = record.arms[2].runtime.as_ref().expect("its settings");
    assert_eq!(lo.ethtool[0].dev, "lo");
    assert_eq!(lo.ethtool[0].features["tso"], "off");
    assert_eq!(lo.ethtool[0].features["gso"], "off");

    let tbench = Condition::Bench {
        bench: Benchmark::Tbench { clients: 2 },
    };
    for arm in &arms {
        let mbs = record.samples(arm, tbench, LabMetric::Tbench.name());
        assert_eq!(mbs.len(), 2, "{arm}: {mbs:?}");
        assert!(mbs.iter().all(|&v| v > 1.0), "{arm}: {mbs:?} MB/s");
    }
    // 2 rounds × 3 arms, each a warm-up and one measured run.
    assert_eq!(record.runs.len(), 12);
    let mut namespaces: Vec<&str> = Vec::new();
    for run in &record.runs {
        assert_eq!(run.metrics[0].unit, LabMetric::Tbench.unit());
        let h = run.host.as_ref().expect("what the run read back");
        assert!(h.summary.starts_with("Throughput "), "{}", h.summary);
        assert!(dir.join(&h.log).is_file(), "{}", h.log);
        // The settings, read back inside the namespace after the run.
        let want = if run.variant == "lo-no-tso-gso" {
            "off"
        } else {
            "on"
        };
        for feature in ["tcp-segmentation-offload", "generic-segmentation-offload"] {
            assert_eq!(
                h.features["lo"][feature], want,
                "run {}: {feature}",
                run.index
            );
        }
        if !namespaces.contains(&h.netns.as_str()) {
            namespaces.push(&h.netns);
        }
    }
    assert_eq!(namespaces.len(), 6, "a fresh namespace per arm and round");

    // The size report shows it as a tbench family.
    let report = xtask::report::load(
        &layout,
        &ReportRequest {
            targets: vec!["host".to_string()],
            base: "baseline".to_string(),
            variants: Vec::new(),
            symbols: None,
            by: None,
            devices: None,
            rootfs: None,
            allow_mismatch: false,
            agreement: false,
            lab: LabRuns::Dirs(vec![dir.clone()]),
        },
    )
    .unwrap();
    let text = xtask::report::render(&report, Format::Text, &Style::default()).unwrap();
    eprintln!("{text}");
    assert!(
        text.contains("baseline → lo-no-tso-gso:\ntbench, 2 clients:\nloopback: "),
        "{text}"
    );
    assert!(text.contains(" MB/s → "), "{text}");
    assert!(
        text.contains("measures this machine's kernel, not a router's"),
        "{text}"
    );
    assert!(
        text.contains("lo-no-tso-gso: ethtool -K lo gso off tso off"),
        "{text}"
    );
}

#[test]
fn iperf3_over_the_namespace_loopback() {
    let _serial = host_lab_turn();
    if !ready() {
        return;
    }
    let (_tmp, layout) = workspace(None);
    let mut req = request(&["baseline"], 1, &[BenchName::Iperf3]);
    req.control = false;
    req.duration_seconds = 1;
    let dir = host_lab::run(&layout, &req).unwrap();
    nothing_left(std::process::id());
    let record = LabRecord::read(&dir).unwrap();
    let iperf = Condition::Bench {
        bench: Benchmark::Iperf3,
    };
    let mbit = record.samples("baseline", iperf, LabMetric::Throughput.name());
    assert_eq!(mbit.len(), 1, "{mbit:?}");
    assert!(mbit[0] > 10.0, "{mbit:?} Mbit/s over loopback");
    let run = record.runs.iter().find(|r| !r.warmup).unwrap();
    assert_eq!(run.metrics[0].unit, "Mbit/s");
    assert!(run.iperf3_client.is_some());
}

#[test]
fn a_setting_the_driver_refuses_stops_the_lab() {
    let _serial = host_lab_turn();
    if !ready() {
        return;
    }
    // lo's large-receive-offload is off [fixed].
    let (_tmp, layout) = workspace(Some(
        "[runtime.baseline]\n[runtime.lo-lro]\nethtool = [{ dev = \"lo\", features = { lro = \"on\" } }]\n",
    ));
    let err = host_lab::run(
        &layout,
        &request(&["baseline", "lo-lro"], 1, &[BenchName::Tbench]),
    )
    .unwrap_err();
    let msg = format!("{err:#}");
    eprintln!("the error, as users see it:\n{msg}");
    assert!(msg.contains("runtime variant lo-lro did not take"), "{msg}");
    assert!(msg.contains("large-receive-offload is off"), "{msg}");
    assert!(msg.contains("[fixed]"), "{msg}");
    nothing_left(std::process::id());
    let dir = lab_dirs(&layout).pop().expect("a lab directory");
    let record = LabRecord::read(&dir).unwrap();
    assert!(
        matches!(record.status, Status::Failed { .. }),
        "{}",
        record.status
    );
}

#[test]
fn a_device_outside_the_namespace_is_refused_before_anything_runs() {
    let _serial = host_lab_turn();
    let (_tmp, layout) = workspace(Some(
        "[runtime.baseline]\n[runtime.eth]\nethtool = [{ dev = \"eth0\", features = { tso = \"off\" } }]\n",
    ));
    let err = host_lab::run(
        &layout,
        &request(&["baseline", "eth"], 1, &[BenchName::Tbench]),
    )
    .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("sets eth0") && msg.contains("has only lo"),
        "{msg}"
    );
    assert!(lab_dirs(&layout).is_empty(), "nothing may run");
}

fn lab_dirs(layout: &Layout) -> Vec<PathBuf> {
    let root = layout.work_dir().join("lab").join(host_lab::TARGET);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The workspace the interrupted child runs in (see [`interrupted_child`]).
const CHILD_ROOT: &str = "XTASK_LAB_HOST_CHILD_ROOT";

/// Not a test of its own: the process [`ctrl_c_stops_and_cleans_up`]
/// interrupts, running a long host lab in the workspace it names.
#[test]
#[ignore = "run by ctrl_c_stops_and_cleans_up in a process of its own"]
fn interrupted_child() {
    let Some(root) = std::env::var_os(CHILD_ROOT) else {
        return;
    };
    let layout = Layout::new(Path::new(&root));
    let mut req = request(&["baseline", "lo-no-tso-gso"], 5, &[BenchName::Tbench]);
    req.duration_seconds = 5;
    let err = host_lab::run(&layout, &req).expect_err("the parent interrupts this lab");
    eprintln!("child: {err:#}");
}

#[test]
fn ctrl_c_stops_and_cleans_up() {
    let _serial = host_lab_turn();
    if !ready() {
        return;
    }
    let (_tmp, layout) = workspace(None);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::common::helper_name(module_path!(), "interrupted_child").as_str(),
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ROOT, layout.root())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the lab has finished one run and is in the next…
    let deadline = Instant::now() + Duration::from_secs(60);
    let started_second = || {
        lab_dirs(&layout)
            .last()
            .and_then(|d| LabRecord::read(d).ok())
            .is_some_and(|r| !r.runs.is_empty())
    };
    while !started_second() {
        assert!(Instant::now() < deadline, "the child's lab never ran");
        assert!(child.try_wait().unwrap().is_none(), "the child ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    // …and SIGINT lands while tbench runs (which the check below must see
    // gone).
    let tbench = || running(|c| c.starts_with("tbench -t "));
    while tbench().is_empty() {
        assert!(Instant::now() < deadline, "no tbench ever ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    eprintln!("interrupting during {:?}", tbench());
    let target = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(target, rustix::process::Signal::INT).unwrap();
    let stopped = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if stopped.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the lab did not stop within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!(
        "stopped {:.1} s after SIGINT ({status})",
        stopped.elapsed().as_secs_f64()
    );
    assert!(stopped.elapsed() < Duration::from_secs(10));
    nothing_left(pid);
    let record = LabRecord::read(lab_dirs(&layout).last().unwrap()).unwrap();
    assert!(
        matches!(&record.status, Status::Failed { reason } if reason.contains("interrupted")),
        "{}",
        record.status
    );
}
