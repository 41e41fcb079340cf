//! Arguments that cannot work are refused by the binary at once, before
//! any build or report work, with a message naming what to change.

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running xtask")
}

/// `-j 0` used to reach `make -j0`, which prints make's help after the
/// source was unpacked and patched; clap refuses it while parsing.
#[test]
fn zero_jobs_is_refused_while_parsing() {
    for args in [
        &["build", "--target", "arm-tiny", "-j", "0"][..],
        &["build", "--target", "arm-tiny", "--jobs=0"][..],
        &["test", "-j", "0"][..],
    ] {
        let out = xtask(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("invalid value '0' for '--jobs <N>'") && stderr.contains("1.."),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("Usage: make"), "{args:?}: {stderr}");
    }
}

/// `size-report -o` into a missing directory used to create it silently
/// (a typo in the path went unnoticed); now it is an error naming the
/// directory, and nothing is created.
#[test]
fn report_output_into_a_missing_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dir");
    let file = missing.join("report.txt");
    let out = xtask(&["size-report", "-o", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("directory {} does not exist", missing.display())),
        "{stderr}"
    );
    assert!(!missing.exists(), "the directory was created");
}

#[test]
fn report_output_onto_a_directory_or_under_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = xtask(&["size-report", "-o", tmp.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is a directory; name the report file"),
        "{stderr}"
    );
    let file = tmp.path().join("plain.txt");
    std::fs::write(&file, "keep me").unwrap();
    let under = file.join("x.md");
    let out = xtask(&["size-report", "-o", under.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("is not a directory"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
}

#[test]
fn a_kernel_series_that_is_a_path_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("target/linux/generic")).unwrap();
    for args in [
        vec![
            "patches",
            "export",
            "--openwrt",
            tmp.path().to_str().unwrap(),
            "--kernel",
            "6.12/../../../x",
            "--dry-run",
        ],
        vec![
            "patches",
            "status",
            "--kver",
            "../../x",
            "--tree",
            tmp.path().to_str().unwrap(),
        ],
        vec!["patches", "rebase", "--from", "6.6", "--to", "6.12/../x"],
    ] {
        let out = xtask(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("is not a kernel series"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!tmp.path().join("x").exists());
}

/// The cache model simulates caches inside QEMU: the host lab and a real
/// router over SSH refuse `--cache-model` before doing anything.
#[test]
fn the_cache_model_is_for_qemu_only() {
    let out = xtask(&["lab", "--lab", "host", "--cache-model"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--cache-model is for the QEMU lab"),
        "{stderr}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("lab-ssh.toml");
    let out = xtask(&[
        "lab",
        "--target",
        "bcm53xx",
        "--lab",
        "ssh://root@192.0.2.1",
        "--lab-file",
        file.to_str().unwrap(),
        "--cache-model",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--cache-model is for the QEMU lab"),
        "{stderr}"
    );
}

/// `--direction` takes the forwarding lab's words and only there; the lab
/// limits --runs and --duration (a huge --runs once panicked on an
/// overflow).
#[test]
fn lab_directions_and_bounds_are_checked_while_parsing() {
    for (args, says) in [
        (
            &["lab", "--target", "brcm47xx", "--direction", "up"][..],
            "use lan-to-wan, wan-to-lan or both",
        ),
        (
            &["lab", "--lab", "host", "--direction", "both"][..],
            "--direction is for the forwarding lab",
        ),
        (
            &["lab", "--target", "brcm47xx", "--runs", "4294967295"][..],
            "use 1 to 1000 (",
        ),
        (
            &["bench", "lab", "--target", "brcm47xx", "--duration", "0"][..],
            "not in 1..=3600",
        ),
        (
            &["lab", "--target", "brcm47xx", "-P", "0"][..],
            "use 1 to 128 (",
        ),
        (
            &["lab", "--target", "brcm47xx", "--set-mss", "87"][..],
            "use 88 to 9216 (",
        ),
        (
            &["lab", "--lab", "host", "--parallel", "8"][..],
            "--parallel is for the forwarding lab",
        ),
        (
            &["lab", "--target", "brcm47xx", "--udp", "0"][..],
            "use 1 to 10000 (",
        ),
        (
            &["lab", "--lab", "host", "--udp", "100"][..],
            "--udp is for the forwarding lab",
        ),
        (
            &["lab", "--target", "brcm47xx", "--routers", "10"][..],
            "use 2 to 9 (",
        ),
        (
            &["lab", "--target", "brcm47xx", "--routers", "3"][..],
            "only the mesh chains routers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "star",
                "--routers",
                "3",
            ][..],
            "unknown topology \"star\"",
        ),
        (
            &["lab", "--lab", "host", "--routers", "3"][..],
            "--routers is for the QEMU lab",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--udp",
                "50",
            ][..],
            "--udp is not for --known-answers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "mesh",
                "--lab",
                "ssh://root@192.0.2.1",
            ][..],
            "--topology is for the QEMU lab",
        ),
    ] {
        let out = xtask(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// `--known-answers` boots the baseline lab kernel in QEMU: another lab,
/// variants, `--build-only` or `--openwrt` (its guest programs check the
/// model on the lab's own baseline kernel, which `--openwrt` would not
/// change) make no sense with it, and `--json` is only
/// its; all refused before anything is built.
#[test]
fn known_answers_take_only_a_qemu_target() {
    for (args, words) in [
        (
            &["lab", "--lab", "host", "--known-answers"][..],
            "--known-answers is for the QEMU lab",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--variant",
                "baseline",
            ][..],
            "--variant is not for --known-answers",
        ),
        (
            &["lab", "--target", "brcm47xx", "--json", "x.json"][..],
            "--json is for --known-answers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--topology",
                "loopback",
            ][..],
            "--topology is not for --known-answers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--runs",
                "3",
            ][..],
            "--runs is not for --known-answers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--duration",
                "2",
            ][..],
            "--duration is not for --known-answers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--kernel-src",
                "/usr/src/linux-source-6.12.tar.xz",
            ][..],
            "--kernel-src is not for --known-answers",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--known-answers",
                "--openwrt",
                "/nonexistent/openwrt",
            ][..],
            "--openwrt /nonexistent/openwrt: no target/linux/generic/ there",
        ),
    ] {
        let out = xtask(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }
}

/// `--nic` picks one of the NICs the target's lab kernel drives ([lab]
/// nic and other_nics), and only for the QEMU lab; a refusal comes before
/// anything is built.
#[test]
fn a_nic_the_lab_kernel_does_not_drive_is_refused() {
    for (args, says) in [
        (
            &["lab", "--target", "brcm47xx", "--nic", "virtio-net-pci"][..],
            "this lab's kernel drives e1000, pcnet",
        ),
        (
            &["lab", "--lab", "host", "--nic", "pcnet"][..],
            "--nic is for the QEMU lab",
        ),
    ] {
        let out = xtask(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("building"), "{args:?}: {stderr}");
    }
}

/// `--topology` names one the lab knows, and the loopback topology's
/// tbench takes no forwarding options (and forwarding no `--clients`);
/// each refusal comes before anything is built.
#[test]
fn a_topology_and_its_options_are_checked_before_building() {
    for (args, says) in [
        (
            &["lab", "--target", "brcm47xx", "--topology", "ring"][..],
            "unknown topology \"ring\"; the lab knows nat-router, loopback, mesh, mesh-bridged",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "loopback",
                "--gro",
                "on",
            ][..],
            "--gro is for forwarding through the router; --topology loopback runs tbench",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "loopback",
                "--nic",
                "pcnet",
            ][..],
            "--nic is for forwarding through the router",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "loopback",
                "-P",
                "8",
            ][..],
            "--parallel is for forwarding through the router",
        ),
        (
            &["lab", "--target", "brcm47xx", "--clients", "4"][..],
            "--clients is for --lab host and --topology loopback",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "loopback",
                "--clients",
                "0",
            ][..],
            "--clients <N>': use 1 to 64 (",
        ),
        (
            &[
                "lab",
                "--target",
                "brcm47xx",
                "--topology",
                "loopback",
                "--cache-model",
            ][..],
            "the loopback topology forwards nothing",
        ),
        (
            &["lab", "--lab", "host", "--topology", "loopback"][..],
            "--topology is for the QEMU lab",
        ),
    ] {
        let out = xtask(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("building"), "{args:?}: {stderr}");
    }
}

