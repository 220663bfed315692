//! MIP backends behind a small trait, so tests can inject faults (a solver that errors,
//! overruns or returns nonsense). [`Highs`] is the real one.

use crate::error::{Error, Result};
use crate::model::MipModel;
use std::path::PathBuf;

/// Settings handed to a backend.
#[derive(Debug, Clone)]
pub struct BackendSettings {
    /// Seconds the solver may run.
    pub time_limit: f64,
    /// Relative gap at which it may stop.
    pub mip_gap: f64,
    /// Random seed.
    pub seed: u64,
    /// Write the model here (`.mps` or `.lp`) before solving.
    pub write_model: Option<PathBuf>,
}

/// How the backend's solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendStatus {
    /// Solved to within the gap.
    Optimal,
    /// Stopped by a limit with an incumbent.
    LimitWithIncumbent,
}

/// A backend's answer.
#[derive(Debug, Clone)]
pub struct BackendResult {
    /// Column values of the incumbent.
    pub columns: Vec<f64>,
    /// How it ended.
    pub status: BackendStatus,
    /// Proven upper bound of the linear objective (without the model's constant), if any.
    pub dual_bound: Option<f64>,
}

/// A MIP solver.
pub trait MipBackend: Send + Sync {
    /// Solve a model from a start (column values).
    fn solve(
        &self,
        model: MipModel,
        start: &[f64],
        settings: &BackendSettings,
    ) -> Result<BackendResult>;
}

/// HiGHS through good_lp, with the options and readings good_lp does not expose taken from
/// the `highs` crate.
#[derive(Debug, Clone, Copy, Default)]
pub struct Highs;

/// Solve; where HiGHS calls the model unbounded, infeasible or unknown, solve it once more with
/// the primal simplex from a cleared state, in what is left of `time_limit`. Every model of a
/// round is bounded and feasible (no placement is one of its solutions): such a status is the
/// dual simplex's numerics on a round of extreme values (priorities near their limit), which
/// the primal simplex solves.
fn run_with_primal_retry(hm: highs::Model, time_limit: f64) -> Result<highs::SolvedModel> {
    use highs::HighsModelStatus as S;
    let started = std::time::Instant::now();
    let run = |hm: highs::Model| {
        hm.try_solve()
            .map_err(|e| Error::Solver(format!("HiGHS run failed: {e:?}")))
    };
    let solved = run(hm)?;
    if !matches!(solved.status(), S::Unbounded | S::Unknown | S::Infeasible) {
        return Ok(solved);
    }
    let left = time_limit - started.elapsed().as_secs_f64();
    let mut hm: highs::Model = solved.into();
    // SAFETY: hm owns a live Highs instance. Without this the next run starts from the failed
    // run's basis and fails alike.
    unsafe { highs_sys::Highs_clearSolver(hm.as_mut_ptr()) };
    let set = |r: std::result::Result<(), highs::TrySetOptionError>, name: &str| {
        r.map_err(|e| Error::Solver(format!("setting {name}: {e:?}")))
    };
    set(hm.try_set_option("simplex_strategy", 4), "simplex_strategy")?;
    set(
        hm.try_set_option("time_limit", left.max(0.01)),
        "time_limit",
    )?;
    run(hm)
}

