//! A plan as text: JSON or YAML for programs (SPEC.md's plan format, with GPU index lists on
//! one line and floating-point noise rounded away), and a table for people, one row per job
//! like `squeue` or `kubectl get`, then one line for the round.

use super::types::{Plan, SolverInfo, Status};
use crate::instance::Instance;
use serde_json::Value;
use std::fmt::Write as _;

/// Decimal places kept of objectives and bounds (noise like `42.78000000000001` goes).
const VALUE_DECIMALS: i32 = 6;
/// Decimal places kept of a relative gap (0.00000001 = one millionth of a percent).
const GAP_DECIMALS: i32 = 8;
/// Decimal places kept of seconds (microseconds).
const SECONDS_DECIMALS: i32 = 6;

fn round_to(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let r = (x * scale).round() / scale;
    // Never print a negative zero.
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// The solver report with its floating-point noise rounded away: objectives and bounds to 6
/// decimals, gaps to 8, seconds to microseconds. A bound never rounds below the objective.
/// (Only the report has floats: the rest of a plan is written as it is, without a copy.)
pub fn rounded_solver(solver: &SolverInfo) -> SolverInfo {
    let mut s = solver.clone();
    s.objective = round_to(s.objective, VALUE_DECIMALS);
    s.bound = s
        .bound
        .map(|b| round_to(b, VALUE_DECIMALS).max(s.objective));
    s.gap = s.gap.map(|g| round_to(g, GAP_DECIMALS).max(0.0));
    s.greedy_objective = s.greedy_objective.map(|g| round_to(g, VALUE_DECIMALS));
    s.seconds = round_to(s.seconds, SECONDS_DECIMALS);
    s
}

/// The plan as pretty JSON (solver report rounded), each list of numbers on one line:
/// `"h2": [0, 1, 2, 3]`.
pub fn to_json(plan: &Plan) -> String {
    let mut value = serde_json::to_value(plan).expect("a plan serialises");
    value["solver"] = serde_json::to_value(rounded_solver(&plan.solver)).expect("serialises");
    let mut out = String::new();
    write_json(&mut out, &value, 0);
    out.push('\n');
    out
}

/// The plan as YAML (solver report rounded), quoted so that YAML 1.1 and 1.2 readers read
/// the same strings ([`crate::yaml_text`]).
pub fn to_yaml(plan: &Plan) -> String {
    let mut value = serde_json::to_value(plan).expect("a plan serialises");
    value["solver"] = serde_json::to_value(rounded_solver(&plan.solver)).expect("serialises");
    crate::yaml_text::to_yaml(&value).expect("a plan serialises")
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn write_json(out: &mut String, v: &Value, indent: usize) {
    let pad = |n: usize| "  ".repeat(n);
    match v {
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) if items.iter().all(is_scalar) => {
            let parts: Vec<String> = items.iter().map(|x| x.to_string()).collect();
            let _ = write!(out, "[{}]", parts.join(", "));
        }
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write_json(out, item, indent + 1);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (k, item)) in map.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                let _ = write!(out, "{}: ", Value::String(k.clone()));
                write_json(out, item, indent + 1);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// GPU indices as ranges: `[0, 1, 2, 3, 6]` is `0-3,6`.
pub fn index_ranges(idx: &[u32]) -> String {
    let mut sorted = idx.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// A node and the GPU indices a job holds there (`h2:0-7`); the node alone for a job that
/// holds only CPU and memory on it.
pub fn node_cell(node: &str, idx: &[u32]) -> String {
    if idx.is_empty() {
        node.to_string()
    } else {
        format!("{node}:{}", index_ranges(idx))
    }
}

/// A job id as a sentence names it: a numeric id (Slurm's) reads as a count, so it is written
/// `job 7`; any other id stands alone.
pub fn job_name(id: &str) -> String {
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        format!("job {id}")
    } else {
        id.to_string()
    }
}

/// `GPU` for one, `GPUs` for any other count.
pub fn gpu_word(n: u32) -> &'static str {
    if n == 1 {
        "GPU"
    } else {
        "GPUs"
    }
}

/// `n GPU` or `n GPUs`.
pub fn gpus_phrase(n: u32) -> String {
    format!("{n} {}", gpu_word(n))
}

/// One row of the table.
struct Row {
    job: String,
    tenant: String,
    gpus: String,
    nodes: String,
    state: &'static str,
    reason: String,
}

/// The plan as a table for a terminal: JOB, TENANT, GPUS, NODES (GPU ranges per node), STATE
/// (`start`, `preempt`, `pending`), REASON; jobs that start first, then the preempted, then
/// the waiting, each in the plan's order; then one line for the round.
pub fn to_table(inst: &Instance, plan: &Plan) -> String {
    let rows = table_rows(inst, plan);
    let header = ["JOB", "TENANT", "GPUS", "NODES", "STATE", "REASON"];
    let cells = |r: &Row| -> [String; 6] {
        [
            r.job.clone(),
            r.tenant.clone(),
            r.gpus.clone(),
            r.nodes.clone(),
            r.state.to_string(),
            r.reason.clone(),
        ]
    };
    let mut width = header.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(cells(r).iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cols: &[String; 6]| {
        let mut s = String::new();
        for (i, c) in cols.iter().enumerate() {
            if i + 1 == cols.len() {
                s.push_str(c);
            } else {
                let _ = write!(s, "{c:<w$}  ", w = width[i]);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&mut out, &header.map(String::from));
    for r in &rows {
        line(&mut out, &cells(r));
    }
    out.push_str(&round_line(plan));
    out.push('\n');
    out
}

/// Widest NODES cell of the table, in characters, before its last nodes are counted instead of
/// listed (a gang over a dozen nodes widened every row of the table past a screen).
const NODES_CELL_WIDTH: usize = 48;

/// A job's nodes (each `node:GPUs`) for the table: `-` for none; past [`NODES_CELL_WIDTH`]
/// characters, the nodes that fit and `+N more`.
fn nodes_cell(nodes: &[String]) -> String {
    if nodes.is_empty() {
        return "-".into();
    }
    let all = nodes.join(" ");
    if all.chars().count() <= NODES_CELL_WIDTH {
        return all;
    }
    let mut shown = String::new();
    for (i, n) in nodes.iter().enumerate() {
        let more = format!(" +{} more", nodes.len() - i);
        let next = shown.chars().count() + usize::from(i > 0) + n.chars().count();
        if i > 0 && next + more.len() > NODES_CELL_WIDTH {
            return shown + &more;
        }
        if i > 0 {
            shown.push(' ');
        }
        shown.push_str(n);
    }
    shown
}

fn table_rows(inst: &Instance, plan: &Plan) -> Vec<Row> {
    let (pending, running) = inst.job_indices();
    let tenant = |t: usize| {
        inst.tenants
            .get(t)
            .map_or("-".to_string(), |x| x.name.clone())
    };
    let pending_gpus = |id: &str| pending.get(id).map_or(0, |&j| inst.pending[j].gpus);
    let pending_tenant = |id: &str| {
        pending
            .get(id)
            .map_or("-".into(), |&j| tenant(inst.pending[j].tenant))
    };
    let mut rows = Vec::new();
    for p in &plan.placements {
        let nodes: Vec<String> = p.gpus.iter().map(|(n, idx)| node_cell(n, idx)).collect();
        let count: usize = p.gpus.values().map(Vec::len).sum();
        rows.push(Row {
            job: p.job.clone(),
            tenant: pending_tenant(&p.job),
            gpus: match p.gpu_milli {
                Some(m) => format!("{count}x{m}m"),
                None => count.to_string(),
            },
            nodes: nodes_cell(&nodes),
            state: "start",
            reason: String::new(),
        });
    }
    for p in &plan.preemptions {
        let k = running.get(p.job.as_str()).copied();
        let (gpus, nodes, t) = match k {
            Some(k) => {
                let r = &inst.running[k];
                let nodes: Vec<String> = r
                    .gpus
                    .iter()
                    .map(|(n, idx)| node_cell(&inst.nodes[*n].name, idx))
                    .collect();
                (
                    r.gpu_count().to_string(),
                    nodes_cell(&nodes),
                    tenant(r.tenant),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        rows.push(Row {
            job: p.job.clone(),
            tenant: t,
            gpus,
            nodes,
            state: "preempt",
            reason: p.reason.clone(),
        });
    }
    for p in &plan.pending {
        rows.push(Row {
            job: p.job.clone(),
            tenant: pending_tenant(&p.job),
            gpus: pending_gpus(&p.job).to_string(),
            nodes: "-".into(),
            state: "pending",
            reason: p.reason.clone(),
        });
    }
    rows
}

/// The round in one line: jobs placed, pending and preempted, GPUs busy before and after, and
/// the solver's status, objective, bound and gap.
pub fn round_line(plan: &Plan) -> String {
    let m = &plan.metrics;
    let s = &rounded_solver(&plan.solver);
    let status = match plan.status {
        Status::Optimal => "optimal",
        Status::Feasible => "feasible",
        Status::Fallback => "fallback",
    };
    let mut line = format!(
        "round: {} placed, {} pending, {} preempted; GPUs busy {} -> {} of {}",
        m.jobs_placed,
        m.jobs_pending,
        m.jobs_preempted,
        m.gpus_busy_before,
        m.gpus_busy_after,
        m.gpus_total
    );
    if m.gpus_down > 0 {
        let _ = write!(line, " ({} down)", m.gpus_down);
    }
    let _ = write!(line, "; {status}, objective {}", trim_number(s.objective));
    if let Some(b) = s.bound {
        let _ = write!(line, ", bound {}", trim_number(b));
    }
    if let Some(g) = s.gap {
        let _ = write!(line, ", gap {}", percent(g));
    }
    let _ = write!(line, " ({} planner, {:.2} s)", s.path, s.seconds);
    line
}

/// A relative gap as a percentage with two decimals; `0.00%` for anything that rounds to
/// zero, never `-0.00%`.
pub fn percent(g: f64) -> String {
    let p = round_to(g * 100.0, 2).max(0.0);
    format!("{p:.2}%")
}

/// A value with at most 2 decimals and no trailing zeros: `42.74`, `43`, `0.5`.
fn trim_number(x: f64) -> String {
    let s = format!("{:.2}", round_to(x, 2));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_node_lists_are_counted_past_the_cell_width() {
        let nodes = |k: usize| -> Vec<String> { (0..k).map(|i| format!("n{i:05}:0-7")).collect() };
        assert_eq!(nodes_cell(&[]), "-");
        assert_eq!(nodes_cell(&nodes(2)), "n00000:0-7 n00001:0-7");
        let long = nodes_cell(&nodes(12));
        assert!(long.chars().count() <= NODES_CELL_WIDTH, "{long}");
        let listed = long.split(' ').filter(|c| c.contains(':')).count();
        assert!(long.ends_with(&format!(" +{} more", 12 - listed)), "{long}");
        assert!(listed >= 1);
    }

    #[test]
    fn ranges_join_runs() {
        assert_eq!(index_ranges(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(index_ranges(&[5]), "5");
        assert_eq!(index_ranges(&[7, 0, 1, 3, 4]), "0-1,3-4,7");
        assert_eq!(index_ranges(&[]), "");
    }

    #[test]
    fn noise_is_rounded_and_gaps_are_never_negative() {
        assert_eq!(round_to(42.78000000000001, VALUE_DECIMALS), 42.78);
        assert_eq!(round_to(-0.0000000001, GAP_DECIMALS).to_string(), "0");
        assert_eq!(percent(-0.0), "0.00%");
        assert_eq!(percent(-1e-12), "0.00%");
        assert_eq!(percent(0.0009358914365935015), "0.09%");
        assert_eq!(trim_number(43.0), "43");
        assert_eq!(trim_number(42.7400000001), "42.74");
    }

    #[test]
    fn numeric_ids_are_named_as_jobs() {
        assert_eq!(job_name("7"), "job 7");
        assert_eq!(job_name("train-7"), "train-7");
    }

    #[test]
    fn gpu_phrases_agree_in_number() {
        assert_eq!(gpus_phrase(1), "1 GPU");
        assert_eq!(gpus_phrase(0), "0 GPUs");
        assert_eq!(gpus_phrase(8), "8 GPUs");
    }

    #[test]
    fn json_keeps_number_lists_on_one_line() {
        let v: Value = serde_json::json!({"a": {"h2": [0, 1, 2]}, "b": [], "c": [{"x": 1}]});
        let mut out = String::new();
        write_json(&mut out, &v, 0);
        assert_eq!(
            out,
            "{\n  \"a\": {\n    \"h2\": [0, 1, 2]\n  },\n  \"b\": [],\n  \"c\": [\n    {\n      \"x\": 1\n    }\n  ]\n}"
        );
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, v);
    }
}
