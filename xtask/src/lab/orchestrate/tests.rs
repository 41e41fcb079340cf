//! The one flow over a fake backend and a fake workload: what it prints,
//! the order it calls the backend in, what `lab.json` says while it runs
//! and after, and what it refuses before touching anything.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::*;
use crate::lab::backend::{EndpointUp, Endpoints, Prepared};
use crate::lab::topology::{nat_router, Name};
use crate::lab::workload::Place;
use crate::results::lab::{
    Condition, Direction, Gro, LabMetric, MachineInfo, MetricValue, Settings,
};

type Calls = Rc<RefCell<Vec<String>>>;

/// A machine that records what the flow asks of it.
struct Fake {
    calls: Calls,
    arms: Vec<String>,
}

fn host_machine() -> MachineInfo {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/lab_fixture/host-lab.json"
    ))
    .unwrap();
    serde_json::from_str::<LabRecord>(&text).unwrap().machine
}

impl Backend for Fake {
    fn start_clean(&mut self) -> Result<()> {
        self.calls.borrow_mut().push("start clean".into());
        Ok(())
    }

    fn prepare(&mut self) -> Result<Prepared> {
        self.calls.borrow_mut().push("prepare".into());
        Ok(Prepared {
            lab_target: "fake-lab".into(),
            machine: host_machine(),
            arms: self
                .arms
                .iter()
                .map(|v| Arm {
                    name: v.clone(),
                    variant: v.clone(),
                    control: false,
                    kernel: None,
                    runtime: None,
                    topology: None,
                })
                .collect(),
            cache_model: None,
        })
    }

    fn bring_up(&mut self, arm: &Arm, round: u32, tag: &str, dir: &Path) -> Result<Up> {
        // While it runs, lab.json says so, with this process's pid.
        let record = LabRecord::read(dir)?;
        let pid = std::process::id();
        assert_eq!(record.status, Status::Running { pid: Some(pid) });
        assert_eq!(record.status.lab_alive(), Some(true));
        self.calls
            .borrow_mut()
            .push(format!("up {} r{round} {tag}", arm.name));
        let bed = FakeBed {
            endpoints: Endpoints {
                list: ["lan", "wan"]
                    .map(|name| EndpointUp {
                        name: name.into(),
                        netns: format!("fake-{name}"),
                        address: None,
                    })
                    .to_vec(),
                masquerade: None,
            },
        };
        Ok(Up {
            bed: Box::new(bed),
            boot: Some(BootRecord {
                qdisc: None,
                arm: arm.name.clone(),
                round,
                boot_seconds: 1.0,
                guest_uptime_at_ready: None,
                console_log: format!("console-{tag}.log"),
                qemu_argv: Vec::new(),
                kernel: None,
                wall_steps: Vec::new(),
            }),
        })
    }
}

struct FakeBed {
    endpoints: Endpoints,
}

impl Testbed for FakeBed {
    fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }
}

/// A workload that needs `place` and measures 1 Mbit/s.
struct Fixed {
    place: Place,
}

impl Workload for Fixed {
    fn describe(&self) -> String {
        "a fixed 1 Mbit/s".into()
    }

    fn places(&self) -> Vec<Place> {
        vec![self.place.clone()]
    }

    fn run(&self, bed: &mut dyn Testbed, run: RunSpec<'_>, _: &Path) -> Result<RunRecord> {
        bed.endpoints().get("lan")?;
        Ok(run.record(
            String::new(),
            vec![MetricValue::new(LabMetric::Throughput, 1.0)],
        ))
    }
}

fn plan(place: Place) -> LabPlan {
    let on = |direction| Condition::Forward {
        direction,
        gro: Gro::On,
    };
    LabPlan {
        target: "fake".into(),
        machine: "a fake machine".into(),
        topology: Some(nat_router::topology()),
        places: (Vec::new(), Vec::new()),
        workload: Box::new(Fixed { place }),
        reference: None,
        variants: vec!["baseline".into(), "other".into()],
        control: Control::Twin,
        schedule: runner::Plan {
            runs: 2,
            duration_seconds: 3,
            warmup: on(Direction::LanToWan),
            conditions: vec![on(Direction::LanToWan), on(Direction::WanToLan)],
        },
        settings: Settings {
            runs: 2,
            duration_seconds: 3,
            gro: vec![Gro::On],
            directions: Direction::BOTH.to_vec(),
            warmup_runs_per_boot: 1,
            base: "baseline".into(),
            control: true,
            benches: Vec::new(),
            iperf3: Default::default(),
            labs_at_once: None,
            options: Default::default(),
        },
    }
}

fn fake(calls: &Calls) -> Fake {
    Fake {
        calls: calls.clone(),
        arms: vec!["baseline".into(), "other".into()],
    }
}

