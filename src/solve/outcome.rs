//! What a solve returns: a [`SolverPlan`] when a solver's plan beats the greedy one, else a
//! typed [`Fallback`] saying why the greedy plan is returned; both become one
//! [`SolveOutcome`], with objective, bound and gap of the returned assignment.

use crate::assignment::Assignment;
use crate::plan::Status;
use crate::units::TOLERANCE;
use std::fmt;
use std::time::Duration;

/// The result of a solve.
#[derive(Debug, Clone)]
pub struct SolveOutcome {
    /// The decision.
    pub assignment: Assignment,
    /// optimal / feasible / fallback.
    pub status: Status,
    /// The planner's name (`ilp`, `greedy`, or a baseline's).
    pub path: &'static str,
    /// Objective of the returned assignment.
    pub objective: f64,
    /// Proven upper bound, if any.
    pub bound: Option<f64>,
    /// Whether the time limit cut the solve.
    pub time_limit_hit: bool,
    /// Objective of the greedy plan.
    pub greedy_objective: f64,
    /// Why the plan is the greedy one, when it is.
    pub note: Option<String>,
    /// The aggregated model's own objective at its incumbent, where the plan came from it
    /// (what the model's choice promised before it was placed node by node).
    pub incumbent: Option<f64>,
}

/// The relative gap of `objective` against the upper bound `bound`.
pub fn relative_gap(bound: f64, objective: f64) -> f64 {
    (bound - objective) / objective.abs().max(1.0)
}

impl SolveOutcome {
    /// The outcome of a heuristic planner's plan (or the greedy plan of an ILP round that
    /// fell back): nothing proven, so its status is `fallback`.
    pub fn heuristic(path: &'static str, assignment: Assignment, objective: f64) -> Self {
        SolveOutcome {
            assignment,
            status: Status::Fallback,
            path,
            objective,
            bound: None,
            time_limit_hit: false,
            greedy_objective: objective,
            note: None,
            incumbent: None,
        }
    }

    /// The gap of the returned plan against the bound, where one exists.
    pub fn gap(&self) -> Option<f64> {
        self.bound.map(|b| relative_gap(b, self.objective))
    }

    /// The plan's solver report, with the wall seconds of the command so far.
    pub fn solver_info(&self, seconds: f64) -> crate::plan::SolverInfo {
        crate::plan::SolverInfo {
            path: self.path.to_string(),
            seconds,
            objective: self.objective,
            bound: self.bound,
            gap: self.gap(),
            time_limit_hit: self.time_limit_hit,
            greedy_objective: Some(self.greedy_objective),
            note: self.note.clone(),
        }
    }
}

/// How far (relative) a solver's bound may sit below its plan's objective and still count as
/// that objective: floating-point noise, not a failed proof. HiGHS holds its rows and duals to
/// 1e-7 (its primal and dual feasibility tolerances), so a bound can sit that far below an
/// objective it proves (seen at 1e-8 on odd rounds).
const BOUND_NOISE: f64 = 1e-7;

/// A solver's plan, at least as good as the greedy one.
#[derive(Debug, Clone)]
pub struct SolverPlan {
    /// The decision.
    pub assignment: Assignment,
    /// Its objective, recomputed from the assignment.
    pub objective: f64,
    /// The solver's proven upper bound, if any.
    pub bound: Option<f64>,
    /// Whether the solver finished (optimal within its gap) rather than stopping at a limit.
    pub solved: bool,
    /// Whether the time limit cut the solve.
    pub time_limit_hit: bool,
    /// What the plan's report should say about how it was found.
    pub note: Option<String>,
    /// The aggregated model's objective at its incumbent (see [`SolveOutcome::incumbent`]).
    pub incumbent: Option<f64>,
}

