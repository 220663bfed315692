//! One planning round: cluster, tenants, running and pending jobs, policy.
//!
//! [`raw`] holds the file as written; [`load`] parses it (YAML, with a JSON fast path) and
//! [`validate`] turns it into the indexed [`Instance`] every planner works on, or a list of
//! issues that each name the field path, the bad value and what would be right.

pub mod load;
pub mod policy;
pub mod raw;
pub mod reservation;
pub mod task_dist;
pub mod text;
pub mod validate;
pub mod yaml_scan;

pub use load::{load_instance_file, parse_instance};
pub use policy::{Policy, Weights};
pub use reservation::Reservation;
pub use task_dist::TaskDist;

use crate::hardware::Slowdown;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Index of a node in [`Instance::nodes`].
pub type NodeIx = usize;

/// Hard locality a pending job may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Locality {
    /// All GPUs on one node.
    Node,
    /// All GPUs in one rack.
    Rack,
    /// All GPUs in one pod.
    Pod,
}

impl Locality {
    /// The word used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Locality::Node => "node",
            Locality::Rack => "rack",
            Locality::Pod => "pod",
        }
    }
}

/// A node after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Name.
    pub name: String,
    /// GPU count.
    pub gpus: u32,
    /// GPU type (`generic` when neither the node nor its model names one).
    pub gpu_type: String,
    /// Index into [`Instance::racks`].
    pub rack: usize,
    /// Index into [`Instance::pods`].
    pub pod: usize,
    /// `down[g]` is true when GPU g is out of service.
    pub down: Vec<bool>,
    /// CPU capacity, if given.
    pub cpu_milli: Option<u64>,
    /// Memory capacity, if given.
    pub memory_mib: Option<u64>,
    /// NVLink islands (GPU index sets); one island of all GPUs when unknown.
    pub islands: Vec<Vec<u32>>,
    /// NUMA halves (GPU index sets); one set of all GPUs when unknown.
    pub numa: Vec<Vec<u32>>,
    /// Rack-scale NVLink domain shared with other nodes, if any.
    pub nvlink_domain: Option<String>,
    /// Hardware model name, if any.
    pub model: Option<String>,
}

impl Node {
    /// GPUs in service (not `down`).
    pub fn usable(&self) -> u32 {
        self.down.iter().filter(|d| !**d).count() as u32
    }

    /// Whether the node's sizes hold `cpu` milli-CPU and `mem` MiB (a size not given holds
    /// any amount), whatever runs on it now.
    pub fn sizes_hold(&self, cpu: u64, mem: u64) -> bool {
        self.cpu_milli.is_none_or(|c| c >= cpu) && self.memory_mib.is_none_or(|m| m >= mem)
    }
}

/// A tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    /// Name.
    pub name: String,
    /// Fair-share weight (> 0).
    pub weight: f64,
    /// Hard cap on GPUs held after the round (whole GPUs in the instance file; a fraction
    /// only in a neighbourhood's cut, whose quota is what the round leaves it).
    pub quota: Option<f64>,
}

/// A running job.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningJob {
    /// Id.
    pub id: String,
    /// Index into [`Instance::tenants`].
    pub tenant: usize,
    /// Priority.
    pub priority: i64,
    /// May be preempted.
    pub preemptible: bool,
    /// Work lost if preempted now, GPU-seconds.
    pub checkpoint_cost: f64,
    /// GPUs held: node and indices, sorted by node index.
    pub gpus: Vec<(NodeIx, Vec<u32>)>,
    /// Share of one GPU, for a sharer.
    pub gpu_milli: Option<u32>,
    /// CPU total.
    pub cpu_milli: u64,
    /// Memory total.
    pub memory_mib: u64,
    /// Seconds until the job ends; `None`: unknown (planned as never ending).
    pub ends_in: Option<f64>,
}

impl RunningJob {
    /// GPUs held (a sharer counts its share of one GPU).
    pub fn gpu_count(&self) -> u32 {
        self.gpus.iter().map(|(_, g)| g.len() as u32).sum()
    }

