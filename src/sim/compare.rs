//! Comparison outputs: a markdown table and a CSV of run metrics (mean over seeds, with the
//! FGD artifact's published number where one exists), and SVG plots (allocation against
//! requested load, JCT CDFs, planner time per round).

use super::metrics::Report;
use crate::error::{Error, Result};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Runs grouped by planner, in the order given.
pub type Runs = Vec<(String, Vec<Report>)>;

/// The FGD artifact's policy name for one of ours, where it has one.
pub fn fgd_policy(planner: &str) -> Option<&'static str> {
    match planner {
        "random" => Some("01-Random"),
        "best-fit" => Some("05-BestFit"),
        "fgd" => Some("06-FGD"),
        _ => None,
    }
}

/// Published allocation (%) per FGD policy: the mean, over the given seeds, of column
/// `column` (requested load in %) of `analysis_allo_discrete.csv` for `workload`.
pub fn published(
    path: &Path,
    workload: &str,
    seeds: &[u64],
    column: u32,
) -> Result<BTreeMap<String, (f64, usize)>> {
    let csv = super::trace::Csv::read(path)?;
    csv.require(&["workload", "sc_policy", "seed"])?;
    let col = column.to_string();
    let mut acc: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for r in csv.rows() {
        if r.str("workload")? != workload {
            continue;
        }
        let seed = r.u64("seed")?;
        if !seeds.contains(&seed) {
            continue;
        }
        let v = r.f64(&col)?;
        let e = acc.entry(r.str("sc_policy")?).or_default();
        e.0 += v;
        e.1 += 1;
    }
    for v in acc.values_mut() {
        v.0 /= v.1.max(1) as f64;
    }
    Ok(acc)
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

fn stdev(v: &[f64]) -> f64 {
    let Some(m) = mean(v.iter().copied()) else {
        return 0.0;
    };
    if v.len() < 2 {
        return 0.0;
    }
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// One summary row per planner: means over its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Planner.
    pub planner: String,
    /// Runs (seeds).
    pub runs: usize,
    /// Allocation, % of capacity (mean, sample std dev).
    pub alloc_pct: (f64, f64),
    /// Published allocation % (FGD artifact), if any: (mean, seeds).
    pub published_pct: Option<(f64, usize)>,
    /// Mean JCT, s.
    pub avg_jct_s: Option<f64>,
    /// p99 JCT, s.
    pub p99_jct_s: Option<f64>,
    /// Makespan, s.
    pub makespan_s: Option<f64>,
    /// Utilization, %.
    pub util_pct: f64,
    /// Fragmentation rate, %.
    pub frag_pct: f64,
    /// Jain index.
    pub jain: f64,
    /// Preemptions (mean).
    pub preemptions: f64,
    /// Rounds (mean).
    pub rounds: f64,
    /// ILP fallback rounds (sum over runs) and rounds (sum).
    pub fallbacks: (u64, u64),
    /// Planner time per round: median of medians, max of max.
    pub solve_p50: f64,
    /// Max planner time of a round.
    pub solve_max: f64,
    /// Mean wall time of one run, s.
    pub wall_s: f64,
    /// Fill: the offline upper bound, % of capacity (mean over the runs).
    pub bound_pct: Option<f64>,
    /// ILP: rounds whose plan differs from the greedy's (sum), and jobs placed otherwise (sum).
    pub changed: (u64, u64),
}

/// Summarise runs; `published` maps FGD policy names to their published mean.
pub fn summarise(runs: &Runs, published: &BTreeMap<String, (f64, usize)>) -> Vec<Row> {
    runs.iter()
        .map(|(name, rs)| {
            let alloc: Vec<f64> = rs
                .iter()
                .map(|r| 100.0 * r.metrics.gpu_allocation_ratio)
                .collect();
            let m = |f: &dyn Fn(&Report) -> Option<f64>| mean(rs.iter().filter_map(f));
            let mut p50: Vec<f64> = rs.iter().map(|r| r.metrics.solve_s_p50).collect();
            p50.sort_by(f64::total_cmp);
            Row {
                planner: name.clone(),
                runs: rs.len(),
                alloc_pct: (mean(alloc.iter().copied()).unwrap_or(0.0), stdev(&alloc)),
                published_pct: fgd_policy(name).and_then(|p| published.get(p).copied()),
                avg_jct_s: m(&|r| r.metrics.avg_jct_s),
                p99_jct_s: m(&|r| r.metrics.p99_jct_s),
                makespan_s: m(&|r| r.metrics.makespan_s),
                util_pct: 100.0 * m(&|r| Some(r.metrics.utilization)).unwrap_or(0.0),
                frag_pct: 100.0 * m(&|r| Some(r.metrics.fragmentation_rate)).unwrap_or(0.0),
                jain: m(&|r| Some(r.metrics.jain_fairness)).unwrap_or(0.0),
                preemptions: m(&|r| Some(r.metrics.preemptions as f64)).unwrap_or(0.0),
                rounds: m(&|r| Some(r.metrics.rounds as f64)).unwrap_or(0.0),
                fallbacks: (
                    rs.iter().map(|r| r.info.ilp_fallback_rounds).sum(),
                    rs.iter().map(|r| r.metrics.rounds).sum(),
                ),
                solve_p50: p50.get(p50.len() / 2).copied().unwrap_or(0.0),
                solve_max: rs.iter().map(|r| r.metrics.solve_s_max).fold(0.0, f64::max),
                wall_s: m(&|r| Some(r.info.wall_s)).unwrap_or(0.0),
                bound_pct: m(&|r| r.metrics.offline_upper_bound).map(|b| 100.0 * b),
                changed: (
                    rs.iter().map(|r| r.info.ilp_changed_rounds).sum(),
                    rs.iter().map(|r| r.info.ilp_changed_jobs).sum(),
                ),
            }
        })
        .collect()
}

/// The summary as a markdown table.
pub fn markdown(rows: &[Row], fill: bool) -> String {
    let mut s = String::new();
    if fill {
        s.push_str("| planner | runs | allocated % (mean ± sd) | published % (FGD artifact) | offline_upper_bound % | distance to bound, points | frag. rate % | rounds | ILP fallback rounds | ILP rounds changed vs greedy (jobs) | planner s/round p50 | max | wall s/run |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for r in rows {
            let ilp = r.planner == "ilp";
            s.push_str(&format!(
                "| {} | {} | {:.2} ± {:.2} | {} | {} | {} | {:.1} | {:.0} | {} | {} | {:.4} | {:.3} | {:.1} |\n",
                r.planner,
                r.runs,
                r.alloc_pct.0,
                r.alloc_pct.1,
                r.published_pct
                    .map_or("-".into(), |(v, n)| format!("{v:.2} ({n} seeds)")),
                fmt_opt(r.bound_pct, 2),
                fmt_opt(r.bound_pct.map(|b| b - r.alloc_pct.0), 2),
                r.frag_pct,
                r.rounds,
                if ilp {
                    format!("{}/{}", r.fallbacks.0, r.fallbacks.1)
                } else {
                    "-".into()
                },
                if ilp {
                    format!("{}/{} ({})", r.changed.0, r.fallbacks.1, r.changed.1)
                } else {
                    "-".into()
                },
                r.solve_p50,
                r.solve_max,
                r.wall_s
            ));
        }
    } else {
        s.push_str("| planner | runs | avg JCT s | p99 JCT s | makespan s | allocated % | utilization % | frag. rate % | Jain | preemptions | rounds | ILP fallback rounds | planner s/round p50 | max |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for r in rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.3} | {:.1} | {:.0} | {} | {:.4} | {:.3} |\n",
                r.planner,
                r.runs,
                fmt_opt(r.avg_jct_s, 0),
                fmt_opt(r.p99_jct_s, 0),
                fmt_opt(r.makespan_s, 0),
                r.alloc_pct.0,
                r.util_pct,
                r.frag_pct,
                r.jain,
                r.preemptions,
                r.rounds,
                if r.planner == "ilp" { format!("{}/{}", r.fallbacks.0, r.fallbacks.1) } else { "-".into() },
                r.solve_p50,
                r.solve_max
            ));
        }
    }
    s
}

