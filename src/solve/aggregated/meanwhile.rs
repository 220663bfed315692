//! While the model solves: on the largest rounds the greedy is done long before the model
//! answers, and the round's thread would wait idle for it (the model has the other core).
//! That time goes to the greedy plan: trades ([`crate::heuristics::trade`]), then repacking
//! ([`crate::heuristics::repack`]), each stopping as soon as the model has answered while its
//! choice can still be placed ([`Budget::can_place_choice`]), else in time to score the plan
//! before the work deadline ([`Budget::early_placement_until`]). The
//! improved plan is what a placed choice must beat, and the round's plan when the choice
//! cannot be placed in time or the model does not answer.
//!
//! Measured on the 100k-GPU rounds of `gangplan bench` (12,500 nodes, 20,000 pending, 3 s):
//! tight-cpu's greedy pass took 0.93 s and the model answered at 1.7 s, too late for its
//! choice to be placed, so the round kept the greedy plan, 14.99% from the bound; on
//! skewed-resources the model did not answer at all (see the README's performance table for
//! what this gives).

use super::super::{answer_of, await_answer, Budget, Fallback, GreedyPlan, Solver, ThreadAnswer};
use super::answers::ModelAnswer;
use super::{repacked, solves_relaxation, traded};
use crate::assignment::Assignment;
use crate::heuristics::stop::DeadlineOr;
use crate::instance::Instance;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use std::cell::RefCell;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// The model's first answer, looked for without waiting while the greedy plan is improved.
pub struct FirstAnswer<'r> {
    rx: &'r Receiver<ThreadAnswer<ModelAnswer>>,
    /// The answer once taken off the channel (or `None` in it when the thread is gone).
    got: RefCell<Option<Option<ThreadAnswer<ModelAnswer>>>>,
}

impl<'r> FirstAnswer<'r> {
    /// The first answer that will come on `rx`.
    pub fn on(rx: &'r Receiver<ThreadAnswer<ModelAnswer>>) -> Self {
        FirstAnswer {
            rx,
            got: RefCell::new(None),
        }
    }

    /// Whether the answer is in (it is kept), or the model's thread has gone without one.
    pub fn arrived(&self) -> bool {
        let mut got = self.got.borrow_mut();
        if got.is_some() {
            return true;
        }
        match self.rx.try_recv() {
            Ok(answer) => *got = Some(Some(answer)),
            Err(TryRecvError::Disconnected) => *got = Some(None),
            Err(TryRecvError::Empty) => return false,
        }
        true
    }

    /// The channel the answers come on (the later ones, once this one is taken).
    pub fn channel(&self) -> &'r Receiver<ThreadAnswer<ModelAnswer>> {
        self.rx
    }

    /// The answer: the one kept, or the channel's within `wait`.
    pub fn take(self, wait: Duration) -> Result<ModelAnswer, Fallback> {
        match self.got.into_inner() {
            Some(Some(answer)) => answer_of(answer, Solver::Aggregated),
            // A thread gone without an answer: the channel says so at once.
            Some(None) | None => await_answer(self.rx, wait, Solver::Aggregated),
        }
    }
}

/// The greedy plan improved while the model solved.
pub struct Improved {
    /// The plan and its objective (above the greedy plan's).
    pub plan: (f64, Assignment),
    /// Whether the model's answer or the work deadline cut the improvement short: the plan
    /// then depends on the machine's speed.
    pub cut_short: bool,
}

/// Improve the greedy plan until the model has answered while its choice can still be placed,
/// or the work deadline, on rounds that solve the model's relaxation (on smaller rounds the
/// model answers within milliseconds); `None` when such an answer is already in or nothing
/// was gained.
pub fn improve(
    inst: &Instance,
    topo: &Topology,
    budget: &Budget,
    greedy: &GreedyPlan,
    first: &FirstAnswer<'_>,
) -> Option<Improved> {
    // An answer that comes when its choice can no longer be placed stops nothing.
    let placeable = || first.arrived() && budget.can_place_choice(greedy.took);
    if !solves_relaxation(inst) || placeable() || Instant::now() >= budget.early_placement_until() {
        return None;
    }
    let started = Instant::now();
    // The plan is scored after the search: that takes 0.05-0.1 s at 100k GPUs.
    let stop = || DeadlineOr {
        until: budget.early_placement_until(),
        event: placeable,
    };
    let plan = (greedy.objective, greedy.assignment.clone());
    let plan = traded(inst, topo, plan, stop());
    // Repacking sets nothing up where the trades were cut, and says it was cut.
    let (plan, cut_short) = repacked(inst, topo, plan, stop());
    tracing::debug!(
        seconds = started.elapsed().as_secs_f64(),
        cut_short,
        objective = plan.0,
        "greedy plan improved while the model solved"
    );
    (plan.0 > greedy.objective + TOLERANCE).then_some(Improved { plan, cut_short })
}
