//! The plan (SPEC.md "Plan"): its types, the independent validator, the reasons given for
//! pending jobs and the rendering of an [`crate::assignment::Assignment`] into a plan.

pub mod output;
pub mod reasons;
pub mod render;
pub mod types;
pub mod validate;

pub use render::{assignment_of, render_plan, render_plan_until};
pub use types::{
    Metrics, PendingEntry, Placement, Plan, PlanReservation, Preemption, SolverInfo, Status,
};
pub use validate::validate_plan;
