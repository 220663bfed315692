//! Heuristic planners behind one trait. The greedy bin-packer is the MIP start, the fallback
//! and the floor of every round; the baselines (best fit, DRF, FGD, FIFO, LAS, random) are the
//! literature's, for comparison. All of them place jobs through [`placement`], the core below
//! them; the baselines share [`baseline`]'s single-node options on top of it.
//!
//! [`Planner`] is the one planner interface of the crate: a round (instance, topology and
//! deadline, in a [`RoundContext`]) in, a decision out. The greedy and the baselines here plan
//! purely (`plan`: same round, same assignment, whatever the deadline: what replays compare);
//! under a round's time limit (`solve`: the CLI and cron rounds) the baselines consider no job
//! past the round's work deadline ([`baseline::Baseline`]), so that the plan is written in
//! time; the ILP
//! ([`crate::solve::planner::SolvePlanner`]) is another implementation, which uses the
//! deadline and reports its bound. [`crate::solve::PlannerKind`] names them all.

pub mod greedy;

pub use greedy::Greedy;

use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::objective::evaluate;
use crate::solve::outcome::SolveOutcome;
use crate::topology::Topology;
use std::sync::Arc;
use std::time::Instant;

/// What a planner is given: the round, its topology, and when the plan must be ready.
#[derive(Debug, Clone, Copy)]
pub struct RoundContext<'a> {
    /// The round.
    pub inst: &'a Instance,
    /// Its topology.
    pub topo: &'a Topology,
    /// When the plan must be written.
    pub deadline: Instant,
    /// The same round as shared handles, for planners that solve on threads of their own.
    shared: Option<(&'a Arc<Instance>, &'a Arc<Topology>)>,
}

impl<'a> RoundContext<'a> {
    /// The context of a round due at `deadline`.
    pub fn new(inst: &'a Arc<Instance>, topo: &'a Arc<Topology>, deadline: Instant) -> Self {
        RoundContext {
            inst,
            topo,
            deadline,
            shared: Some((inst, topo)),
        }
    }

    /// The context of a round for a pure planner, which does not look at the deadline (it is
    /// set to now). A planner that needs shared handles makes its own.
    pub fn untimed(inst: &'a Instance, topo: &'a Topology) -> Self {
        RoundContext {
            inst,
            topo,
            deadline: Instant::now(),
            shared: None,
        }
    }

    /// The round as shared handles, when the context was made from them.
    pub fn shared(&self) -> Option<(&'a Arc<Instance>, &'a Arc<Topology>)> {
        self.shared
    }
}

/// A planner: one round in, one decision out.
pub trait Planner {
    /// Name used on the command line and in reports.
    fn name(&self) -> &'static str;
    /// Decide the round. Heuristics are pure: same round, same assignment.
    fn plan(&self, ctx: &RoundContext) -> Assignment;
    /// Decide the round and report on it. By default (heuristics, which prove nothing) the
    /// plan, scored, with status `fallback` and the planner's name as its path.
    fn solve(&self, ctx: &RoundContext) -> SolveOutcome {
        let assignment = self.plan(ctx);
        let objective = evaluate(ctx.inst, ctx.topo, &assignment).total();
        SolveOutcome::heuristic(self.name(), assignment, objective)
    }
}
pub mod baseline;
pub mod best_fit;
pub mod drf;
pub mod fgd;
pub mod fifo;
pub mod las;
pub mod move_score;
pub mod placement;
pub mod random;
pub mod relocate;
pub mod repack;
pub mod stop;
pub mod trade;