/// One CSV row per run.
pub fn csv(runs: &Runs) -> String {
    let mut s = String::from("planner,trace,seed,gpu_allocation_ratio,avg_jct_s,p50_jct_s,p99_jct_s,makespan_s,utilization,fragmentation_rate,jain_fairness,preemptions,rounds,solve_s_p50,solve_s_max,ilp_fallback_rounds,wall_s,offline_upper_bound,ilp_changed_rounds,ilp_changed_jobs\n");
    let o = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    for (_, rs) in runs {
        for r in rs {
            let m = &r.metrics;
            s.push_str(&format!(
                "{},{},{},{:.6},{},{},{},{},{:.6},{:.6},{:.6},{},{},{:.6},{:.6},{},{:.3},{},{},{}\n",
                r.planner,
                r.trace.replace(',', ";"),
                r.seed,
                m.gpu_allocation_ratio,
                o(m.avg_jct_s),
                o(m.p50_jct_s),
                o(m.p99_jct_s),
                o(m.makespan_s),
                m.utilization,
                m.fragmentation_rate,
                m.jain_fairness,
                m.preemptions,
                m.rounds,
                m.solve_s_p50,
                m.solve_s_max,
                r.info.ilp_fallback_rounds,
                r.info.wall_s,
                m.offline_upper_bound
                    .map_or(String::new(), |b| format!("{b:.6}")),
                r.info.ilp_changed_rounds,
                r.info.ilp_changed_jobs
            ));
        }
    }
    s
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Solver(format!("plot: {e}"))
}

