//! What `bench build` measured, as numbers (`--json`) and as the Markdown
//! table it prints, with each goal ([`OVERHEAD_GOAL_PERCENT`], the same
//! vmlinux as raw make, [`PATCH_ONLY_GOAL_PERCENT`], distcc) marked pass or
//! fail.

use serde::Serialize;

use crate::results::CcacheStats;

/// The version of the `--json` layout.
pub const SCHEMA: u32 = 1;

/// Most overhead of `cargo xtask build` against the same raw `make`, in
/// percent of the raw make's wall time.
pub const OVERHEAD_GOAL_PERCENT: f64 = 2.0;

/// Most wall time of a patch-only variant built after its base, in
/// percent of the base's full build.
pub const PATCH_ONLY_GOAL_PERCENT: f64 = 15.0;

/// Everything one `bench build` run measured. Times are wall-clock
/// seconds, percentages are of the reference named beside them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The target built.
    pub target: String,
    /// The base variant.
    pub base: String,
    /// The patch-only variant of step 3.
    pub patch_variant: String,
    /// The `-j` budget of every build.
    pub jobs: usize,
    /// The kernel version built (`6.12.117`).
    pub kernel_version: String,
    /// When the run started (RFC 3339, UTC).
    pub started: String,
    /// Step 1: the tool against the same raw `make`.
    pub overhead: Overhead,
    /// Step 2: ccache cold, then warm; `None` with `--skip ccache`.
    pub ccache: Option<CcacheSteps>,
    /// Step 3: the patch-only variant after its base.
    pub patch_only: PatchOnly,
    /// Step 4: distcc on 127.0.0.1; `None` with `--skip distcc`.
    pub distcc: Option<DistccStep>,
}

/// Step 1: raw `make` and `cargo xtask build --no-ccache --force` of one
/// job, each from an empty build directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overhead {
    /// Raw `make <base>`, fragments merged, `make alldefconfig`, `make
    /// -jN vmlinux <goals>`: seconds.
    pub raw_seconds: f64,
    /// The tool, plan and build (artifacts, measurements and
    /// `result.json` included): seconds.
    pub tool_seconds: f64,
    /// Of `tool_seconds`, the plan (preflight, sources, build key):
    /// seconds.
    pub tool_plan_seconds: f64,
    /// `(tool - raw) / raw`, in percent.
    pub overhead_percent: f64,
    /// sha256 of the raw build's vmlinux.
    pub raw_vmlinux_sha256: String,
    /// sha256 of the tool's vmlinux.
    pub tool_vmlinux_sha256: String,
}

/// Step 2: the tool with a private, empty ccache, then again from an
/// empty build directory with the cache the first build filled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CcacheSteps {
    /// The cold build: seconds.
    pub cold_seconds: f64,
    /// Its hits and misses.
    pub cold: CcacheStats,
    /// The warm build: seconds.
    pub warm_seconds: f64,
    /// Its hits and misses.
    pub warm: CcacheStats,
}

/// Step 3: the patch-only variant built right after its base's full build.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchOnly {
    /// Which build counts as the base's full build.
    pub full_build: String,
    /// That build: seconds.
    pub full_seconds: f64,
    /// Objects that build compiled (kbuild's `CC`/`AS` lines).
    pub full_objects: u64,
    /// The variant (no ccache): seconds.
    pub variant_seconds: f64,
    /// Objects the variant's build compiled.
    pub variant_objects: u64,
    /// `variant / full`, in percent.
    pub fraction_percent: f64,
    /// What the variant's `result.json` says about reusing the base's
    /// build directory.
    pub reuse: Reuse,
}

/// Whether a build started from a sibling variant's build directory, as
/// its `result.json` records it (`incremental_from`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "from")]
pub enum Reuse {
    /// Built from an empty build directory.
    No,
    /// Copied from this variant's finished build, then made incrementally.
    From(String),
}