/// An experiment's real run did not print the estimate its dry run
/// printed. Both print it now, before anything runs; here the real run
/// then stops at once, as its lab (iperf3 wan → lan) cannot run on this
/// branch, so nothing is built.
#[test]
fn an_experiment_s_real_run_prints_the_estimate_of_its_dry_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("wan-to-lan.toml");
    std::fs::write(
        &file,
        "targets = [\"brcm47xx\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\n\n\
         [lab]\ntopology = \"nat-router\"\nworkload = \"iperf3\"\nfrom = \"wan\"\nto = \"lan\"\n\
         runs = 2\nduration = 2\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let estimate = |out: &Output| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("estimate: "))
            .map(str::to_string)
    };
    let dry = xtask(&["experiment", path, "--dry-run"]);
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success(), "{stderr}");
    let planned = estimate(&dry).expect("the dry run's estimate");
    let real = xtask(&["experiment", path]);
    let stderr = String::from_utf8_lossy(&real.stderr);
    assert!(!real.status.success(), "{stderr}");
    assert!(
        stderr.contains("nothing was built: the lab of brcm47xx cannot run on this branch yet"),
        "{stderr}"
    );
    assert_eq!(estimate(&real), Some(planned));
}

/// `lab --resume DIR` continues only the lab the command would run: a
/// directory without `lab.json`, `--build-only`, and a lab of other
/// settings (here the fixture's three rounds against the command's one,
/// complete or not) are refused before anything builds or boots.
#[test]
fn a_lab_is_resumed_only_where_it_is_the_same_lab() {
    let tmp = tempfile::tempdir().unwrap();
    let out = xtask(&[
        "lab",
        "--target",
        "brcm47xx",
        "--resume",
        tmp.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("no lab.json there"), "{stderr}");
    assert!(
        !stderr.contains("runs:"),
        "planned before refusing: {stderr}"
    );

    let dir = tmp.path().to_str().unwrap();
    let out = xtask(&[
        "lab",
        "--target",
        "brcm47xx",
        "--resume",
        dir,
        "--build-only",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--build-only runs none"), "{stderr}");

    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lab_fixture/lab.json"),
        tmp.path().join("lab.json"),
    )
    .unwrap();
    let before = std::fs::read(tmp.path().join("lab.json")).unwrap();
    let out = xtask(&[
        "lab", "--target", "brcm47xx", "--runs", "1", "--resume", dir,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("cannot be continued"), "{stderr}");
    assert_eq!(std::fs::read(tmp.path().join("lab.json")).unwrap(), before);
}
