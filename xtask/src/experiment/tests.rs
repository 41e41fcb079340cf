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
    std::fs::write(dir.join(crate::results::lab::FILE_NAME), "{}").unwrap();
    assert_eq!(
        lab_start(&layout, &mut again, &path, "brcm47xx").unwrap(),
        Start::Resume(dir.clone())
    );
    // Another target gets a directory of its own.
    let other = lab_start(&layout, &mut again, &path, "ath79").unwrap();
    assert!(matches!(other, Start::NewIn(d) if d.starts_with(layout.work_dir().join("lab/ath79"))));
}

/// `{"labs":{"bcm53xx":"/outside"}}` made the experiment
/// read, resume and write `/outside/lab.json`. Every kept directory must
/// be one the experiment would have made.
#[test]
fn a_kept_lab_directory_outside_the_workspace_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let layout = Layout::new(root.path());
    let path = state_file(&layout, "flags");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join(crate::results::lab::FILE_NAME), "{}").unwrap();
    let lab = layout.work_dir().join("lab/bcm53xx");
    std::fs::create_dir_all(&lab).unwrap();
    std::os::unix::fs::symlink(outside.path(), lab.join("20261207T000000Z-1")).unwrap();
    for dir in [
        outside.path().to_path_buf(),
        lab.join(".."),
        lab.join("../../../../x"),
        lab.join("a/b"),
        lab.clone(),
        layout.work_dir().join("lab/ath79/20261207T000000Z-1"),
        lab.join("20261207T000000Z-1"),
        lab.join("run\n1"),
    ] {
        let mut state = State::default();
        state.labs.insert("bcm53xx".into(), dir.clone());
        state.write(&path).unwrap();
        let mut state = State::read(&path).unwrap();
        let err = lab_start(&layout, &mut state, &path, "bcm53xx")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("state.json: labs.bcm53xx") && err.contains("--fresh"),
            "{}: {err}",
            dir.display()
        );
    }
    // What the experiment writes itself is still taken.
    let mut state = State::default();
    let Start::NewIn(dir) = lab_start(&layout, &mut state, &path, "bcm53xx").unwrap() else {
        panic!("a new lab first");
    };
    let mut again = State::read(&path).unwrap();
    assert_eq!(
        lab_start(&layout, &mut again, &path, "bcm53xx").unwrap(),
        Start::NewIn(dir)
    );
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
    assert!(err.starts_with("another experiment is running"), "{err}");
    assert!(
        !err.contains("--no-wait"),
        "experiment has no --no-wait: {err}"
    );
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

/// A lab spec of `topology` on `targets` as a file says it.
fn spec(topology: &str, targets: &[&str], labs: &str) -> file::ExperimentLab {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.toml");
    let workload = if topology == "loopback" {
        "workload = \"tbench\"\nguest = \"router\"\n"
    } else if topology == "mesh" {
        "workload = \"iperf3\"\nfrom = \"lan\"\nto = \"far\"\n"
    } else {
        "workload = \"iperf3\"\n"
    };
    let list = |t: &[&str]| {
        t.iter()
            .map(|t| format!("{t:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    std::fs::write(
        &path,
        format!(
            "targets = [{}]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\n\n[lab]\ntopology = {topology:?}\n{workload}{labs}",
            list(targets)
        ),
    )
    .unwrap();
    file::load(&Layout::from_manifest_dir(), &path)
        .unwrap()
        .lab
        .unwrap()
}

#[test]
fn labs_run_side_by_side_at_one_guest_per_cpu_unless_serial() {
    let two = ["brcm47xx", "ramips/mt7621"];
    let four = ["brcm47xx", "ramips/mt7621", "ath79", "bcm53xx"];
    let at = |topology: &str, targets: &[&str], labs: &str, jobs: usize| {
        plan::labs_at_once(&spec(topology, targets, labs), jobs).unwrap()
    };
    assert_eq!(at("nat-router", &four, "", 2), 2);
    assert_eq!(at("nat-router", &four, "", 8), 4, "one per target at most");
    assert_eq!(at("nat-router", &two, "", 1), 1);
    assert_eq!(at("loopback", &two, "", 2), 2);
    assert_eq!(at("mesh", &two, "", 2), 1, "the mesh boots two guests");
    assert_eq!(at("mesh", &two, "", 4), 2);
    assert_eq!(at("nat-router", &four, "labs = \"serial\"\n", 8), 1);
    assert_eq!(at("nat-router", &four, "labs = \"side-by-side\"\n", 2), 2);
}

#[test]
fn the_last_line_gives_each_phase_and_the_labs_share() {
    let s = |n: u64| std::time::Duration::from_secs(n);
    let phases = super::Phases {
        plan: s(10),
        builds: s(2400),
        labs: s(1320),
        lab_kernels: Some(s(300)),
        report: s(70),
    };
    assert_eq!(
        phases.to_string(),
        "1h 3m 20s (plan 10s, builds 40m, labs 22m of which building lab kernels 5m, report 1m 10s; the labs 35 % of it)"
    );
    let serial = super::Phases {
        lab_kernels: None,
        ..phases
    };
    assert!(!serial.to_string().contains("lab kernels"));
}

/// A report directory that is below target/xtask as written but leads
/// elsewhere through a symbolic link is refused before anything runs.
#[test]
fn a_report_output_led_out_by_a_symlink_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let project = Layout::from_manifest_dir();
    let layout = Layout::new(root.path());
    for dir in ["targets", "patches"] {
        std::os::unix::fs::symlink(project.root().join(dir), root.path().join(dir)).unwrap();
    }
    let file = root.path().join("out.toml");
    std::fs::write(
        &file,
        "targets = [\"brcm47xx\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\n\
         [report]\noutput = \"target/xtask/experiments/out\"\n",
    )
    .unwrap();
    let e = file::load(&layout, &file).unwrap();
    assert_eq!(
        e.report.output,
        layout.work_dir().join("experiments").join("out")
    );
    output_stays_in(&layout, &e).unwrap();
    std::fs::create_dir_all(layout.work_dir()).unwrap();
    output_stays_in(&layout, &e).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), layout.work_dir().join("experiments")).unwrap();
    let err = format!("{:#}", output_stays_in(&layout, &e).unwrap_err());
    assert!(err.contains("through a symbolic link"), "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    // The hostile trial's F12: a link below target/xtask into a result.
    std::fs::remove_file(layout.work_dir().join("experiments")).unwrap();
    let result = layout.results_dir("bcm53xx", "baseline");
    std::fs::create_dir_all(&result).unwrap();
    std::fs::create_dir_all(layout.work_dir().join("experiments")).unwrap();
    std::os::unix::fs::symlink(&result, &e.report.output).unwrap();
    let err = format!("{:#}", output_stays_in(&layout, &e).unwrap_err());
    assert!(
        err.contains("where builds and labs keep their records"),
        "{err}"
    );
}