    /// GPUs held in GPU units (a sharer holds `gpu_milli / 1000`).
    pub fn gpu_equivalent(&self) -> f64 {
        match self.gpu_milli {
            Some(m) => crate::units::gpu_units(m),
            None => self.gpu_count() as f64,
        }
    }
}

/// A pending job.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingJob {
    /// Id.
    pub id: String,
    /// Index into [`Instance::tenants`].
    pub tenant: usize,
    /// Gang size (0 for a CPU-only job).
    pub gpus: u32,
    /// Priority.
    pub priority: i64,
    /// Seconds waited.
    pub wait: f64,
    /// Acceptable GPU types; `None` accepts any.
    pub gpu_types: Option<Vec<String>>,
    /// Hard locality.
    pub within: Option<Locality>,
    /// Hard cap on nodes spanned.
    pub max_nodes: Option<u32>,
    /// Fixed GPUs per node used.
    pub gpus_per_node: Option<u32>,
    /// Workload profile name.
    pub workload: Option<String>,
    /// Slowdown factors from the workload profile.
    pub slowdown: Slowdown,
    /// Share of one GPU, for a sharer.
    pub gpu_milli: Option<u32>,
    /// CPU total.
    pub cpu_milli: u64,
    /// Memory total.
    pub memory_mib: u64,
    /// Time limit in seconds; `None`: unlimited.
    pub time_limit: Option<f64>,
}

impl PendingJob {
    /// Whether this job may run on a node with GPU type `t`.
    pub fn accepts_type(&self, t: &str) -> bool {
        self.gpu_types
            .as_ref()
            .is_none_or(|ts| ts.iter().any(|x| x == t))
    }

    /// GPUs asked for in GPU units (a sharer asks `gpu_milli / 1000`).
    pub fn gpu_equivalent(&self) -> f64 {
        match self.gpu_milli {
            Some(m) => crate::units::gpu_units(m),
            None => self.gpus as f64,
        }
    }

    /// Whether this is a sharer (a 1-GPU job with `gpu_milli`).
    pub fn is_sharer(&self) -> bool {
        self.gpu_milli.is_some()
    }

    /// The most nodes this job may span (from `within: node`, `max_nodes`, `gpus_per_node`).
    pub fn node_limit(&self) -> u32 {
        let mut limit = self.gpus.max(1);
        if self.within == Some(Locality::Node) || self.is_sharer() || self.gpus == 0 {
            limit = 1;
        }
        if let Some(m) = self.max_nodes {
            limit = limit.min(m);
        }
        if let Some(g) = self.gpus_per_node {
            limit = limit.min(self.gpus / g.max(1));
        }
        limit
    }
}

/// One validated, indexed planning round.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Nodes in file order.
    pub nodes: Vec<Node>,
    /// Rack names; nodes without a rack share `""`.
    pub racks: Vec<String>,
    /// Pod of each rack (index into `pods`).
    pub rack_pod: Vec<usize>,
    /// Pod names; racks without a pod share `""`.
    pub pods: Vec<String>,
    /// Tenants.
    pub tenants: Vec<Tenant>,
    /// Running jobs.
    pub running: Vec<RunningJob>,
    /// Pending jobs.
    pub pending: Vec<PendingJob>,
    /// Policy with defaults filled in.
    pub policy: Policy,
    /// Node index by name.
    pub node_by_name: BTreeMap<String, NodeIx>,
    /// Task distribution the greedy places one-node jobs against (least growth of
    /// fragmentation first); `None` (the default) places them by best fit. From
    /// `policy.task_distribution`, or set by the simulator to the trace's distribution.
    pub task_dist: Option<Arc<TaskDist>>,
    /// Each tenant's fair share, fixed from outside instead of water-filled from this
    /// instance: set on a neighbourhood cut from a larger round (its share there less what it
    /// holds outside the cut), so that the cut's fairness term prices the round's. `None` for
    /// every instance read from a file.
    pub fair_share: Option<Vec<f64>>,
    /// The round's reservations for its blocked jobs, in priority order
    /// ([`reservation::plan`]; at most `policy.reservations`, and so at most
    /// [`policy::MAX_RESERVATIONS`]), worked out when the instance is validated; empty when the
    /// round carries no time or no job needs one. No node is in two of them.
    pub reservations: Vec<Reservation>,
}