/// Step 4: the tool through a `distccd` on 127.0.0.1, no ccache.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistccStep {
    /// `DISTCC_HOSTS` used.
    pub hosts: String,
    /// The build: seconds.
    pub seconds: f64,
    /// Objects distccd's log says it compiled.
    pub objects_compiled: usize,
    /// Compiles its log says failed.
    pub errors: usize,
    /// sha256 of the vmlinux it made.
    pub vmlinux_sha256: String,
}

impl Overhead {
    /// Whether raw make and the tool made the same vmlinux.
    pub fn same_bytes(&self) -> bool {
        self.raw_vmlinux_sha256 == self.tool_vmlinux_sha256
    }
}

impl BenchReport {
    /// Whether distcc made the same vmlinux as the local tool build.
    pub fn distcc_same_bytes(&self, d: &DistccStep) -> bool {
        d.vmlinux_sha256 == self.overhead.tool_vmlinux_sha256
    }

    /// Whether distccd compiled objects, none failed, and the bytes match.
    pub fn distcc_ok(&self, d: &DistccStep) -> bool {
        d.objects_compiled > 0 && d.errors == 0 && self.distcc_same_bytes(d)
    }

    /// Every goal with its verdict: (what, goal, pass).
    pub fn goals(&self) -> Vec<(&'static str, String, bool)> {
        let mut goals = vec![
            (
                "overhead vs raw make",
                format!("≤ {OVERHEAD_GOAL_PERCENT} %"),
                self.overhead.overhead_percent <= OVERHEAD_GOAL_PERCENT,
            ),
            (
                "vmlinux raw = tool",
                "same sha256".into(),
                self.overhead.same_bytes(),
            ),
            (
                "patch-only / full build",
                format!("≤ {PATCH_ONLY_GOAL_PERCENT} %"),
                self.patch_only.fraction_percent <= PATCH_ONLY_GOAL_PERCENT,
            ),
        ];
        if let Some(d) = &self.distcc {
            goals.push((
                "distcc on 127.0.0.1",
                "compiled there, same sha256".into(),
                self.distcc_ok(d),
            ));
        }
        goals
    }

    /// The numbers as `--json` writes them: every field, and `goals`
    /// (`what`, `goal`, `pass`).
    pub fn to_json(&self) -> serde_json::Value {
        with_goals(self, self.goals())
    }

