//! `gangplan gen`.

use super::{exit, Failure};
use clap::Args;
use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::validate::{limits, validate};
use std::path::PathBuf;

/// Write a synthetic instance.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Nodes.
    #[arg(long, default_value_t = 32, allow_negative_numbers = true)]
    pub nodes: usize,
    /// Pending jobs.
    #[arg(long, default_value_t = 80, allow_negative_numbers = true)]
    pub pending: usize,
    /// Seed (same parameters and seed give the same instance).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Nodes per rack.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true)]
    pub nodes_per_rack: usize,
    /// Racks per pod.
    #[arg(long, default_value_t = 8, allow_negative_numbers = true)]
    pub racks_per_pod: usize,
    /// Fraction of GPUs held by running jobs.
    #[arg(long, default_value_t = 0.65, allow_negative_numbers = true)]
    pub busy: f64,
    /// Fraction of GPUs down.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    pub down: f64,
    /// Tenants (the last one gets a quota of a quarter of the GPUs).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    pub tenants: usize,
    /// Largest pending gang.
    #[arg(long, default_value_t = 64, allow_negative_numbers = true)]
    pub max_gang: u32,
    /// Fraction of pending jobs that share one GPU (gpu_milli).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub sharers: f64,
    /// policy.time_limit written into the instance.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub time_limit: f64,
    /// The kind of cluster state: default (homogeneous racks, node-by-node fill), mixed-types,
    /// whole-nodes, partial-nodes, tight-cpu, skewed-resources, sharers, quotas, constrained,
    /// mixed (all of them but skewed-resources and nvlink-racks), or nvlink-racks (rack-scale
    /// NVLink domains of GB200 trays, running jobs scattered over racks); docs/bench.md
    /// describes each.
    #[arg(long, value_enum, default_value_t = Family::Default)]
    pub family: Family,
    /// Write JSON instead of YAML (both are valid instances; JSON parses about ten times
    /// faster, which counts inside a round's time limit on large clusters). An --out file
    /// ending in `.json` is written as JSON without it.
    #[arg(long)]
    pub json: bool,
    /// Output file, written atomically; `-` or absent: stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Run `gen`.
pub fn run(a: GenArgs) -> Result<i32, Failure> {
    let bad = |m: String| Failure::new(exit::BAD_INPUT, anyhow::anyhow!(m));
    if a.nodes == 0 || a.nodes > 100_000 {
        return Err(bad(format!("--nodes is {}; expected 1..=100000", a.nodes)));
    }
    for (name, v) in [
        ("--busy", a.busy),
        ("--down", a.down),
        ("--sharers", a.sharers),
    ] {
        if !(0.0..=1.0).contains(&v) {
            return Err(bad(format!("{name} is {v}; expected a fraction in 0..=1")));
        }
    }
    super::check_time_limit_flag(a.time_limit)?;
    if a.tenants > limits::MAX_TENANTS || a.pending > limits::MAX_JOBS / 2 {
        return Err(bad(format!(
            "--tenants is {} and --pending {}; expected at most {} tenants and {} pending jobs",
            a.tenants,
            a.pending,
            limits::MAX_TENANTS,
            limits::MAX_JOBS / 2
        )));
    }
    if a.nodes_per_rack == 0 || a.racks_per_pod == 0 || a.tenants == 0 || a.max_gang == 0 {
        return Err(bad(
            "--nodes-per-rack, --racks-per-pod, --tenants and --max-gang must be at least 1".into(),
        ));
    }
    let p = GenParams {
        nodes: a.nodes,
        pending: a.pending,
        seed: a.seed,
        nodes_per_rack: a.nodes_per_rack,
        racks_per_pod: a.racks_per_pod,
        busy: a.busy,
        down: a.down,
        tenants: a.tenants,
        max_gang: a.max_gang,
        sharers: a.sharers,
        time_limit: a.time_limit,
        family: a.family,
    };
    let raw = generate(&p);
    // Never emit an instance that `solve` would refuse.
    validate(&raw, &ModelLibrary::builtin()).map_err(|issues| {
        Failure::from_lib(gangplan::Error::Input {
            source_name: "generated instance".into(),
            issues,
        })
    })?;
    let json_named = a
        .out
        .as_deref()
        .and_then(|p| p.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let text = if a.json || json_named {
        serde_json::to_string(&raw).map_err(|e| Failure::new(exit::INTERNAL, e.into()))? + "\n"
    } else {
        serde_yaml::to_string(&raw).map_err(|e| Failure::new(exit::INTERNAL, e.into()))?
    };
    match a.out.as_deref().filter(|p| p.as_os_str() != "-") {
        Some(path) => gangplan::fsutil::write_atomic(path, text.as_bytes())
            .map_err(|e| Failure::new(exit::IO, e.into()))?,
        None => print!("{text}"),
    }
    Ok(exit::OK)
}