impl MipBackend for Highs {
    fn solve(
        &self,
        model: MipModel,
        start: &[f64],
        settings: &BackendSettings,
    ) -> Result<BackendResult> {
        // A model without integer columns is a linear program: its optimum is its own bound.
        let linear = !model
            .problem
            .iter_variables_with_def()
            .any(|(_, def)| def.is_integer());
        let (mut hm, _, _) = model.into_highs()?;
        if std::env::var_os("GANGPLAN_SOLVER_LOG").is_some() {
            opt(hm.try_set_option("output_flag", true), "output_flag")?;
            opt(hm.try_set_option("log_to_console", true), "log_to_console")?;
        }
        fn opt<E: std::fmt::Debug>(r: std::result::Result<(), E>, name: &str) -> Result<()> {
            r.map_err(|e| Error::Solver(format!("setting {name}: {e:?}")))
        }
        opt(
            hm.try_set_option("time_limit", settings.time_limit.max(0.01)),
            "time_limit",
        )?;
        opt(
            hm.try_set_option("mip_rel_gap", settings.mip_gap),
            "mip_rel_gap",
        )?;
        opt(
            hm.try_set_option("random_seed", (settings.seed % i32::MAX as u64) as i32),
            "random_seed",
        )?;
        if linear {
            // The aggregated model's relaxation (the only linear program solved) solves faster
            // without presolve: at 10k GPUs 0.21-0.58 s against 0.23-0.76 s, at 100k GPUs
            // 0.93 s against 2.8 s (one run each, loaded 2-core machine; same optimum).
            opt(hm.try_set_option("presolve", "off"), "presolve")?;
        }
        // Extra HiGHS options for tuning experiments: GANGPLAN_HIGHS_OPTIONS="name=value,...".
        if let Ok(extra) = std::env::var("GANGPLAN_HIGHS_OPTIONS") {
            for kv in extra.split(',').filter(|s| !s.is_empty()) {
                let (k, v) = kv.split_once('=').ok_or_else(|| {
                    Error::Solver(format!(
                        "GANGPLAN_HIGHS_OPTIONS entry {kv:?} is not name=value"
                    ))
                })?;
                let r = if let Ok(i) = v.parse::<i32>() {
                    hm.try_set_option(k, i)
                } else if let Ok(f) = v.parse::<f64>() {
                    hm.try_set_option(k, f)
                } else if let Ok(b) = v.parse::<bool>() {
                    hm.try_set_option(k, b)
                } else {
                    hm.try_set_option(k, v)
                };
                opt(r, k)?;
            }
        }
        if let Some(path) = &settings.write_model {
            let c = std::ffi::CString::new(path.display().to_string())
                .map_err(|_| Error::Solver("model path contains NUL".into()))?;
            // SAFETY: hm owns a live Highs instance; the C string outlives the call.
            let status = unsafe { highs_sys::Highs_writeModel(hm.as_mut_ptr(), c.as_ptr()) };
            if status == highs_sys::STATUS_ERROR {
                return Err(Error::Solver(format!(
                    "HiGHS could not write the model to {}",
                    path.display()
                )));
            }
        }
        if start.len() == hm.num_cols() {
            // A start HiGHS rejects is only a lost hint; the solve goes on without it.
            let _ = hm.try_set_solution(Some(start), None, None, None);
        }
        if hm.num_cols() == 0 {
            // Nothing to decide (no job can go anywhere, nothing to preempt): the empty
            // solution is optimal and its objective is the model's constant.
            return Ok(BackendResult {
                columns: Vec::new(),
                status: BackendStatus::Optimal,
                dual_bound: Some(0.0),
            });
        }
        let solved = run_with_primal_retry(hm, settings.time_limit)?;
        use highs::{HighsModelStatus as S, HighsSolutionStatus};
        let status = match solved.status() {
            S::Optimal => BackendStatus::Optimal,
            S::ReachedTimeLimit
            | S::ReachedSolutionLimit
            | S::ReachedInterrupt
            | S::ReachedIterationLimit
            | S::ReachedMemoryLimit
            | S::ObjectiveBound
            | S::ObjectiveTarget => BackendStatus::LimitWithIncumbent,
            other => return Err(Error::Solver(format!("HiGHS ended with status {other:?}"))),
        };
        if solved.primal_solution_status() != HighsSolutionStatus::Feasible {
            return Err(Error::Solver(
                "HiGHS found no feasible solution in time".into(),
            ));
        }
        let dual_bound = if linear {
            // Simplex's optimum is primal and dual feasible, so it bounds every solution; a
            // solve a limit stopped proves nothing.
            (status == BackendStatus::Optimal).then(|| solved.objective_value())
        } else {
            solved.double_info_value(c"mip_dual_bound").ok()
        }
        .filter(|b| b.is_finite());
        let columns = solved.get_solution().columns().to_vec();
        Ok(BackendResult {
            columns,
            status,
            dual_bound,
        })
    }
}
