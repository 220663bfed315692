//! Occupancy of the cluster before the round: which GPUs are free, held whole, shared or
//! down, and how much CPU and memory each node has left. Shared by every planner.

use crate::instance::{Instance, NodeIx, PendingJob};

/// What one GPU is doing before the round.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuUse {
    /// Out of service.
    Down,
    /// Nobody holds it.
    Free,
    /// Held whole by a running job (index into `Instance::running`).
    Whole(usize),
    /// Shared by running sharers (indices) holding `milli` in total.
    Shared { jobs: Vec<usize>, milli: u32 },
}

/// Occupancy of every node.
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// `gpus[n][g]`: use of GPU g on node n.
    pub gpus: Vec<Vec<GpuUse>>,
    /// CPU left per node (`None`: unlimited).
    pub cpu_free: Vec<Option<i64>>,
    /// Memory left per node (`None`: unlimited).
    pub mem_free: Vec<Option<i64>>,
}

/// Share of a job's total resource on a node holding `on_node` of its `gpus` GPUs
/// (SPEC: ceil(total * gpus_on_node / gpus); a CPU-only or sharing job puts it all on its node).
pub fn resource_share(total: u64, on_node: u32, gpus: u32) -> u64 {
    if gpus <= 1 {
        return total;
    }
    (total as u128 * on_node as u128).div_ceil(gpus as u128) as u64
}

/// The most of a job's GPUs a node may hold with `cpu_left` and `mem_left` (`None`:
/// unlimited): the largest count whose CPU and memory shares ([`resource_share`]) fit, GPUs
/// aside (`u32::MAX` where neither limits it).
pub fn gpus_within_resources(
    job: &PendingJob,
    cpu_left: Option<i64>,
    mem_left: Option<i64>,
) -> u32 {
    let most = |left: Option<i64>, total: u64| -> u64 {
        match left {
            None => u64::MAX,
            Some(_) if total == 0 => u64::MAX,
            Some(l) if l < 0 => 0,
            Some(l) if job.gpus <= 1 => {
                if l as u64 >= total {
                    u64::MAX
                } else {
                    0
                }
            }
            Some(l) => match (l as u64).checked_mul(job.gpus as u64) {
                Some(product) => product / total,
                None => (l as u128 * job.gpus as u128 / total as u128) as u64,
            },
        }
    };
    let g = most(cpu_left, job.cpu_milli).min(most(mem_left, job.memory_mib));
    g.min(u32::MAX as u64) as u32
}

impl ClusterState {
    /// The state before the round.
    pub fn new(inst: &Instance) -> Self {
        let mut gpus: Vec<Vec<GpuUse>> = inst
            .nodes
            .iter()
            .map(|n| {
                n.down
                    .iter()
                    .map(|&d| if d { GpuUse::Down } else { GpuUse::Free })
                    .collect()
            })
            .collect();
        let mut cpu_free: Vec<Option<i64>> = inst
            .nodes
            .iter()
            .map(|n| n.cpu_milli.map(|c| c as i64))
            .collect();
        let mut mem_free: Vec<Option<i64>> = inst
            .nodes
            .iter()
            .map(|n| n.memory_mib.map(|c| c as i64))
            .collect();
        for (k, job) in inst.running.iter().enumerate() {
            let total = job.gpu_count();
            for (n, idx) in &job.gpus {
                for &g in idx {
                    let slot = &mut gpus[*n][g as usize];
                    // A GPU that went down under a running job stays down: preempting the job
                    // must not make it assignable.
                    if *slot == GpuUse::Down {
                        continue;
                    }
                    *slot = match (std::mem::replace(slot, GpuUse::Free), job.gpu_milli) {
                        (GpuUse::Shared { mut jobs, milli }, Some(m)) => {
                            jobs.push(k);
                            GpuUse::Shared {
                                jobs,
                                milli: milli + m,
                            }
                        }
                        (_, Some(m)) => GpuUse::Shared {
                            jobs: vec![k],
                            milli: m,
                        },
                        (_, None) => GpuUse::Whole(k),
                    };
                }
                let share = |t: u64| resource_share(t, idx.len() as u32, total) as i64;
                if let Some(c) = cpu_free[*n].as_mut() {
                    *c -= share(job.cpu_milli);
                }
                if let Some(m) = mem_free[*n].as_mut() {
                    *m -= share(job.memory_mib);
                }
            }
        }
        ClusterState {
            gpus,
            cpu_free,
            mem_free,
        }
    }

    /// Number of free whole GPUs on node n.
    pub fn free_count(&self, n: NodeIx) -> u32 {
        self.gpus[n].iter().filter(|u| **u == GpuUse::Free).count() as u32
    }

    /// Number of GPUs of node n held by running work, whole or shared.
    pub fn node_busy_count(&self, n: NodeIx) -> u32 {
        self.gpus[n]
            .iter()
            .filter(|u| matches!(u, GpuUse::Whole(_) | GpuUse::Shared { .. }))
            .count() as u32
    }

    /// Busy GPUs (held whole or shared).
    pub fn busy_count(&self) -> u32 {
        (0..self.gpus.len()).map(|n| self.node_busy_count(n)).sum()
    }

    /// Whether node n has room for `cpu` and `mem` more (asking none of a resource always
    /// fits it, even on a node already over capacity).
    pub fn fits_resources(&self, n: NodeIx, cpu: u64, mem: u64) -> bool {
        let fits =
            |left: Option<i64>, need: u64| need == 0 || left.is_none_or(|l| l >= need as i64);
        fits(self.cpu_free[n], cpu) && fits(self.mem_free[n], mem)
    }
}
