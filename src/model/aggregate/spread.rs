//! A floor under the spread penalty of each gang, from the best capacity it could reach.
//!
//! For job j (g_j GPUs, accepted types M_j, at most k_j GPUs per node) let pot_n be the GPUs of
//! node n that are free or held whole by preemptible work, capped at k_j, on nodes of M_j. Any
//! placement of j covers at least U_j node units, R_j racks and P_j pods, where U_j is the
//! fewest units whose pot sums reach g_j (likewise R_j over racks, P_j over pods). So
//!
//! ```text
//! spread_j >= w g_j ((s_node - 1) max(0, U_j - u_j) + (s_rack - 1)(R_j - 1) + (s_pod - 1)(P_j - 1))
//! ```
//!
//! with u_j the job's baseline units ([`Topology::min_units`]) and s the workload's slowdowns:
//! the penalty of the tightest span the job could have. The aggregated model prices a start of
//! j at its value minus this floor, which keeps its bound valid.

use crate::instance::{Instance, PendingJob};
use crate::topology::{spread_penalty, Span, Topology};
use std::collections::HashMap;

/// Prefix sums of domain capacity, largest domain first, at one level.
type Prefix = Vec<u64>;

/// Spread floors of the jobs of one round (capacity per accepted types and per-node cap,
/// computed once per distinct pair).
pub struct SpreadFloor<'a> {
    inst: &'a Instance,
    topo: &'a Topology,
    /// GPUs per node a job could reach at best: free plus held whole by preemptible work.
    potential: &'a [u32],
    levels: HashMap<(Vec<bool>, Option<u32>), [Prefix; 3]>,
}

impl<'a> SpreadFloor<'a> {
    /// Floors over the node potentials `potential` (indexed by node).
    pub fn new(inst: &'a Instance, topo: &'a Topology, potential: &'a [u32]) -> Self {
        SpreadFloor {
            inst,
            topo,
            potential,
            levels: HashMap::new(),
        }
    }

    /// The floor of job j's spread penalty, 0 for jobs of one GPU or none.
    pub fn of(&mut self, job: &PendingJob) -> f64 {
        if job.gpus <= 1 {
            return 0.0;
        }
        let key = (self.topo.type_mask(job), job.gpus_per_node);
        let (inst, topo, potential) = (self.inst, self.topo, self.potential);
        let [units, racks, pods] = self
            .levels
            .entry(key)
            .or_insert_with_key(|(mask, per_node)| {
                let mut sums = [
                    vec![0u64; topo.units],
                    vec![0u64; inst.racks.len().max(1)],
                    vec![0u64; inst.pods.len().max(1)],
                ];
                for (n, node) in inst.nodes.iter().enumerate() {
                    if !mask[topo.node_type[n]] {
                        continue;
                    }
                    let pot = per_node.map_or(potential[n], |k| potential[n].min(k)) as u64;
                    sums[0][topo.unit_of[n]] += pot;
                    sums[1][node.rack] += pot;
                    sums[2][node.pod] += pot;
                }
                sums.map(|mut s| {
                    s.sort_unstable_by(|a, b| b.cmp(a));
                    s.iter()
                        .scan(0u64, |acc, &x| {
                            *acc += x;
                            Some(*acc)
                        })
                        .collect()
                })
            });
        let fewest = |prefix: &Prefix| -> Option<u32> {
            let i = prefix.partition_point(|&s| s < job.gpus as u64);
            (i < prefix.len()).then_some(i as u32 + 1)
        };
        let (Some(units), Some(racks), Some(pods)) = (fewest(units), fewest(racks), fewest(pods))
        else {
            return 0.0; // the job cannot start at all; the capacity rows see to it
        };
        let span = Span {
            nodes: units,
            units,
            racks,
            pods,
            island_splits: 0,
        };
        spread_penalty(
            &span,
            topo.min_units(inst, job),
            job.gpus,
            &job.slowdown,
            inst.policy.weights.spread,
        )
    }
}