    /// The report as it is printed: a Markdown table of every measurement,
    /// then the goals with pass/fail marks.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Build benchmark: {} {} (patch-only: {}), Linux {}, -j{}, {}\n\n",
            self.target,
            self.base,
            self.patch_variant,
            self.kernel_version,
            self.jobs,
            self.started
        );
        out.push_str("| step | measurement | value | goal | |\n|---|---|---|---|---|\n");
        self.overhead_rows(&mut out);
        self.ccache_rows(&mut out);
        self.patch_only_rows(&mut out);
        self.distcc_rows(&mut out);
        let goals = self.goals();
        let passed = goals.iter().filter(|g| g.2).count();
        out.push_str(&format!("\n{passed} of {} goals met.\n", goals.len()));
        out
    }

    /// Step 1's rows of [`Self::render`]'s table, appended to `out`: raw
    /// make, the tool, the overhead and whether their vmlinux are equal.
    fn overhead_rows(&self, out: &mut String) {
        let o = &self.overhead;
        row(
            out,
            "1a",
            "raw make, fresh O=, no ccache",
            seconds(o.raw_seconds),
            "",
            "",
        );
        row(
            out,
            "1b",
            "xtask build --no-ccache --force, fresh build dir",
            format!(
                "{} (plan {})",
                seconds(o.tool_seconds),
                seconds(o.tool_plan_seconds)
            ),
            "",
            "",
        );
        row(
            out,
            "1",
            "overhead vs raw make",
            signed_percent(o.overhead_percent),
            &format!("≤ {OVERHEAD_GOAL_PERCENT} %"),
            mark(o.overhead_percent <= OVERHEAD_GOAL_PERCENT),
        );
        let sha = if o.same_bytes() {
            format!("equal: `{}`", o.tool_vmlinux_sha256)
        } else {
            format!(
                "raw `{}` ≠ tool `{}`",
                o.raw_vmlinux_sha256, o.tool_vmlinux_sha256
            )
        };
        row(
            out,
            "1",
            "vmlinux sha256",
            sha,
            "equal",
            mark(o.same_bytes()),
        );
    }

    /// Step 2's rows of [`Self::render`]'s table, appended to `out`:
    /// ccache cold, warm and their ratio, or that the step was skipped.
    fn ccache_rows(&self, out: &mut String) {
        match &self.ccache {
            Some(c) => {
                row(
                    out,
                    "2a",
                    "ccache cold (empty private cache)",
                    format!("{} ({})", seconds(c.cold_seconds), stats(c.cold)),
                    "",
                    "",
                );
                row(
                    out,
                    "2b",
                    "ccache warm (fresh build dir)",
                    format!("{} ({})", seconds(c.warm_seconds), stats(c.warm)),
                    "",
                    "",
                );
                row(
                    out,
                    "2",
                    "warm / cold",
                    ratio(c.warm_seconds, c.cold_seconds),
                    "",
                    "",
                );
            }
            None => row(
                out,
                "2",
                "ccache cold vs warm",
                "skipped (--skip ccache)".into(),
                "",
                "",
            ),
        }
    }

    /// Step 3's rows of [`Self::render`]'s table, appended to `out`: the
    /// base's full build, the patch-only variant after it and their
    /// fraction.
    fn patch_only_rows(&self, out: &mut String) {
        let p = &self.patch_only;
        row(
            out,
            "3",
            &format!("full build of {}: {}", self.base, p.full_build),
            format!(
                "{}, objects compiled: {}",
                seconds(p.full_seconds),
                p.full_objects
            ),
            "",
            "",
        );
        row(
            out,
            "3",
            &format!("{} after it, no ccache", self.patch_variant),
            format!(
                "{}, objects compiled: {}, reuse: {}",
                seconds(p.variant_seconds),
                p.variant_objects,
                reuse(&p.reuse)
            ),
            "",
            "",
        );
        row(
            out,
            "3",
            "patch-only / full build",
            format!("{:.1} %", p.fraction_percent),
            &format!("≤ {PATCH_ONLY_GOAL_PERCENT} %"),
            mark(p.fraction_percent <= PATCH_ONLY_GOAL_PERCENT),
        );
    }

    /// Step 4's rows of [`Self::render`]'s table, appended to `out`: the
    /// distcc build and whether its vmlinux equals the tool's, or that the
    /// step was skipped.
    fn distcc_rows(&self, out: &mut String) {
        match &self.distcc {
            Some(d) => {
                let calls = match &self.ccache {
                    Some(c) => format!(
                        " (of the {} compiler calls 2a counted)",
                        c.cold.hits + c.cold.misses
                    ),
                    None => String::new(),
                };
                row(
                    out,
                    "4",
                    &format!("distcc `{}`, no ccache", d.hosts),
                    format!(
                        "{}; distccd compiled {} objects{calls}, {} errors",
                        seconds(d.seconds),
                        d.objects_compiled,
                        d.errors
                    ),
                    "",
                    "",
                );
                let same = if self.distcc_same_bytes(d) {
                    "equal to 1b".to_string()
                } else {
                    format!("`{}` ≠ 1b", d.vmlinux_sha256)
                };
                row(
                    out,
                    "4",
                    "distcc vmlinux sha256",
                    same,
                    "equal, compiled remotely",
                    mark(self.distcc_ok(d)),
                );
            }
            None => row(
                out,
                "4",
                "distcc on 127.0.0.1",
                "skipped (--skip distcc)".into(),
                "",
                "",
            ),
        }
    }
}

/// Appends one row of [`BenchReport::render`]'s table to `out`: the
/// step (`1a`), what was measured, its value, the goal and the verdict
/// (the last two empty for a plain measurement).
fn row(out: &mut String, step: &str, what: &str, value: String, goal: &str, verdict: &str) {
    out.push_str(&format!(
        "| {step} | {what} | {value} | {goal} | {verdict} |\n"
    ));
}

