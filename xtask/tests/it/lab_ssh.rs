//! The SSH lab end to end, everything but the flash: a "router" network
//! namespace on this machine — the host kernel forwarding and
//! masquerading with nftables — running Debian's OpenSSH server with a
//! generated host key and an authorized key made by `ssh-keygen`, between
//! a LAN and a WAN namespace. `cargo xtask lab --lab ssh --no-flash` then
//! runs its plan through it: 2 rounds of 1 s runs each way with GRO on and
//! off, switched over ssh with ethtool on the router namespace's veths.
//!
//! The router namespace shares this machine's kernel, so the
//! `/proc/version` the lab records is this machine's; the fixture build's
//! vmlinux carries the same banner, so the lab also records it as matching
//! the build.
//!
//! Needs root (namespaces), iproute2, nftables, ethtool, iperf3,
//! openssh-client and openssh-server (`cargo xtask setup --tests`). Under
//! CI a missing tool fails the test; elsewhere the gate (`common/gate.rs`)
//! skips it.
//! Namespaces, sshd and iperf3 are removed afterwards, on failure too.

use crate::common::gate;
use crate::common::report_fixture;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xshell::Shell;
use xtask::kernel_build::BuildOptions;
use xtask::lab::ssh::SshRequest;
use xtask::lab::{self, Flash, GroChoice, LabRequest, Machine};
use xtask::results::lab::{Condition, Direction, Gro, LabMetric, LabRecord, Status};

const LAN_HOST: &str = "192.168.77.2";
const ROUTER_LAN: &str = "192.168.77.1";
const ROUTER_WAN: &str = "198.51.100.1";
const WAN_HOST: &str = "198.51.100.2";
const SSHD: &str = "/usr/sbin/sshd";

/// The tools, with their Debian packages.
const TOOLS: &[(&str, &str)] = &[
    ("ip", "iproute2"),
    ("nft", "nftables"),
    ("ethtool", "ethtool"),
    ("iperf3", "iperf3"),
    ("ssh", "openssh-client"),
    ("scp", "openssh-client"),
    ("ssh-keygen", "openssh-client"),
];

/// Whether the test can run (through the gate: under CI anything
/// missing is a failure, elsewhere a counted skip).
fn can_run() -> bool {
    TOOLS
        .iter()
        .fold(gate::Needs::new(), |n, (tool, package)| {
            n.program(tool, package)
        })
        .file(Path::new(SSHD), "apt-get install openssh-server")
        .root("network namespaces")
        .met()
}

/// Runs `program args`, failing the test with its output.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "`{program} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the test made; removed when dropped, on failure too.
struct Lab {
    netns: Vec<String>,
    sshd: Option<Child>,
    made_privsep_dir: bool,
}

impl Lab {
    /// Stops sshd, then removes the namespaces; returns what still ran in
    /// them before they went (`<netns>: <pid> <comm>`), killed.
    fn clean(&mut self) -> Vec<String> {
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        let mut left = Vec::new();
        for ns in self.netns.drain(..) {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", &ns]).output() {
                let pids = String::from_utf8_lossy(&out.stdout).trim().to_string();
                for pid in pids.split_whitespace() {
                    let comm =
                        std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                    left.push(format!("{ns}: {pid} {}", comm.trim()));
                    if let Some(pid) = pid.parse().ok().and_then(rustix::process::Pid::from_raw) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
            }
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        }
        if self.made_privsep_dir {
            let _ = std::fs::remove_dir("/run/sshd");
            self.made_privsep_dir = false;
        }
        left
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.clean();
    }
}