impl SolverPlan {
    /// The outcome: `optimal` when the solver finished and the recomputed gap is within
    /// `mip_gap`, else `feasible`.
    ///
    /// A bound below the objective by floating-point noise is raised to it; one below by more
    /// is no proof at all (the solver's numerics failed): it is dropped, the plan is
    /// `feasible`, and the note says so.
    pub fn into_outcome(mut self, greedy_objective: f64, mip_gap: f64) -> SolveOutcome {
        if let Some(b) = self.bound {
            let slack = BOUND_NOISE * self.objective.abs().max(1.0);
            if b < self.objective - slack {
                let said = format!(
                    "the solver's bound {b} is below its plan's objective {}: no bound is claimed",
                    self.objective
                );
                self.note = Some(match self.note.take() {
                    Some(n) => format!("{n}; {said}"),
                    None => said,
                });
                self.bound = None;
                self.solved = false;
            } else {
                self.bound = Some(b.max(self.objective));
            }
        }
        let gap = self.bound.map(|b| relative_gap(b, self.objective));
        let proven = self.solved && gap.is_none_or(|g| g <= mip_gap + TOLERANCE);
        SolveOutcome {
            assignment: self.assignment,
            status: if proven {
                Status::Optimal
            } else {
                Status::Feasible
            },
            path: "ilp",
            objective: self.objective,
            bound: self.bound,
            time_limit_hit: self.time_limit_hit,
            greedy_objective,
            note: self.note,
            incumbent: self.incumbent,
        }
    }
}

/// Which solver a fallback is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solver {
    /// The exact per-node MIP.
    PerNode,
    /// The aggregated model of large rounds.
    Aggregated,
}

impl fmt::Display for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Solver::PerNode => "solver",
            Solver::Aggregated => "aggregated solver",
        })
    }
}

/// What the solver reported with an answer the round could not use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answered {
    /// Its proven upper bound, if any.
    pub bound: Option<f64>,
    /// Whether its time limit cut it.
    pub time_limit_hit: bool,
}

/// Why an ILP round returns the greedy plan. `Display` is the plan's note.
#[derive(Debug, Clone, PartialEq)]
pub enum Fallback {
    /// Too little time was left after the reserve to start the MIP.
    NoTimeToStart,
    /// The solver thread could not be spawned.
    ThreadNotStarted(String),
    /// The solver returned an error.
    SolverFailed {
        /// Which solver.
        solver: Solver,
        /// Its error.
        error: String,
    },
    /// The solver thread panicked.
    Panicked(Solver),
    /// The solver did not answer within the time it was waited for.
    NoAnswerInTime {
        /// Which solver.
        solver: Solver,
        /// How long it was waited for.
        waited: Duration,
    },
    /// The solver's answer did not decode to an assignment.
    AnswerUnusable {
        /// Why.
        error: String,
        /// The solver's report.
        answered: Answered,
    },
    /// The solver's assignment broke a rule of the round.
    AnswerBrokeRule {
        /// The rule broken.
        error: String,
        /// The solver's report.
        answered: Answered,
    },
    /// The solver's incumbent scored below the greedy plan.
    BelowGreedy {
        /// The incumbent's objective.
        incumbent: f64,
        /// The greedy plan's.
        greedy: f64,
        /// The solver's report.
        answered: Answered,
    },
    /// The aggregated model answered too late for its choice to be placed.
    NoTimeToPlace(Answered),
    /// The placed aggregated choice scored no better than the greedy plan.
    NoBetterThanGreedy(Answered),
}

impl Fallback {
    /// The solver's report, for the fallbacks that come after an answer (read through
    /// [`Fallback::answered_mut`], the one list of them; a fallback is made once a round).
    fn answered(&self) -> Option<Answered> {
        self.clone().answered_mut().copied()
    }

    /// [`Fallback::answered`], to be changed.
    fn answered_mut(&mut self) -> Option<&mut Answered> {
        match self {
            Fallback::AnswerUnusable { answered, .. }
            | Fallback::AnswerBrokeRule { answered, .. }
            | Fallback::BelowGreedy { answered, .. }
            | Fallback::NoTimeToPlace(answered)
            | Fallback::NoBetterThanGreedy(answered) => Some(answered),
            _ => None,
        }
    }

    /// Of two fallbacks of one round (the aggregated path's and the per-node model's beside
    /// it): the one that carries a bound (each solver's bound holds for the round), the lower
    /// where both do, else this one; the time limit counts as hit where it cut either.
    pub fn either(self, other: Fallback) -> Fallback {
        let cut = self.time_limit_hit() || other.time_limit_hit();
        let mut kept = match (self.bound(), other.bound()) {
            (None, Some(_)) => other,
            (Some(a), Some(b)) if b < a => other,
            _ => self,
        };
        if let Some(answered) = kept.answered_mut() {
            answered.time_limit_hit |= cut;
        }
        kept
    }