/// A workspace in a temporary directory, and what its fake backends were
/// asked.
struct Scratch {
    root: tempfile::TempDir,
    layout: Layout,
    calls: Calls,
}

impl Scratch {
    fn new() -> Scratch {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path());
        Scratch {
            root,
            layout,
            calls: Calls::default(),
        }
    }

    /// A lab directory of the fake target, named `name`.
    fn dir(&self, name: &str) -> PathBuf {
        self.root.path().join("target/xtask/lab/fake").join(name)
    }

    /// `p` run from `start` on a fake machine that records into `calls`.
    fn run(&self, p: &LabPlan, start: Start) -> Result<Option<PathBuf>> {
        run_from(&self.layout, p, &mut fake(&self.calls), Mode::Run, start)
    }

    fn resume(&self, p: &LabPlan, dir: &Path) -> Result<Option<PathBuf>> {
        self.run(p, Start::Resume(dir.to_path_buf()))
    }

    fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    /// The lab of `p` run to the end in `dir`, then cut back to what a
    /// runner killed after its first `runs` runs had written.
    fn killed_after(&self, p: &LabPlan, dir: &Path, runs: usize) {
        self.run(p, Start::NewIn(dir.to_path_buf())).unwrap();
        self.calls.borrow_mut().clear();
        let mut record = LabRecord::read(dir).unwrap();
        record.runs.truncate(runs);
        record.boots.truncate(2);
        record.finished = None;
        record.status = Status::Running {
            pid: Some(dead_pid()),
        };
        record.write(dir).unwrap();
    }
}

/// Each of `lines` is a whole line of `p`'s description.
fn assert_describes(p: &LabPlan, lines: &[&str]) {
    let text = p.describe();
    for line in lines {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}

#[test]
fn the_plan_is_printed_then_prepared_recorded_and_run() {
    let p = plan(Place::Endpoint("lan".into()));
    assert_describes(
        &p,
        &[
            "  machine:  a fake machine\n",
            "  topology: nat-router (one router between a LAN and a WAN, masquerading out of its WAN)\n",
            "    lan: endpoint lan 192.168.1.2/24 — router.lan 192.168.1.1/24\n",
            "  workload: a fixed 1 Mbit/s\n",
            "  arms:     baseline, baseline~control (A/A control), other\n",
            "  session:  warm-up lan-to-wan GRO on (discarded), then lan-to-wan GRO on, wan-to-lan GRO on\n",
            "  runs:     2 rounds × 3 arms × 3 runs of 3 s = 18 runs, 54s of traffic\n",
        ],
    );
    let s = Scratch::new();
    let dir = run(&s.layout, &p, &mut fake(&s.calls), Mode::Run)
        .unwrap()
        .expect("a lab directory");
    assert!(dir.starts_with(s.root.path().join("target/xtask/lab/fake")));
    let calls = s.calls();
    assert_eq!(
        calls[..3],
        ["start clean", "prepare", "up baseline r0 r0-baseline"]
    );
    assert_eq!(calls[4], "up other r0 r0-other");
    assert_eq!(calls.len(), 2 + 6);
    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    assert_eq!(record.topology, Some(Name::NatRouter));
    assert_eq!(record.lab_target, "fake-lab");
    assert!(matches!(record.machine, MachineInfo::Host { .. }));
    let arms: Vec<&str> = record.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(arms, ["baseline", "baseline~control", "other"]);
    assert_eq!(record.boots.len(), 6);
    assert_eq!(record.runs.len(), 18);
}

#[test]
fn prepare_only_records_and_runs_nothing() {
    let s = Scratch::new();
    let p = plan(Place::Endpoint("wan".into()));
    let out = run(&s.layout, &p, &mut fake(&s.calls), Mode::PrepareOnly).unwrap();
    assert_eq!(out, None);
    assert_eq!(s.calls(), ["start clean", "prepare"]);
    assert!(!s.root.path().join("target/xtask/lab").exists());
}

#[test]
fn a_workload_the_topology_cannot_host_is_refused_before_anything_runs() {
    let s = Scratch::new();
    let p = plan(Place::Guest("r2".into()));
    let err = s.run(&p, Start::New).unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("needs guest r2, which topology nat-router does not have"),
        "{msg}"
    );
    assert!(msg.contains("guests: router"), "{msg}");
    assert!(s.calls().is_empty(), "{:?}", s.calls());
}

#[test]
fn arms_the_backend_did_not_plan_are_an_error() {
    let s = Scratch::new();
    let mut backend = fake(&s.calls);
    backend.arms.pop();
    let p = plan(Place::Endpoint("lan".into()));
    let err = run(&s.layout, &p, &mut backend, Mode::Run).unwrap_err();
    assert!(err.to_string().contains("prepared arms"), "{err}");
    assert!(!s.root.path().join("target/xtask/lab").exists());
}