/// The packing weights the objective prices: nodes opened and GPUs stranded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackingWeights {
    /// Cost of starting work on an empty node.
    pub open_node: f64,
    /// Cost per free GPU left on a node in use.
    pub strand: f64,
}

impl Instance {
    /// The packing weights of the objective: `policy.weights.open_node` and `strand`, or none
    /// when the instance carries a task distribution. The distribution's fragmentation term
    /// ([`crate::objective::fragmentation_cost`]) then prices the room a plan wastes against
    /// the workload itself, where the packing terms guess it from free GPUs alone (and would
    /// count the same room twice).
    pub fn packing_weights(&self) -> PackingWeights {
        let w = &self.policy.weights;
        match self.task_dist {
            Some(_) => PackingWeights {
                open_node: 0.0,
                strand: 0.0,
            },
            None => PackingWeights {
                open_node: w.open_node,
                strand: w.strand,
            },
        }
    }

    /// Usable (not down) GPUs in the cluster.
    pub fn gpus_usable(&self) -> u32 {
        self.nodes.iter().map(Node::usable).sum()
    }

    /// All GPUs in the cluster, down ones included.
    pub fn gpus_total(&self) -> u32 {
        self.nodes.iter().map(|n| n.gpus).sum()
    }

    /// Index of a pending job by id.
    pub fn pending_index(&self, id: &str) -> Option<usize> {
        self.pending.iter().position(|j| j.id == id)
    }

    /// Index of a running job by id.
    pub fn running_index(&self, id: &str) -> Option<usize> {
        self.running.iter().position(|j| j.id == id)
    }

    /// Whether pending job `job` may be placed on node n: the one rule reservations add,
    /// shared by every planner and the validator. A reserved node takes its reserved job, and
    /// other jobs only when their time limit ends them by that reservation's start.
    pub fn may_use_node(&self, job: &PendingJob, n: NodeIx) -> bool {
        self.reservations.iter().all(|r| r.admits(job, n))
    }

    /// Which of the round's reservations have their nodes open to `job` (it is the reserved
    /// job, or its time limit ends it by the reservation's start), as a bit mask: bit i for
    /// reservation i (there are at most [`policy::MAX_RESERVATIONS`], 64). Jobs alike in
    /// everything else but this fit differently.
    pub fn reserved_nodes_open_to(&self, job: &PendingJob) -> u64 {
        self.reservation_mask(|r| r.open_to(job))
    }

    /// Which of the round's reservations hold node n, as a bit mask of the same kind (a
    /// node is reserved for one job at most: one bit, or none).
    pub fn reservations_holding(&self, n: NodeIx) -> u64 {
        self.reservation_mask(|r| r.is_reserved(n))
    }

    /// The reservations for which `pick` holds, as a bit mask: bit i for reservation i.
    fn reservation_mask(&self, pick: impl Fn(&Reservation) -> bool) -> u64 {
        self.reservations
            .iter()
            .enumerate()
            .filter(|(_, r)| pick(r))
            .fold(0, |mask, (i, _)| {
                mask | 1u64.checked_shl(i as u32).unwrap_or(0)
            })
    }

    /// Pending and running jobs by id, for looking many up: (pending, running).
    pub fn job_indices(&self) -> (BTreeMap<&str, usize>, BTreeMap<&str, usize>) {
        let pending = self.pending.iter().enumerate();
        let running = self.running.iter().enumerate();
        (
            pending.map(|(i, j)| (j.id.as_str(), i)).collect(),
            running.map(|(i, r)| (r.id.as_str(), i)).collect(),
        )
    }
}