    /// The solver's bound, when it answered.
    pub fn bound(&self) -> Option<f64> {
        self.answered().and_then(|a| a.bound)
    }

    /// Whether the time limit is why the round fell back (or cut the solver that answered).
    pub fn time_limit_hit(&self) -> bool {
        match self {
            Fallback::NoTimeToStart | Fallback::NoAnswerInTime { .. } => true,
            other => other.answered().is_some_and(|a| a.time_limit_hit),
        }
    }

    /// The ILP round's outcome: the greedy plan, with this fallback as its note.
    pub fn into_outcome(self, greedy: Assignment, greedy_objective: f64) -> SolveOutcome {
        SolveOutcome {
            bound: self.bound(),
            time_limit_hit: self.time_limit_hit(),
            note: Some(self.to_string()),
            path: "ilp",
            ..SolveOutcome::heuristic("ilp", greedy, greedy_objective)
        }
    }
}

impl Fallback {
    /// Why the solver's plan was not used, without what was used instead.
    pub fn reason(&self) -> impl fmt::Display + '_ {
        Reason(self)
    }
}

/// [`Fallback::reason`].
struct Reason<'a>(&'a Fallback);

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; greedy plan used", Reason(self))
    }
}

impl fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Fallback::NoTimeToStart => f.write_str("time limit reached before the MIP could start"),
            Fallback::ThreadNotStarted(e) => write!(f, "could not start the solver thread ({e})"),
            Fallback::SolverFailed { solver, error } => write!(f, "{solver} failed ({error})"),
            Fallback::Panicked(solver) => write!(f, "{solver} panicked"),
            Fallback::NoAnswerInTime { solver, waited } => write!(
                f,
                "the {solver} did not return within the time limit (waited {:.2} s after the greedy plan)",
                waited.as_secs_f64()
            ),
            Fallback::AnswerUnusable { error, .. } => {
                write!(f, "solver answer unusable ({error})")
            }
            Fallback::AnswerBrokeRule { error, .. } => {
                write!(f, "solver answer broke a rule ({error})")
            }
            Fallback::BelowGreedy {
                incumbent, greedy, ..
            } => write!(
                f,
                "solver incumbent {incumbent:.4} is below the greedy plan's {greedy:.4}"
            ),
            Fallback::NoTimeToPlace(_) => {
                f.write_str("no time left to place the aggregated model's choice")
            }
            Fallback::NoBetterThanGreedy(_) => {
                f.write_str("the aggregated model's choice placed no better than greedy")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::solve::outcome::*;

    const ANSWERED: Answered = Answered {
        bound: Some(12.0),
        time_limit_hit: true,
    };

    fn solved(objective: f64, bound: f64) -> SolveOutcome {
        SolverPlan {
            assignment: Assignment::default(),
            objective,
            bound: Some(bound),
            solved: true,
            time_limit_hit: false,
            note: None,
            incumbent: None,
        }
        .into_outcome(0.0, 0.01)
    }

    #[test]
    fn a_bound_never_sits_below_the_objective() {
        // Noise: raised to the objective, still optimal.
        let o = solved(12.54, 12.539999999999997);
        assert_eq!(o.bound, Some(12.54));
        assert_eq!(o.status, Status::Optimal);
        assert_eq!(o.gap(), Some(0.0));
        // Within HiGHS's tolerance (5e-8 relative): still noise.
        assert_eq!(solved(100.0, 100.0 - 5e-6).bound, Some(100.0));
        // Past it (1e-6 relative, a model missing a cost): no bound.
        assert_eq!(solved(100.0, 100.0 - 1e-4).bound, None);
        // A failed proof: no bound claimed, feasible, said in the note.
        let o = solved(100.0, 50.0);
        assert_eq!(o.bound, None);
        assert_eq!(o.status, Status::Feasible);
        assert!(o.note.unwrap().contains("no bound is claimed"));
    }

    #[test]
    fn notes_keep_their_texts() {
        let cases = [
            (
                Fallback::NoTimeToStart,
                "time limit reached before the MIP could start; greedy plan used",
            ),
            (
                Fallback::ThreadNotStarted("no threads".into()),
                "could not start the solver thread (no threads); greedy plan used",
            ),
            (
                Fallback::SolverFailed {
                    solver: Solver::Aggregated,
                    error: "boom".into(),
                },
                "aggregated solver failed (boom); greedy plan used",
            ),
            (
                Fallback::Panicked(Solver::PerNode),
                "solver panicked; greedy plan used",
            ),
            (
                Fallback::NoAnswerInTime {
                    solver: Solver::PerNode,
                    waited: Duration::from_millis(1234),
                },
                "the solver did not return within the time limit (waited 1.23 s after the greedy plan); greedy plan used",
            ),
            (
                Fallback::BelowGreedy {
                    incumbent: 1.0,
                    greedy: 2.5,
                    answered: ANSWERED,
                },
                "solver incumbent 1.0000 is below the greedy plan's 2.5000; greedy plan used",
            ),
            (
                Fallback::NoTimeToPlace(ANSWERED),
                "no time left to place the aggregated model's choice; greedy plan used",
            ),
            (
                Fallback::NoBetterThanGreedy(ANSWERED),
                "the aggregated model's choice placed no better than greedy; greedy plan used",
            ),
        ];
        for (fallback, text) in cases {
            assert_eq!(fallback.to_string(), text);
        }
    }

    #[test]
    fn of_two_fallbacks_the_one_with_a_bound_stays_and_the_time_limit_counts() {
        let late = || Fallback::NoAnswerInTime {
            solver: Solver::PerNode,
            waited: Duration::from_millis(180),
        };
        let answered = Answered {
            bound: Some(12.0),
            time_limit_hit: false,
        };
        let kept = late().either(Fallback::NoBetterThanGreedy(answered));
        assert_eq!((kept.bound(), kept.time_limit_hit()), (Some(12.0), true));
        let kept = Fallback::NoBetterThanGreedy(answered).either(late());
        assert_eq!((kept.bound(), kept.time_limit_hit()), (Some(12.0), true));
        let lower = Answered {
            bound: Some(11.0),
            time_limit_hit: false,
        };
        let kept = Fallback::NoTimeToPlace(answered).either(Fallback::NoBetterThanGreedy(lower));
        assert_eq!(kept.bound(), Some(11.0));
        let kept = late().either(Fallback::Panicked(Solver::Aggregated));
        assert_eq!((kept.bound(), kept.time_limit_hit()), (None, true));
        assert!(kept.to_string().contains("did not return"));
    }

    #[test]
    fn a_fallback_keeps_the_bound_of_an_answer_and_says_when_time_ran_out() {
        let out = Fallback::NoBetterThanGreedy(ANSWERED).into_outcome(Assignment::default(), 3.0);
        assert_eq!((out.bound, out.time_limit_hit), (Some(12.0), true));
        assert_eq!(
            (out.status, out.path, out.objective),
            (Status::Fallback, "ilp", 3.0)
        );
        let out = Fallback::Panicked(Solver::PerNode).into_outcome(Assignment::default(), 3.0);
        assert_eq!((out.bound, out.time_limit_hit), (None, false));
        assert!(Fallback::NoTimeToStart.time_limit_hit());
    }

    #[test]
    fn a_solver_plan_is_optimal_only_within_the_gap() {
        let plan = |bound: f64, solved: bool| SolverPlan {
            assignment: Assignment::default(),
            objective: 100.0,
            bound: Some(bound),
            solved,
            time_limit_hit: false,
            note: None,
            incumbent: None,
        };
        assert_eq!(
            plan(100.5, true).into_outcome(90.0, 0.01).status,
            Status::Optimal
        );
        assert_eq!(
            plan(102.0, true).into_outcome(90.0, 0.01).status,
            Status::Feasible
        );
        assert_eq!(
            plan(100.0, false).into_outcome(90.0, 0.01).status,
            Status::Feasible
        );
        assert_eq!(relative_gap(102.0, 100.0), 0.02);
    }
}