/// The mesh's plan: its routers, batman-adv and bridges printed, the
/// reference arm (the base's kernel on the routers bridged without
/// batman-adv) last, booted on its own topology and recorded as such.
#[test]
fn the_mesh_runs_a_reference_arm_without_batman_adv() {
    use crate::lab::topology::mesh::{self, Mesh};
    let mut p = plan(Place::Endpoint("far".into()));
    p.topology = Some(mesh::topology(mesh::ROUTERS, Mesh::Batman));
    p.reference = Some(mesh::topology(mesh::ROUTERS, Mesh::Bridged));
    assert_describes(
        &p,
        &[
            "  topology: mesh (2 routers in a chain, batman-adv over their mesh links (32 bytes above the LAN's MTU: 1532 for 1500), bat0 bridged with the LAN port in br-lan, no NAT)\n",
            "    mesh1 (MTU 1532): r1.mesh1 — r2.mesh1\n",
            "    far: endpoint far 192.168.1.200/24 — r2.lan\n",
            "    r1: bat0 = batman-adv over mesh1 (MTU 1532); br-lan = lan + bat0 192.168.1.1/24\n",
            "  reference: mesh-bridged (2 routers in a chain without batman-adv: each bridges its LAN and mesh ports in br-lan, no NAT), booting the base's kernel\n",
            "  arms:     baseline, baseline~control (A/A control), other, baseline~mesh-bridged (reference)\n",
            "  runs:     2 rounds × 4 arms × 3 runs of 3 s = 24 runs, 1m 12s of traffic\n",
        ],
    );
    let s = Scratch::new();
    let dir = s.run(&p, Start::New).unwrap().expect("a lab directory");
    assert!(s
        .calls()
        .contains(&"up baseline~mesh-bridged r1 r1-baseline-mesh-bridged".to_string()));
    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.topology, Some(Name::Mesh));
    let reference = record.arms.last().unwrap();
    assert_eq!(reference.name, "baseline~mesh-bridged");
    assert_eq!(reference.variant, "baseline");
    assert_eq!(reference.topology, Some(Name::MeshBridged));
    assert!(!reference.control);
    assert_eq!(record.runs.len(), 24);
}

/// A pid that no longer runs: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    pid
}

#[test]
fn a_killed_lab_is_taken_over_and_continues_with_the_next_run() {
    let s = Scratch::new();
    let dir = s.dir("killed");
    let p = plan(Place::Endpoint("lan".into()));
    // Killed in baseline~control's first session, after its warm-up and
    // its first measured run.
    s.killed_after(&p, &dir, 5);
    let out = s.resume(&p, &dir).unwrap();
    assert_eq!(out.as_deref(), Some(dir.as_path()));
    let calls = s.calls();
    // baseline's first session is not booted again; baseline~control's
    // boots afresh for the one run it lacks.
    assert_eq!(
        calls[..4],
        [
            "start clean",
            "prepare",
            "up baseline~control r0 r0-baseline-control",
            "up other r0 r0-other"
        ]
    );
    assert_eq!(calls.len(), 2 + 5, "{calls:?}");
    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    let measured: Vec<&RunRecord> = record.runs.iter().filter(|r| !r.warmup).collect();
    assert_eq!(measured.len(), 12, "every measured run once");
    // The resumed session: a warm-up of its own, then only the missing run.
    let resumed: Vec<(bool, String)> = record.runs[5..7]
        .iter()
        .map(|r| (r.warmup, r.condition.describe()))
        .collect();
    assert_eq!(
        resumed,
        [
            (true, "lan-to-wan GRO on".to_string()),
            (false, "wan-to-lan GRO on".to_string())
        ]
    );
    let mut index: Vec<u32> = record.runs.iter().map(|r| r.index).collect();
    index.dedup();
    assert_eq!(index, (0..record.runs.len() as u32).collect::<Vec<_>>());
}

#[test]
fn a_complete_lab_is_kept_and_a_live_one_refused() {
    let s = Scratch::new();
    let dir = s.dir("done");
    let p = plan(Place::Endpoint("lan".into()));
    s.killed_after(&p, &dir, 18);
    let mut record = LabRecord::read(&dir).unwrap();
    record.status = Status::Complete;
    record.write(&dir).unwrap();
    s.resume(&p, &dir).unwrap();
    // Prepared, to see that its machine is the record's; nothing booted.
    assert_eq!(s.calls(), ["start clean", "prepare"]);
    s.calls.borrow_mut().clear();

    record.status = Status::running_here();
    record.write(&dir).unwrap();
    let err = s.resume(&p, &dir).unwrap_err();
    let pid = std::process::id();
    assert!(
        err.to_string().contains(&format!("pid {pid} still runs")),
        "{err}"
    );
    assert!(s.calls().is_empty());
}

