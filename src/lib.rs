//! # gangplan
//!
//! A GPU-cluster batch planner. Each planning round turns pending jobs, free GPUs and
//! interconnect costs into a mixed-integer program and solves it with HiGHS; a topology-aware
//! greedy bin-packer gives the MIP start and is the plan when the time limit hits first.
//! Gangs start whole or wait; GPUs of a gang sit close; tenants get weighted fair shares and
//! quotas; higher-priority work may preempt lower-priority preemptible jobs; nodes are filled
//! before empty ones are opened. Every plan passes an independent validator before it leaves
//! the library, and reports its objective, a proven bound and the gap.
//!
//! One round, end to end:
//!
//! ```
//! use gangplan::{hardware::ModelLibrary, instance::parse_instance, round::plan_round, solve::PlannerKind};
//!
//! let yaml = r#"
//! nodes:
//!   - {name: a1, gpus: 8, gpu_type: H100, rack: r1}
//!   - {name: a2, gpus: 8, gpu_type: H100, rack: r1}
//! running:
//!   - {id: old, gpus: {a1: [0, 1, 2, 3]}}
//! pending:
//!   - {id: train, gpus: 4}
//!   - {id: big, gpus: 8}
//! "#;
//! let inst = parse_instance(yaml, "example", &ModelLibrary::builtin()).unwrap();
//! let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
//! // Best fit: the 4-GPU job fills a1, keeping a2 whole for the 8-GPU gang.
//! assert_eq!(plan.placements.len(), 2);
//! let train = plan.placements.iter().find(|p| p.job == "train").unwrap();
//! assert!(train.gpus.contains_key("a1"));
//! ```
//!
//! Modules follow the pipeline: [`instance`] (parse and validate) -> [`topology`] ->
//! [`heuristics`] (greedy) -> [`model`] (the MIP, one file per constraint family) ->
//! [`solve`] (deadline, start, fallback) -> [`plan`] (validator, reasons, output).

pub mod adapters;
pub mod assignment;
pub mod cron;
pub mod error;
pub mod explain;
pub mod fsutil;
pub mod gen;
pub mod hardware;
pub mod heuristics;
pub mod instance;
pub mod model;
pub mod objective;
pub mod plan;
pub mod round;
pub mod round_state;
pub mod sim;
pub mod solve;
pub mod state;
pub mod topology;
pub mod units;
pub mod yaml_text;

pub use error::{Error, Result};
