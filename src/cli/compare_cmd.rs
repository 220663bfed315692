//! `gangplan compare`: several planners (and seeds) on one trace; a markdown table, a CSV,
//! per-run reports and SVG plots.

use super::simulate_cmd::{config, load_trace, planner_name, run_one, TraceArgs};
use super::{exit, Failure};
use clap::Args;
use gangplan::fsutil::write_atomic;
use gangplan::sim::compare::{
    alloc_lines, csv, jct_cdf_lines, line_plot, markdown, published, solve_lines, summarise, Runs,
};
use gangplan::sim::engine::Protocol;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Compare planners on one trace.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Trace and protocol.
    #[command(flatten)]
    pub t: TraceArgs,
    /// Planners, comma separated.
    #[arg(long, default_value = "fifo,best-fit,fgd,random,greedy,ilp")]
    pub planners: String,
    /// Seeds: a list (42,43) or a range (42-51); overrides --seed.
    #[arg(long)]
    pub seeds: Option<String>,
    /// Output folder, not a file (created if missing): summary.md, summary.csv, reports/ and
    /// the SVG plots go into it.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// The FGD artifact's analysis_allo_discrete.csv: adds its published allocation.
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Workload name in the reference (default: the pod list's file stem).
    #[arg(long)]
    pub workload: Option<String>,
}

fn bad(m: String) -> Failure {
    Failure::new(exit::BAD_INPUT, anyhow::anyhow!(m))
}

fn parse_seeds(s: &str) -> Result<Vec<u64>, Failure> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| {
            x.trim()
                .parse::<u64>()
                .map_err(|_| bad(format!("--seeds: {x:?} is not a number")))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a || b - a > 10_000 {
                    return Err(bad(format!("--seeds: range {part} is empty or too long")));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err(bad("--seeds is empty".into()));
    }
    Ok(out)
}

/// Run `compare`.
pub fn run(a: CompareArgs) -> Result<i32, Failure> {
    let names = a
        .planners
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(planner_name)
        .collect::<Result<Vec<_>, _>>()?;
    if names.is_empty() {
        return Err(bad("--planners is empty".into()));
    }
    let seeds = match &a.seeds {
        Some(s) => parse_seeds(s)?,
        None => vec![a.t.seed],
    };
    let base = config(&a.t)?;
    let trace = load_trace(&a.t)?;
    let io = |e: std::io::Error| Failure::new(exit::IO, e.into());
    std::fs::create_dir_all(a.out_dir.join("reports")).map_err(io)?;
    let mut runs: Runs = Vec::new();
    for name in &names {
        let mut reports = Vec::new();
        for &seed in &seeds {
            let cfg = gangplan::sim::SimConfig {
                seed,
                ..base.clone()
            };
            let label = format!("{} seed {seed}", name.as_str());
            let r = run_one(&trace, *name, &cfg, a.t.formulation, &label)?;
            let json = serde_json::to_string_pretty(&r)
                .map_err(|e| Failure::new(exit::INTERNAL, e.into()))?;
            let file = a
                .out_dir
                .join("reports")
                .join(format!("{}-{seed}.json", name.as_str()));
            write_atomic(&file, json.as_bytes()).map_err(|e| Failure::new(exit::IO, e.into()))?;
            eprintln!(
                "{} seed {seed}: allocation {:.2}%, rounds {}, ILP fallbacks {}, wall {:.1} s",
                name.as_str(),
                100.0 * r.metrics.gpu_allocation_ratio,
                r.metrics.rounds,
                r.info.ilp_fallback_rounds,
                r.info.wall_s
            );
            reports.push(r);
        }
        runs.push((name.as_str().to_string(), reports));
    }
    let fill = matches!(base.protocol, Protocol::Fill { .. });
    let load_col = match base.protocol {
        Protocol::Fill { load, .. } => (load * 100.0).round() as u32,
        Protocol::Replay => 0,
    };
    let pubd = match &a.reference {
        Some(p) => {
            let wl = a.workload.clone().unwrap_or_else(|| {
                a.t.jobs
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default()
            });
            published(p, &wl, &seeds, load_col).map_err(Failure::from_lib)?
        }
        None => BTreeMap::new(),
    };
    let rows = summarise(&runs, &pubd);
    let md = format!(
        "Trace `{}`, seeds {}, protocol {}.\n\n{}",
        trace.name,
        seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
        match base.protocol {
            Protocol::Fill { load, batch } => format!("fill (load {load}, batch {batch})"),
            Protocol::Replay => format!("replay (round {} s)", base.round_s),
        },
        markdown(&rows, fill)
    );
    let w = |f: &str, s: &str| {
        write_atomic(&a.out_dir.join(f), s.as_bytes()).map_err(|e| Failure::new(exit::IO, e.into()))
    };
    w("summary.md", &md)?;
    w("summary.csv", &csv(&runs))?;
    let lib = Failure::from_lib;
    if fill {
        line_plot(
            &a.out_dir.join("alloc_vs_load.svg"),
            &format!("GPU allocation vs requested load ({})", trace.name),
            "GPUs requested, % of capacity",
            "GPUs allocated, % of capacity",
            &alloc_lines(&runs),
            false,
        )
        .map_err(lib)?;
    } else {
        line_plot(
            &a.out_dir.join("jct_cdf.svg"),
            &format!("JCT CDF ({})", trace.name),
            "JCT, s",
            "fraction of jobs",
            &jct_cdf_lines(&runs),
            true,
        )
        .map_err(lib)?;
    }
    line_plot(
        &a.out_dir.join("solve_time.svg"),
        &format!("Planner time per round ({})", trace.name),
        "round",
        "seconds",
        &solve_lines(&runs),
        false,
    )
    .map_err(lib)?;
    print!("{md}");
    Ok(exit::OK)
}