#[test]
fn a_lab_of_other_arms_is_not_taken_over() {
    let s = Scratch::new();
    let dir = s.dir("other");
    let p = plan(Place::Endpoint("lan".into()));
    s.killed_after(&p, &dir, 5);
    let mut changed = plan(Place::Endpoint("lan".into()));
    changed.settings.runs = 3;
    let err = s.resume(&changed, &dir).unwrap_err();
    assert!(err.to_string().contains("cannot be continued"), "{err}");
    assert!(s.calls().is_empty());
}

#[test]
fn a_lab_resumed_alone_keeps_that_it_ran_side_by_side() {
    let s = Scratch::new();
    let dir = s.dir("side-by-side");
    let mut p = plan(Place::Endpoint("lan".into()));
    p.settings.labs_at_once = Some(2);
    s.killed_after(&p, &dir, 5);
    // Resumed by an experiment whose other lab is complete: alone now.
    let alone = plan(Place::Endpoint("lan".into()));
    s.resume(&alone, &dir).unwrap();
    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    assert_eq!(
        record.settings.labs_at_once,
        Some(2),
        "its first runs were measured beside another lab"
    );
}

#[test]
fn a_lab_measured_on_another_machine_is_not_continued() {
    let s = Scratch::new();
    let dir = s.dir("elsewhere");
    let p = plan(Place::Endpoint("lan".into()));
    // Every run measured: a record that says `complete` must be.
    s.killed_after(&p, &dir, 18);
    let mut record = LabRecord::read(&dir).unwrap();
    // As if measured with other lab kernels (another --openwrt, --cpus).
    record.lab_target = "other-lab".into();
    record.write(&dir).unwrap();
    for status in [
        Status::Failed {
            reason: "killed".into(),
        },
        Status::Complete,
    ] {
        let mut r = LabRecord::read(&dir).unwrap();
        r.status = status;
        r.write(&dir).unwrap();
        let written = std::fs::read(dir.join(crate::results::lab::FILE_NAME)).unwrap();
        s.calls.borrow_mut().clear();
        let err = s.resume(&p, &dir).unwrap_err();
        assert!(
            err.to_string()
                .contains("measured with another lab kernels"),
            "{err}"
        );
        assert_eq!(s.calls(), ["start clean", "prepare"]);
        assert_eq!(
            std::fs::read(dir.join(crate::results::lab::FILE_NAME)).unwrap(),
            written,
            "a refused resume leaves lab.json as it was"
        );
    }
}

#[test]
fn a_lab_another_process_resumes_is_refused_before_it_is_read() {
    let s = Scratch::new();
    let dir = s.dir("twice");
    let p = plan(Place::Endpoint("lan".into()));
    s.killed_after(&p, &dir, 5);
    let written = std::fs::read(dir.join(crate::results::lab::FILE_NAME)).unwrap();
    // The other resumption, as it holds the lock.
    let held = crate::util::lock::Lock::acquire(
        &s.layout.lab_run_lock(&dir),
        "the other resumption",
        crate::util::lock::Wait::No,
    )
    .unwrap();
    let err = s.resume(&p, &dir).unwrap_err();
    let pid = std::process::id();
    assert!(
        format!("{err:#}").contains(&format!("pid {pid}")),
        "{err:#}"
    );
    assert!(s.calls().is_empty(), "{:?}", s.calls());
    assert_eq!(
        std::fs::read(dir.join(crate::results::lab::FILE_NAME)).unwrap(),
        written
    );
    drop(held);
    // Once it ends, this one continues the lab.
    s.resume(&p, &dir).unwrap();
}

/// A taken-over lab.json gets the checks a report makes
/// of it; one they refuse (a measured run twice: n would count it twice)
/// is not continued, and nothing is booted.
#[test]
fn a_lab_json_the_report_would_refuse_is_not_taken_over() {
    let s = Scratch::new();
    let dir = s.dir("edited");
    let p = plan(Place::Endpoint("lan".into()));
    s.killed_after(&p, &dir, 5);
    let mut record = LabRecord::read(&dir).unwrap();
    let measured = record.runs.iter().find(|r| !r.warmup).unwrap().clone();
    record.runs.push(measured);
    record.write(&dir).unwrap();
    let err = format!("{:#}", s.resume(&p, &dir).unwrap_err());
    assert!(err.contains("so no table from it would be right"), "{err}");
    assert!(s.calls().is_empty(), "{:?}", s.calls());
}