/// Waits (at most 10 s) until TCP `port` listens in `netns`.
fn wait_listening(netns: &str, port: u16, sshd: &mut Child, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let hex = format!(":{port:04X}");
    loop {
        let table = run("ip", &["netns", "exec", netns, "cat", "/proc/net/tcp"]);
        if table.lines().any(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            c.len() > 3 && c[1].ends_with(&hex) && c[3] == "0A"
        }) {
            return;
        }
        if let Ok(Some(status)) = sshd.try_wait() {
            panic!(
                "sshd exited ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "sshd did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The three namespaces, their veths, forwarding and the masquerade.
fn network(lab: &mut Lab, [lan, router, wan]: [&str; 3]) {
    for ns in [lan, router, wan] {
        run("ip", &["netns", "add", ns]);
        lab.netns.push(ns.to_string());
        run("ip", &["-n", ns, "link", "set", "lo", "up"]);
    }
    run(
        "ip",
        &[
            "-n", lan, "link", "add", "lan0", "type", "veth", "peer", "name", "rlan", "netns",
            router,
        ],
    );
    run(
        "ip",
        &[
            "-n", router, "link", "add", "rwan", "type", "veth", "peer", "name", "wan0", "netns",
            wan,
        ],
    );
    for (ns, dev, addr) in [
        (lan, "lan0", LAN_HOST),
        (router, "rlan", ROUTER_LAN),
        (router, "rwan", ROUTER_WAN),
        (wan, "wan0", WAN_HOST),
    ] {
        run(
            "ip",
            &["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev],
        );
        run("ip", &["-n", ns, "link", "set", dev, "up"]);
    }
    // The LAN reaches the WAN only through the router; the WAN has no
    // route back to the LAN, so only the masquerade makes replies arrive.
    run(
        "ip",
        &["-n", lan, "route", "add", "default", "via", ROUTER_LAN],
    );
    run(
        "ip",
        &[
            "netns",
            "exec",
            router,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ],
    );
    let ruleset = "table ip xtlab {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\toifname \"rwan\" masquerade\n\t}\n}\n";
    let mut nft = Command::new("ip")
        .args(["netns", "exec", router, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("nft");
    use std::io::Write;
    nft.stdin
        .take()
        .unwrap()
        .write_all(ruleset.as_bytes())
        .unwrap();
    assert!(nft.wait().unwrap().success(), "nft -f failed");
}

/// Keys and sshd in `router`, listening on its LAN address and `port`.
fn start_sshd(lab: &mut Lab, router: &str, port: u16, dir: &Path) {
    for key in ["host_key", "client_key"] {
        let path = dir.join(key).display().to_string();
        run(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "xtask-lab-test",
                "-f",
                &path,
            ],
        );
    }
    std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
    // A stand-in for OpenWrt's perf package, first on the sessions' PATH:
    // `perf --version`, and `perf stat … -- cat` runs cat to the end of
    // its input, then prints perf's CSV with fixed counts, two events
    // unsupported as on a core that does not expose them.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let perf = bin.join("perf");
    std::fs::write(
        &perf,
        "#!/bin/sh\ncase \"$1\" in\n--version) echo \"perf version 6.6.0-stand-in\"; exit 0;;\n\
         stat) while [ \"$1\" != -- ]; do shift; done; shift; \"$@\" >/dev/null\n\
         printf '2000000000,,cycles,1000,100.00,,\\n1000000000,,instructions,1000,100.00,0.50,insn per cycle\\n\
         <not supported>,,branch-misses,0,100.00,,\\n<not counted>,,L1-icache-load-misses,0,0.00,,\\n' >&2; exit 0;;\n\
         esac\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&perf, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress {ROUTER_LAN}\nHostKey {}\nAuthorizedKeysFile {}\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n\
             SetEnv PATH={}:/usr/sbin:/usr/bin:/sbin:/bin\n",
            dir.join("host_key").display(),
            dir.join("authorized_keys").display(),
            bin.display()
        ),
    )
    .unwrap();
    if !Path::new("/run/sshd").is_dir() {
        std::fs::create_dir_all("/run/sshd").unwrap();
        lab.made_privsep_dir = true;
    }
    let log = dir.join("sshd.log");
    let config = config.display().to_string();
    let mut sshd = Command::new("ip")
        .args(["netns", "exec", router, SSHD, "-D", "-e", "-f", &config])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("starting sshd");
    wait_listening(router, port, &mut sshd, &log);
    lab.sshd = Some(sshd);
}

fn lab_file(dir: &Path, [lan, wan]: [&str; 2], port: u16) -> PathBuf {
    let file = dir.join("lab-ssh.toml");
    std::fs::write(
        &file,
        format!(
            r#"[ssh]
destination = "ssh://root@{ROUTER_LAN}:{port}"
identity = "client_key"
options = ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null", "IdentitiesOnly=yes", "LogLevel=ERROR"]
from = "lan"

[router]
lan_interface = "rlan"
wan_interface = "rwan"
wan_address = "{ROUTER_WAN}"

[lan]
netns = "{lan}"

[wan]
netns = "{wan}"
address = "{WAN_HOST}"

# Generous: a loaded CI machine can take seconds per ssh handshake.
[timeouts]
connect_seconds = 30
command_seconds = 60
"#
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_namespace_router_over_ssh_without_flashing() {
    // One lab at a time in this process (common::leftovers).
    let _lab = crate::common::leftovers::one_at_a_time();
    if !can_run() {
        return;
    }
    let pid = std::process::id();
    let names = [
        format!("xt-lan-{pid}"),
        format!("xt-router-{pid}"),
        format!("xt-wan-{pid}"),
    ];
    let [lan, router, wan] = [&names[0], &names[1], &names[2]].map(String::as_str);
    let mut test_lab = Lab {
        netns: Vec::new(),
        sshd: None,
        made_privsep_dir: false,
    };
    network(&mut test_lab, [lan, router, wan]);
    let keys = tempfile::tempdir().unwrap();
    let port = 2200 + (pid % 1000) as u16;
    start_sshd(&mut test_lab, router, port, keys.path());
    let file = lab_file(keys.path(), [lan, wan], port);

    // A workspace whose bcm53xx baseline build carries this machine's
    // banner: the kernel the namespace router runs.
    let fixture = report_fixture::Fixture::new();
    fixture.standard("bcm53xx");
    let proc_version = std::fs::read_to_string("/proc/version").unwrap();
    let vmlinux = fixture.results_dir("bcm53xx", "baseline").join("vmlinux");
    let mut bytes = std::fs::read(&vmlinux).unwrap();
    bytes.push(0);
    bytes.extend_from_slice(proc_version.as_bytes());
    std::fs::write(&vmlinux, &bytes).unwrap();
    let results = fixture.results_dir("bcm53xx", "baseline");
    let mut result = xtask::results::BuildResult::read(&results).unwrap();
    result.artifacts.get_mut("vmlinux").unwrap().size = bytes.len() as u64;
    result.write(&results).unwrap();

    let request = LabRequest::qemu("bcm53xx").with(|r| {
        r.variants = vec!["baseline".to_string()];
        r.runs = 2;
        r.duration_seconds = 1;
        r.build = BuildOptions::with_jobs(1);
        r.machine = Machine::Ssh(SshRequest {
            destination: None,
            lab_file: file,
            flash: Flash::NotFlashed,
        });
    });
    let started = Instant::now();
    let sh = Shell::new().unwrap();
    let dir = lab::run(&sh, &fixture.layout(), &request)
        .unwrap_or_else(|e| panic!("the SSH lab failed: {e:#}"))
        .expect("a lab directory");
    eprintln!("the SSH lab took {:.1} s", started.elapsed().as_secs_f64());

    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    let info = record.machine.router().expect("the machine is the router");
    assert_eq!(info.destination, format!("root@{ROUTER_LAN}"));
    assert_eq!((info.port, info.flash), (port, Flash::NotFlashed));
    let text = std::fs::read_to_string(dir.join("lab.json")).unwrap();
    assert!(text.contains("\"not-flashed\""), "{text}");

    // The recorded kernel is this machine's, and the fixture build's.
    let uname_v = run("uname", &["-v"]);
    assert_eq!(record.boots.len(), 4, "2 rounds × (baseline, its A/A twin)");
    for boot in &record.boots {
        let k = boot.kernel.as_ref().expect("a kernel check per boot");
        assert_eq!(k.proc_version, proc_version.trim_end());
        assert!(k.proc_version.ends_with(uname_v.trim()), "{k:?}");
        assert_eq!((k.flash, k.matches_build), (Flash::NotFlashed, Some(true)));
        assert!(dir.join(&boot.console_log).is_file());
    }

    // Samples both ways with GRO on and off, each masqueraded.
    for direction in Direction::BOTH {
        for gro in Gro::BOTH {
            for arm in ["baseline", "baseline~control"] {
                let mbit = record.samples(
                    arm,
                    Condition::Forward { direction, gro },
                    LabMetric::Throughput.name(),
                );
                assert_eq!(mbit.len(), 2, "{arm} {direction:?} GRO {gro:?}: {mbit:?}");
                assert!(mbit.iter().all(|&m| m > 1.0), "{mbit:?} Mbit/s");
            }
        }
    }
    for run in &record.runs {
        let g = run
            .guest
            .as_ref()
            .expect("a forwarding run reads the router");
        assert_eq!(g.server_saw_peer.as_deref(), Some(ROUTER_WAN));
        assert!(g.guest_work.packets > 100, "{:?}", g.guest_work);
        // The router's perf counted each run's traffic: the counts per
        // forwarded packet, and nothing for the events it did not count.
        let value = |m: LabMetric| {
            run.metrics
                .iter()
                .find(|v| v.name == m.name())
                .map(|v| v.value)
        };
        let packets = g.guest_work.packets as f64;
        let cycles = value(LabMetric::RouterCyclesPerPacket).expect("router cycles");
        assert!(
            (cycles - 2e9 / packets).abs() <= 0.1,
            "{cycles} vs {packets}"
        );
        let insns = value(LabMetric::RouterInsnsPerPacket).expect("router insns");
        assert!((insns - 1e9 / packets).abs() <= 0.1, "{insns}");
        assert_eq!(value(LabMetric::RouterBranchMissesPerPacket), None);
        assert_eq!(value(LabMetric::RouterL1iMissesPerPacket), None);
    }
    assert_eq!(info.perf.as_deref(), Some("perf version 6.6.0-stand-in"));
    // GRO was switched over ssh: the last run had it off.
    let features = run("ip", &["netns", "exec", router, "ethtool", "-k", "rlan"]);
    assert!(
        features.contains("generic-receive-offload: off"),
        "{features}"
    );
    let ssh_log = std::fs::read_to_string(dir.join(&record.boots[0].console_log)).unwrap();
    assert!(ssh_log.contains("ethtool -K rlan gro off"), "{ssh_log}");
    // The router's conntrack shows the translation, where it is readable.
    let conntrack = Command::new("ip")
        .args(["netns", "exec", router, "cat", "/proc/net/nf_conntrack"])
        .output()
        .unwrap();
    if conntrack.status.success() {
        let table = String::from_utf8_lossy(&conntrack.stdout);
        let translated = table.lines().any(|l| {
            l.contains(&format!("src={LAN_HOST} dst={WAN_HOST}"))
                && l.contains(&format!("src={WAN_HOST} dst={ROUTER_WAN}"))
        });
        assert!(translated, "no masqueraded connection in:\n{table}");
    } else {
        eprintln!("note: no /proc/net/nf_conntrack; the server saw the router's WAN address");
    }

    // The size report shows the run as a real router's.
    let report = report_fixture::render(
        &fixture,
        &report_fixture::request(&["bcm53xx"], &[]),
        xtask::report::Format::Text,
        xtask::report::Style::default(),
    );
    assert!(
        report.contains(&format!("on router root@{ROUTER_LAN} over SSH")),
        "{report}"
    );

    // sshd's per-connection processes may still be exiting; iperf3 must be gone.
    let left = test_lab.clean();
    assert!(
        !left
            .iter()
            .any(|l| l.contains("iperf3") || l.contains("perf stat")),
        "still running: {left:?}"
    );
    let netns = run("ip", &["netns", "list"]);
    for name in &names {
        assert!(!netns.contains(name.as_str()), "{name} left: {netns}");
    }
    assert!(!netns.contains(&format!("xlab-{pid}-")), "{netns}");
}

/// Flashing needs the variant's build (its banner) and an image named in
/// `[images]`; both are checked before anything runs (no root needed).
#[test]
fn flashing_needs_a_build_and_an_image() {
    let fixture = report_fixture::Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path(), ["xt-nowhere-lan", "xt-nowhere-wan"], 2222);
    std::fs::write(dir.path().join("client_key"), "not a key").unwrap();
    let request = |variants: &[&str]| {
        LabRequest::qemu("bcm53xx").with(|r| {
            r.variants = variants.iter().map(|v| v.to_string()).collect();
            r.runs = 1;
            r.duration_seconds = 1;
            r.gro = Some(GroChoice::On);
            r.build = BuildOptions::with_jobs(1);
            r.machine = Machine::Ssh(SshRequest {
                destination: None,
                lab_file: file.clone(),
                flash: Flash::Sysupgrade,
            });
        })
    };
    let sh = Shell::new().unwrap();
    let err = |variants: &[&str]| {
        let e = lab::run(&sh, &fixture.layout(), &request(variants)).unwrap_err();
        format!("{e:#}")
    };
    let e = err(&["baseline"]);
    assert!(
        e.contains("result.json") && e.contains("cargo xtask build"),
        "{e}"
    );
    fixture.standard("bcm53xx");
    let e = err(&["baseline"]);
    assert!(e.contains("no [images] entry for bcm53xx"), "{e}");
    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap() + "\n[images]\nbcm53xx = \"{variant}.bin\"\n",
    )
    .unwrap();
    let e = err(&["baseline"]);
    assert!(
        e.contains("baseline.bin") && e.contains("does not exist"),
        "{e}"
    );
    std::fs::write(dir.path().join("baseline.bin"), "image").unwrap();
    let e = err(&["baseline"]);
    assert!(e.contains("no `Linux version` banner"), "{e}");
    // --no-flash labels the one kernel the router runs: one variant.
    let mut two = request(&["baseline", "no-reorder-blocks"]);
    if let Machine::Ssh(s) = &mut two.machine {
        s.flash = Flash::NotFlashed;
    }
    let e = format!("{:#}", lab::run(&sh, &fixture.layout(), &two).unwrap_err());
    assert!(e.contains("one --variant"), "{e}");
}