/// The hostile trial's F13: the experiment's name (its file's) becomes a
/// directory and a line of the plan: escape sequences or `..` are refused.
#[test]
fn an_experiment_file_name_that_is_no_plain_name_is_refused() {
    let layout = Layout::from_manifest_dir();
    let text = "targets = [\"brcm47xx\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\n";
    for name in ["e\u{1b}]0;T\u{7}x.toml", "...toml"] {
        let file = layout.root().join("experiments").join(name);
        let err = format!("{:#}", file::parse(&layout, &file, text).unwrap_err());
        assert!(err.contains("rename the file"), "{name:?}: {err}");
        assert!(!err.contains('\u{1b}'), "{err:?}");
    }
}

/// An experiment's description with escape sequences is shown, not run:
/// before, the plan printed it raw.
#[test]
fn the_plan_s_heading_escapes_the_description() {
    let layout = Layout::from_manifest_dir();
    let file = layout.root().join("experiments/x.toml");
    let text = "description = \"\\u001b[2J\\u001b]0;owned\\u0007 two\\nlines\"\n\
                targets = [\"brcm47xx\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\n";
    let e = file::parse(&layout, &file, text).unwrap();
    assert!(e.description.contains('\u{1b}'));
    let heading = plan::heading(&e);
    assert_eq!(
        heading,
        format!(
            "experiment x ({}): \\u{{1b}}[2J\\u{{1b}}]0;owned\\u{{7}} two\\nlines\n",
            file.display()
        )
    );
}

/// `state.json` that is a FIFO or a symlink to `/dev/zero` is refused at
/// once, naming what it is and the fix; before, the FIFO blocked the run
/// for ever while it held `experiment.lock`, and `/dev/zero` grew it to
/// 12.5 GB (ignoring SIGTERM). The FIFO is tried first, on a thread
/// given 10 s, so that the old reader fails the test instead of eating
/// memory.
#[test]
fn a_state_file_that_is_a_fifo_or_a_device_is_refused_unread() {
    let root = tempfile::tempdir().unwrap();
    let layout = Layout::new(root.path());
    let path = state_file(&layout, "flags");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let fifo = path.clone();
    std::thread::spawn(move || {
        let _ = tx.send(State::read(&fifo).map(drop).map_err(|e| format!("{e:#}")));
    });
    let err = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("reading a FIFO state.json blocked")
        .unwrap_err();
    assert!(err.contains("a FIFO, not a regular file"), "{err}");
    assert!(err.contains("--fresh"), "{err}");
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let err = format!("{:#}", State::read(&path).unwrap_err());
    assert!(
        err.contains("a symlink to /dev/zero, a character device"),
        "{err}"
    );
}
