//! Experiment files as cases (`tests/experiment_files/*.toml`): each
//! begins with `# expect: ok`, or with `# expect-line: N` and `# expect:
//! TEXT` — the file is refused with an error that names the file and
//! line N (`FILE:N:`) and contains TEXT. The files are checked against
//! the workspace's real targets, variants and the lab's topology
//! registry. Then the project's own `experiments/*.toml` must load.

use std::path::{Path, PathBuf};

use xtask::experiment::file;
use xtask::lab::topology;
use xtask::util::layout::Layout;

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/experiment_files");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "cases in {}", dir.display());
    files
}

fn header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
}

#[test]
fn every_case_is_accepted_or_refused_naming_file_and_line() {
    let layout = Layout::from_manifest_dir();
    let mut problems = Vec::new();
    for case in cases() {
        let text = std::fs::read_to_string(&case).unwrap();
        let expect = header(&text, "expect").expect("a `# expect:` line");
        let outcome = file::load(&layout, &case);
        match (expect, outcome) {
            ("ok", Ok(e)) => assert_eq!(e.file, case),
            ("ok", Err(err)) => problems.push(format!("{}: refused: {err:#}", case.display())),
            (_, Ok(_)) => problems.push(format!("{}: accepted", case.display())),
            (want, Err(err)) => {
                let msg = format!("{err:#}");
                let line = header(&text, "expect-line").expect("a `# expect-line:` line");
                let at = format!("{}:{line}:", case.display());
                if !msg.contains(&at) || !msg.contains(want) {
                    problems.push(format!(
                        "{}: wanted {at:?} and {want:?} in\n  {msg}",
                        case.display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_accepted_file_reads_into_the_experiment() {
    let layout = Layout::from_manifest_dir();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/experiment_files");
    let e = file::load(&layout, &dir.join("ok-lab.toml")).unwrap();
    assert_eq!(e.name, "ok-lab");
    assert_eq!(e.targets, ["brcm47xx", "ramips-mt7621"]);
    assert_eq!(e.variants, ["baseline", "no-reorder-blocks"]);
    assert_eq!(e.mode, file::ExperimentMode::Profiles);
    let lab = e.lab.unwrap();
    assert_eq!(lab.targets, ["brcm47xx"]);
    let r = &lab.request;
    assert_eq!((r.runs, r.duration_seconds), (3, 2));
    assert_eq!(r.gro_settings().len(), 1);
    assert!(!r.control);
    assert!(r.cache_model);
    // Aliases and OpenWrt's names resolve; the base comes first.
    let e = file::load(&layout, &dir.join("ok-sizes-only.toml")).unwrap();
    assert_eq!(e.targets, ["bcm53xx", "ath79"]);
    assert_eq!(e.variants, ["baseline", "no-reorder-blocks"]);
    assert_eq!(e.report.formats.len(), 2);
    assert!(e.report.symbols);
}

/// The project's experiments load; one whose topology the lab does not
/// register is refused for exactly that, naming the file and line.
#[test]
fn the_project_s_experiment_files_load() {
    let layout = Layout::from_manifest_dir();
    let dir = layout.root().join("experiments");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let topology_name = text
            .lines()
            .find_map(|l| l.strip_prefix("topology = "))
            .map(|t| t.trim_matches('"').to_string());
        match (file::load(&layout, &path), topology_name) {
            (Ok(_), _) => {}
            (Err(err), Some(t)) if !topology::Name::named(&t).is_known() => {
                let msg = format!("{err:#}");
                assert!(
                    msg.contains(&format!("unknown topology {t:?}"))
                        && msg.contains(&format!("{}:", path.display())),
                    "{msg}"
                );
            }
            (Err(err), _) => panic!("{}: {err:#}", path.display()),
        }
    }
    assert_eq!(seen, 3, "the three experiments in {}", dir.display());
}

/// The batman-adv experiment runs on the mesh with the original report's
/// iperf3 options: 8 streams, MSS 536 (`iperf -P8 -M 536`).
#[test]
fn the_mesh_experiment_asks_iperf3_for_8_streams_of_mss_536() {
    let layout = Layout::from_manifest_dir();
    let path = layout.root().join("experiments/batman-adv-deinline.toml");
    let lab = file::load(&layout, &path).unwrap().lab.unwrap();
    let r = &lab.request;
    assert_eq!(r.topology, topology::Name::Mesh);
    assert_eq!(r.describe_workload(), "iperf3 -P8 -M 536 lan → far");
    assert!(matches!(r.workload, file::WorkloadSpec::Iperf3 { .. }));
    assert_eq!((r.iperf.parallel, r.iperf.mss), (8, Some(536)));
}

/// What is not a small regular file of UTF-8 text is refused before it is
/// read: a FIFO (once waited on forever), a device (`/dev/zero` was read
/// until memory ran out), a file over 1 MiB, bytes that are not UTF-8.
#[test]
fn a_fifo_a_device_a_huge_or_non_utf8_file_is_refused_unread() {
    let layout = Layout::from_manifest_dir();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from(0o600)).unwrap();
    let huge = dir.path().join("huge.toml");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(file::MAX_FILE_BYTES + 1).unwrap();
    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(&latin1, b"targets = [\"brcm47xx\"]\n# caf\xe9\n").unwrap();
    for (path, says) in [
        (fifo.as_path(), "it is a FIFO, not a regular file"),
        (
            Path::new("/dev/zero"),
            "a character device, not a regular file",
        ),
        (huge.as_path(), "1 MiB"),
        (latin1.as_path(), "not UTF-8 text (byte 28 is not)"),
    ] {
        let err = format!("{:#}", file::load(&layout, path).unwrap_err());
        assert!(err.contains(says), "{}: {err}", path.display());
        assert!(
            err.contains("give a regular file of UTF-8 TOML text"),
            "{err}"
        );
    }
}

/// `[report] output` below target/xtask is kept, relative to the
/// workspace root (a `./` dropped).
#[test]
fn a_report_output_below_target_xtask_is_kept() {
    let layout = Layout::from_manifest_dir();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/experiment_files");
    let e = file::load(&layout, &dir.join("report-output-below-target-xtask.toml")).unwrap();
    assert_eq!(
        e.report.output,
        layout.root().join("target/xtask/experiments/elsewhere")
    );
}

/// `[report] devices` in OpenWrt mode reaches the report request as
/// `size-report --devices` would get it; an empty pattern, or a target
/// without an `openwrt_device` (whose build makes no device images), is
/// refused naming its line.
#[test]
fn report_devices_in_openwrt_mode() {
    let Some(fx) = crate::common::openwrt_fixture::Fixture::unpack() else {
        return;
    };
    let layout = Layout::from_manifest_dir();
    let write = |name: &str, target: &str, devices: &str| {
        let path = fx.dir().join(name);
        let text = format!(
            "targets = [{target:?}]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\nopenwrt = {:?}\n\n[report]\ndevices = {devices:?}\n",
            fx.root.display().to_string()
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let e = file::load(&layout, &write("fit.toml", "ramips/mt7621", "ubnt_*")).unwrap();
    assert_eq!(e.report.devices.as_deref(), Some("ubnt_*"));
    for (file, target, devices, words) in [
        (
            "empty.toml",
            "ramips/mt7621",
            " ",
            "report.devices is empty",
        ),
        (
            "tiny.toml",
            "arm-tiny",
            "*",
            "target arm-tiny has no openwrt_device",
        ),
    ] {
        let path = write(file, target, devices);
        let err = format!("{:#}", file::load(&layout, &path).unwrap_err());
        assert!(
            err.contains(&format!("{}:6:", path.display())) && err.contains(words),
            "{err}"
        );
    }
}

/// `[report] rootfs`: a relative path is taken from the experiment file's
/// directory and the rootfs is read with the file, so that a missing or
/// unreadable one (or one without `devices`) is refused naming its line
/// before anything builds.
#[test]
fn report_rootfs_in_openwrt_mode() {
    if !crate::common::gate::Needs::new()
        .program("mksquashfs", "squashfs-tools")
        .program("unsquashfs", "squashfs-tools")
        .met()
    {
        return;
    }
    let Some(fx) = crate::common::openwrt_fixture::Fixture::unpack() else {
        return;
    };
    let layout = Layout::from_manifest_dir();
    let empty = fx.dir().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let root = fx.dir().join("root.squashfs");
    let sh = xshell::Shell::new().unwrap();
    xshell::cmd!(
        sh,
        "mksquashfs {empty} {root} -nopad -noappend -quiet -no-progress"
    )
    .quiet()
    .ignore_stdout()
    .run()
    .unwrap();
    std::fs::write(fx.dir().join("junk.bin"), b"not a rootfs").unwrap();
    let write = |name: &str, report: &str| {
        let path = fx.dir().join(name);
        let text = format!(
            "targets = [\"ramips/mt7621\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\nopenwrt = {:?}\n\n[report]\n{report}",
            fx.root.display().to_string()
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let ok = write("ok.toml", "devices = \"*\"\nrootfs = \"root.squashfs\"\n");
    let e = file::load(&layout, &ok).unwrap();
    let summary = e.report.rootfs.unwrap();
    assert_eq!(summary.source, root.display().to_string());
    assert_eq!(summary.bytes, std::fs::metadata(&root).unwrap().len());
    for (name, report, line, words) in [
        (
            "missing.toml",
            "devices = \"*\"\nrootfs = \"nowhere.squashfs\"\n",
            7,
            "report.rootfs = \"nowhere.squashfs\"",
        ),
        (
            "junk.toml",
            "devices = \"*\"\nrootfs = \"junk.bin\"\n",
            7,
            "report.rootfs: --rootfs",
        ),
        (
            "alone.toml",
            "rootfs = \"root.squashfs\"\n",
            6,
            "set report.devices too",
        ),
    ] {
        let path = write(name, report);
        let err = format!("{:#}", file::load(&layout, &path).unwrap_err());
        assert!(
            err.contains(&format!("{}:{line}:", path.display())) && err.contains(words),
            "{err}"
        );
    }
}

/// The `[lab]` reference in docs/experiments.md names every key the
/// table accepts: the keys are the ones the refusal of an unknown one
/// lists (`it takes …`), so a key added to the table and not to the page
/// fails here; and each whole-number key's line gives the range and
/// default of its one definition (`lab::request::option::OPTIONS`).
#[test]
fn the_lab_reference_in_the_book_names_every_key_the_table_takes() {
    let layout = Layout::from_manifest_dir();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.toml");
    std::fs::write(
        &file,
        "targets = [\"brcm47xx\"]\nbase = \"baseline\"\nvariants = [\"no-reorder-blocks\"]\n[lab]\nno_such_key = 1\n",
    )
    .unwrap();
    let err = format!("{:#}", file::load(&layout, &file).unwrap_err());
    let listed = err
        .split_once("it takes ")
        .unwrap_or_else(|| panic!("the list of keys in: {err}"))
        .1;
    let keys: Vec<&str> = listed
        .split('`')
        .skip(1)
        .step_by(2)
        .take_while(|k| !k.contains('\n'))
        .collect();
    assert!(keys.len() >= 19, "{keys:?} from {err}");
    let page = std::fs::read_to_string(layout.root().join("docs/experiments.md")).unwrap();
    let block = page
        .split_once("\n[lab]")
        .and_then(|(_, rest)| rest.split_once("\n[report]"))
        .expect("the [lab] table of the example in docs/experiments.md")
        .0;
    let documented: Vec<&str> = block
        .lines()
        .filter_map(|l| {
            let l = l.trim_start_matches(['#', ' ']);
            l.split_once(" = ").map(|(k, _)| k.trim())
        })
        .collect();
    let missing: Vec<&&str> = keys.iter().filter(|k| !documented.contains(k)).collect();
    assert!(
        missing.is_empty(),
        "docs/experiments.md's [lab] lacks {missing:?}"
    );
    for o in xtask::lab::OPTIONS.iter().filter(|o| o.count.is_some()) {
        let (Some(key), Some(c)) = (o.key, o.count) else {
            continue;
        };
        let line = block
            .lines()
            .find(|l| {
                l.trim_start_matches(['#', ' '])
                    .starts_with(&format!("{key} = "))
            })
            .unwrap_or_else(|| panic!("no line of {key}"));
        let range = format!("{}–{}", c.min, c.max);
        assert!(line.contains(&range), "{key}: {range} in {line:?}");
        if let Some(d) = c.default {
            assert!(
                line.contains(&format!("default {d}")),
                "{key}: default {d} in {line:?}"
            );
        }
    }
}

/// A `[lab]` that names its topology and no workload runs the topology's
/// own, as `lab --topology` does: tbench in loopback's guest, iperf3 lan →
/// far through the mesh; places given in the file still win.
#[test]
fn a_lab_without_a_workload_runs_its_topology_s_own() {
    let layout = Layout::from_manifest_dir();
    let dir = tempfile::tempdir().unwrap();
    let load = |lab: &str| {
        let file = dir.path().join("t.toml");
        std::fs::write(
            &file,
            format!(
                "targets = [\"brcm47xx\"]\nbase = \"baseline\"\nvariants = [\"no-reorder-blocks\"]\n[lab]\n{lab}"
            ),
        )
        .unwrap();
        file::load(&layout, &file).map(|e| e.lab.unwrap().request.workload)
    };
    assert_eq!(
        load("topology = \"loopback\"\n").unwrap(),
        file::WorkloadSpec::Tbench {
            guest: "router".into()
        }
    );
    assert_eq!(
        load("topology = \"mesh\"\nmtu = 1400\n").unwrap(),
        file::WorkloadSpec::Iperf3 {
            from: "lan".into(),
            to: "far".into()
        }
    );
    assert_eq!(
        load("topology = \"mesh\"\nto = \"lan\"\nfrom = \"far\"\n").unwrap(),
        file::WorkloadSpec::Iperf3 {
            from: "far".into(),
            to: "lan".into()
        }
    );
    // On loopback the MTU is refused as an option of forwarding, at its line.
    let err = format!(
        "{:#}",
        load("topology = \"loopback\"\nmtu = 1400\n").unwrap_err()
    );
    assert!(err.contains("t.toml:6: mtu is for forwarding"), "{err}");
}
