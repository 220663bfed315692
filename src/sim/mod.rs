//! Research harness: trace importers ([`trace`]), the event-driven replay ([`engine`]), the
//! planners it can run ([`planners`]), metrics and reports ([`metrics`]), and comparison
//! tables and plots ([`compare`]), and the offline upper bound of a fill run ([`bound`]).

pub mod bound;
pub mod compare;
pub mod engine;
pub mod metrics;
pub mod planners;
pub mod service;
pub mod trace;

pub use engine::{simulate, Protocol, SimConfig};
pub use metrics::{Metrics, Report};
pub use planners::{PlannerName, RoundPlanner};
pub use trace::{Trace, TraceJob};