/// A goal's verdict: `✅ pass` or `❌ fail`.
fn mark(ok: bool) -> &'static str {
    if ok {
        "✅ pass"
    } else {
        "❌ fail"
    }
}

/// `12.3 s`.
pub fn seconds(s: f64) -> String {
    format!("{s:.1} s")
}

/// `(tool - raw) / raw` in percent; 0 when `raw` is not positive.
pub fn overhead_percent(raw_seconds: f64, tool_seconds: f64) -> f64 {
    if raw_seconds > 0.0 {
        (tool_seconds - raw_seconds) * 100.0 / raw_seconds
    } else {
        0.0
    }
}

/// `part / whole` in percent; 0 when `whole` is not positive.
pub fn fraction_percent(part_seconds: f64, whole_seconds: f64) -> f64 {
    if whole_seconds > 0.0 {
        part_seconds * 100.0 / whole_seconds
    } else {
        0.0
    }
}

/// `+1.30 %`, `-0.45 %`: the sign always shown, two decimals.
pub fn signed_percent(p: f64) -> String {
    format!("{p:+.2} %")
}

/// `0.15 (6.8× faster)` for `part / whole`.
fn ratio(part: f64, whole: f64) -> String {
    if part > 0.0 && whole > 0.0 {
        format!("{:.2} ({:.1}× faster)", part / whole, whole / part)
    } else {
        "n/a".to_string()
    }
}

/// `496 hits, 1 miss`.
fn stats(s: CcacheStats) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}, {}",
        plural(s.hits, "hit", "hits"),
        plural(s.misses, "miss", "misses")
    )
}

fn reuse(r: &Reuse) -> String {
    match r {
        Reuse::No => "no (built from scratch)".into(),
        Reuse::From(from) => format!("from {from}'s build"),
    }
}

