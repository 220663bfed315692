//! One solved round with everything the explanations need: the instance, its topology and the
//! planner's outcome.

use crate::assignment::Assignment;
use crate::error::{Error, Result};
use crate::hardware::ModelLibrary;
use crate::instance::raw::RawInstance;
use crate::instance::validate::validate;
use crate::instance::Instance;
use crate::plan::reasons::AfterRound;
use crate::solve::{solve, PlannerKind, SolveOptions, SolveOutcome};
use crate::state::ClusterState;
use crate::topology::Topology;
use std::sync::Arc;

/// One solved round with everything the explanations need.
pub struct Round {
    /// The instance.
    pub inst: Arc<Instance>,
    /// Its topology.
    pub topo: Arc<Topology>,
    /// The solve.
    pub outcome: SolveOutcome,
}

impl Round {
    /// Validate a raw instance and plan it (greedy then MIP, under the policy's time limit).
    pub fn plan(raw: &RawInstance, lib: &ModelLibrary, source: &str) -> Result<Round> {
        let inst = validate(raw, lib).map_err(|issues| Error::Input {
            source_name: source.to_string(),
            issues,
        })?;
        Ok(Round::plan_instance(inst))
    }

    /// Plan a validated instance.
    pub fn plan_instance(inst: Instance) -> Round {
        let opts = SolveOptions::from_policy(&inst, PlannerKind::Ilp);
        let inst = Arc::new(inst);
        let topo = Arc::new(Topology::new(&inst));
        let outcome = solve(&inst, &topo, &opts);
        Round {
            inst,
            topo,
            outcome,
        }
    }

    /// The assignment.
    pub fn assignment(&self) -> &Assignment {
        &self.outcome.assignment
    }

    /// What the round leaves behind.
    pub fn after(&self) -> AfterRound {
        AfterRound::new(
            &self.inst,
            &ClusterState::new(&self.inst),
            &self.outcome.assignment,
        )
    }
}