/// Draw labelled lines into an SVG file.
pub fn line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
) -> Result<()> {
    let pts = lines.iter().flat_map(|l| l.1.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let tx = |x: f64| if log_x { x.max(1e-6).log10() } else { x };
    let (ax0, ax1) = (tx(x0.max(if log_x { 1e-6 } else { f64::MIN })), tx(x1));
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(ax0..ax1.max(ax0 + 1e-9), y0..y1)
        .map_err(plot_err)?;
    let xl = if log_x {
        format!("log10 {x_label}")
    } else {
        x_label.to_string()
    };
    chart
        .configure_mesh()
        .x_desc(xl)
        .y_desc(y_label)
        .draw()
        .map_err(plot_err)?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y)| (tx(x), y)),
                c.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Allocation (%) against requested load (%), averaged over each planner's runs.
pub fn alloc_lines(runs: &Runs) -> Vec<(String, Vec<(f64, f64)>)> {
    runs.iter()
        .map(|(name, rs)| {
            let mut acc: BTreeMap<u32, (f64, usize)> = BTreeMap::new();
            for r in rs {
                for &(k, v) in &r.series.alloc_curve {
                    let e = acc.entry(k).or_default();
                    e.0 += v;
                    e.1 += 1;
                }
            }
            let pts = acc
                .into_iter()
                .filter(|(_, (_, n))| *n == rs.len())
                .map(|(k, (s, n))| (k as f64, s / n as f64))
                .collect();
            (name.clone(), pts)
        })
        .collect()
}

/// Empirical JCT CDF per planner (all runs pooled).
pub fn jct_cdf_lines(runs: &Runs) -> Vec<(String, Vec<(f64, f64)>)> {
    runs.iter()
        .map(|(name, rs)| {
            let mut v: Vec<f64> = rs
                .iter()
                .flat_map(|r| r.series.jct_s.iter().copied())
                .collect();
            v.sort_by(f64::total_cmp);
            let n = v.len().max(1) as f64;
            let step = (v.len() / 400).max(1);
            let pts = v
                .iter()
                .enumerate()
                .filter(|(i, _)| i % step == 0 || *i + 1 == v.len())
                .map(|(i, &x)| (x.max(1.0), (i + 1) as f64 / n))
                .collect();
            (name.clone(), pts)
        })
        .collect()
}

/// Planner time per round, first run of each planner.
pub fn solve_lines(runs: &Runs) -> Vec<(String, Vec<(f64, f64)>)> {
    runs.iter()
        .map(|(name, rs)| {
            let pts = rs
                .first()
                .map(|r| {
                    r.series
                        .solve_s
                        .iter()
                        .enumerate()
                        .map(|(i, &s)| (i as f64, s))
                        .collect()
                })
                .unwrap_or_default();
            (name.clone(), pts)
        })
        .collect()
}