/// `report` as JSON with `goals` (`what`, `goal`, `pass`) added: what a
/// benchmark's `--json` writes (this one's and the lab's).
pub fn with_goals(
    report: &impl Serialize,
    goals: Vec<(&'static str, String, bool)>,
) -> serde_json::Value {
    let mut json = serde_json::to_value(report).expect("the report serialises");
    let goals: Vec<serde_json::Value> = goals
        .into_iter()
        .map(|(what, goal, pass)| serde_json::json!({"what": what, "goal": goal, "pass": pass}))
        .collect();
    json["goals"] = serde_json::Value::Array(goals);
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn report() -> BenchReport {
        BenchReport {
            schema: SCHEMA,
            target: "arm-tiny".into(),
            base: "baseline".into(),
            patch_variant: "deinline-napi-schedule".into(),
            jobs: 2,
            kernel_version: "6.12.117".into(),
            started: "2025-01-01T00:00:00Z".into(),
            overhead: Overhead {
                raw_seconds: 200.0,
                tool_seconds: 203.0,
                tool_plan_seconds: 1.25,
                overhead_percent: overhead_percent(200.0, 203.0),
                raw_vmlinux_sha256: "ab".repeat(4),
                tool_vmlinux_sha256: "ab".repeat(4),
            },
            ccache: Some(CcacheSteps {
                cold_seconds: 468.0,
                cold: CcacheStats {
                    hits: 0,
                    misses: 456,
                },
                warm_seconds: 69.0,
                warm: CcacheStats {
                    hits: 496,
                    misses: 1,
                },
            }),
            patch_only: PatchOnly {
                full_build: "1b".into(),
                full_seconds: 203.0,
                full_objects: 411,
                variant_seconds: 20.3,
                variant_objects: 1,
                fraction_percent: fraction_percent(20.3, 203.0),
                reuse: Reuse::From("baseline".into()),
            },
            distcc: Some(DistccStep {
                hosts: "127.0.0.1:3700/2".into(),
                seconds: 250.0,
                objects_compiled: 440,
                errors: 0,
                vmlinux_sha256: "ab".repeat(4),
            }),
        }
    }

    #[test]
    fn percentages_and_ratios() {
        assert_eq!(overhead_percent(200.0, 203.0), 1.5);
        assert_eq!(overhead_percent(200.0, 190.0), -5.0);
        assert_eq!(overhead_percent(0.0, 1.0), 0.0);
        assert_eq!(fraction_percent(30.0, 200.0), 15.0);
        assert_eq!(fraction_percent(1.0, 0.0), 0.0);
        assert_eq!(signed_percent(1.5), "+1.50 %");
        assert_eq!(signed_percent(-0.004), "-0.00 %");
        assert_eq!(seconds(68.96), "69.0 s");
        assert_eq!(ratio(69.0, 468.0), "0.15 (6.8× faster)");
        assert_eq!(ratio(0.0, 468.0), "n/a");
    }

    #[test]
    fn the_table_marks_each_goal() {
        expect![[r#"
            Build benchmark: arm-tiny baseline (patch-only: deinline-napi-schedule), Linux 6.12.117, -j2, 2025-01-01T00:00:00Z

            | step | measurement | value | goal | |
            |---|---|---|---|---|
            | 1a | raw make, fresh O=, no ccache | 200.0 s |  |  |
            | 1b | xtask build --no-ccache --force, fresh build dir | 203.0 s (plan 1.2 s) |  |  |
            | 1 | overhead vs raw make | +1.50 % | ≤ 2 % | ✅ pass |
            | 1 | vmlinux sha256 | equal: `abababab` | equal | ✅ pass |
            | 2a | ccache cold (empty private cache) | 468.0 s (0 hits, 456 misses) |  |  |
            | 2b | ccache warm (fresh build dir) | 69.0 s (496 hits, 1 miss) |  |  |
            | 2 | warm / cold | 0.15 (6.8× faster) |  |  |
            | 3 | full build of baseline: 1b | 203.0 s, objects compiled: 411 |  |  |
            | 3 | deinline-napi-schedule after it, no ccache | 20.3 s, objects compiled: 1, reuse: from baseline's build |  |  |
            | 3 | patch-only / full build | 10.0 % | ≤ 15 % | ✅ pass |
            | 4 | distcc `127.0.0.1:3700/2`, no ccache | 250.0 s; distccd compiled 440 objects (of the 456 compiler calls 2a counted), 0 errors |  |  |
            | 4 | distcc vmlinux sha256 | equal to 1b | equal, compiled remotely | ✅ pass |

            4 of 4 goals met.
        "#]]
        .assert_eq(&report().render());
    }

    #[test]
    fn misses_fail_their_goals() {
        let mut r = report();
        r.overhead.overhead_percent = 2.01;
        r.overhead.raw_vmlinux_sha256 = "cd".repeat(4);
        r.patch_only.fraction_percent = 99.0;
        r.patch_only.reuse = Reuse::No;
        r.distcc.as_mut().unwrap().objects_compiled = 0;
        let text = r.render();
        assert_eq!(text.matches("❌ fail").count(), 4, "{text}");
        assert!(text.contains("raw `cdcdcdcd` ≠ tool `abababab`"), "{text}");
        assert!(text.contains("reuse: no (built from scratch)"), "{text}");
        assert!(text.ends_with("0 of 4 goals met.\n"), "{text}");
        assert!(r.goals().iter().all(|g| !g.2));
    }

    #[test]
    fn the_json_names_every_number() {
        let json = report().to_json();
        assert_eq!(json["goals"].as_array().unwrap().len(), 4);
        assert_eq!(json["goals"][0]["pass"], true);
        assert_eq!(json["overhead"]["overhead_percent"], 1.5);
        assert_eq!(json["ccache"]["warm"]["hits"], 496);
        assert_eq!(json["patch_only"]["reuse"]["from"], "baseline");
        assert_eq!(json["distcc"]["objects_compiled"], 440);
        let from = serde_json::to_value(Reuse::From("baseline".into())).unwrap();
        assert_eq!(
            from,
            serde_json::json!({"state": "from", "from": "baseline"})
        );
    }
}
