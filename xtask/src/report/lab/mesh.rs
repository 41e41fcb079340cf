//! The batman-adv mesh's per-run table in the original experiment's form
//! (the deinline patch's mail had `run | without patch |
//! with patch | without batman-adv`, one row per iperf run, then the
//! average row): for a lab that ran `--topology mesh`, each throughput
//! series as a table whose columns are the base ("without patch"), each
//! variant ("with patch", or "with `<variant>`" when there are several) and
//! the reference arm, the base's kernel on the routers bridged without
//! batman-adv ("without batman-adv"). The A/A control stays in the
//! verdict lines and the every-run tables. Values are Mbit/s with one
//! decimal, as [`super::table::run_table`] prints them.

use std::fmt::Write as _;

use super::table::run_table;
use super::{LabReport, Series};
use crate::report::model::{mean, Decimal};
use crate::results::lab::{Arm, LabMetric, TopologyName};

/// The mesh table's columns of `lab`, in order: (heading, arm name).
/// `None` when the lab did not run the mesh topology.
pub fn columns(lab: &LabReport) -> Option<Vec<(String, String)>> {
    columns_of(lab.topology.as_ref(), &lab.base, &lab.arms)
}

/// [`columns`] of a lab that ran `topology` with `base` and `arms`.
pub fn columns_of(
    topology: Option<&TopologyName>,
    base: &str,
    arms: &[Arm],
) -> Option<Vec<(String, String)>> {
    if topology != Some(&TopologyName::Mesh) {
        return None;
    }
    let mut cols = vec![("without patch".to_string(), base.to_string())];
    let variants: Vec<&str> = arms
        .iter()
        .filter(|a| !a.control && a.name != base && a.topology.is_none())
        .map(|a| a.name.as_str())
        .collect();
    for v in &variants {
        let heading = if variants.len() == 1 {
            "with patch".to_string()
        } else {
            format!("with {v}")
        };
        cols.push((heading, v.to_string()));
    }
    cols.extend(
        arms.iter()
            .filter(|a| a.topology.is_some())
            .map(|a| ("without batman-adv".to_string(), a.name.clone())),
    );
    Some(cols)
}

/// `s` with its arms renamed and ordered as `cols` says (a column whose
/// arm has no runs is left out).
fn renamed(s: &Series, cols: &[(String, String)]) -> Series {
    Series {
        arms: cols
            .iter()
            .filter_map(|(heading, arm)| {
                s.arms
                    .iter()
                    .find(|(a, _)| a == arm)
                    .map(|(_, v)| (heading.clone(), v.clone()))
            })
            .collect(),
        ..s.clone()
    }
}

/// Which arm each heading is: `without patch = baseline, with patch =
/// batadv-inline-orig-hash-find, without batman-adv =
/// baseline~mesh-bridged`.
fn legend(cols: &[(String, String)]) -> String {
    cols.iter()
        .map(|(h, a)| format!("{h} = {a}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The mesh tables of `lab` as text, one per throughput series, then
/// which arm each column is; empty when the lab did not run the mesh.
pub fn text(lab: &LabReport, d: Decimal) -> String {
    let Some(cols) = columns(lab) else {
        return String::new();
    };
    let mut out = String::new();
    for s in lab.series.iter().filter(|s| s.is(LabMetric::Throughput)) {
        let _ = write!(out, "batman-adv mesh, {}", run_table(&renamed(s, &cols), d));
    }
    if !out.is_empty() {
        let _ = writeln!(out, "({})", legend(&cols));
    }
    out
}

/// The mesh tables of `lab` as Markdown tables; empty when the lab did
/// not run the mesh.
pub fn markdown(lab: &LabReport, d: Decimal) -> String {
    let Some(cols) = columns(lab) else {
        return String::new();
    };
    let cell = |v: Option<f64>| v.map_or("–".to_string(), |v| d.apply(format!("{v:.1}")));
    let mut out = String::new();
    for s in lab.series.iter().filter(|s| s.is(LabMetric::Throughput)) {
        let s = renamed(s, &cols);
        let _ = writeln!(
            out,
            "batman-adv mesh, throughput, {} ({}):\n",
            s.title(),
            s.unit
        );
        let heads: Vec<&str> = s.arms.iter().map(|(h, _)| h.as_str()).collect();
        let _ = writeln!(out, "| run | {} |", heads.join(" | "));
        let _ = writeln!(out, "|---|{}", "---:|".repeat(heads.len()));
        let rows = s.arms.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        for i in 0..rows {
            let cells: Vec<String> = s
                .arms
                .iter()
                .map(|(_, v)| cell(v.get(i).copied()))
                .collect();
            let _ = writeln!(out, "| {} | {} |", i + 1, cells.join(" | "));
        }
        let avg: Vec<String> = s
            .arms
            .iter()
            .map(|(_, v)| format!("**{}**", cell(mean(v))))
            .collect();
        let _ = writeln!(out, "| **avg** | {} |\n", avg.join(" | "));
    }
    if !out.is_empty() {
        let _ = writeln!(out, "Columns: {}.\n", legend(&cols));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::Decimal;
    use crate::results::lab::{Condition, Direction, Gro};

    fn arm(name: &str, control: bool, topology: Option<TopologyName>) -> Arm {
        Arm {
            name: name.to_string(),
            variant: name.split('~').next().unwrap().to_string(),
            control,
            kernel: None,
            runtime: None,
            topology,
        }
    }

    /// The original mail's first three runs and the lab's shape: base,
    /// A/A control, the patch, the reference arm.
    fn mesh_lab() -> (Vec<Arm>, Series) {
        let arms = vec![
            arm("batadv-inline-orig-hash-find", false, None),
            arm("batadv-inline-orig-hash-find~control", true, None),
            arm("batadv", false, None),
            arm(
                "batadv-inline-orig-hash-find~mesh-bridged",
                false,
                Some(TopologyName::MeshBridged),
            ),
        ];
        let series = Series {
            family: LabMetric::Throughput.name().to_string(),
            unit: LabMetric::Throughput.unit().to_string(),
            condition: Condition::Forward {
                direction: Direction::LanToWan,
                gro: Gro::On,
            },
            arms: vec![
                (arms[0].name.clone(), vec![268.0, 270.0, 269.0]),
                (arms[1].name.clone(), vec![271.0, 268.0, 270.0]),
                (arms[2].name.clone(), vec![269.0, 270.0, 268.0]),
                (arms[3].name.clone(), vec![500.0, 499.0, 501.0]),
            ],
        };
        (arms, series)
    }

    #[test]
    fn the_mesh_table_has_the_original_s_columns_and_average_row() {
        let (arms, series) = mesh_lab();
        let cols = columns_of(Some(&TopologyName::Mesh), &arms[0].name, &arms).unwrap();
        assert_eq!(
            legend(&cols),
            "without patch = batadv-inline-orig-hash-find, with patch = batadv, \
             without batman-adv = batadv-inline-orig-hash-find~mesh-bridged"
        );
        assert_eq!(
            columns_of(Some(&TopologyName::NatRouter), &arms[0].name, &arms),
            None
        );
        let table = run_table(&renamed(&series, &cols), Decimal::Point);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[1],
            "run | without patch | with patch | without batman-adv"
        );
        assert_eq!(
            lines[3],
            "1   |         268.0 |      269.0 |              500.0"
        );
        assert_eq!(
            lines.last().unwrap(),
            &"avg |         269.0 |      269.0 |              500.0"
        );
        assert!(!table.contains("control"), "{table}");
    }
}
