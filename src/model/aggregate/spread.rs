//! A floor under the spread penalty of each gang, from the best capacity it could reach.
//!
//! For job j (g_j GPUs, priority pi_j, accepted types M_j, at most k_j GPUs per node) let pot_n
//! be the GPUs of node n that are free or held whole by preemptible work of priority below
//! pi_j, capped at k_j, on nodes of M_j: all the job could ever take there. Any
//! placement of j covers at least U_j node units, R_j racks and P_j pods, where U_j is the
//! fewest units whose pot sums reach g_j (likewise R_j over racks, P_j over pods). So
//!
//! ```text
//! spread_j >= w g_j ((s_node - 1) max(0, U_j - u_j) + (s_rack - 1)(R_j - 1) + (s_pod - 1)(P_j - 1))
//! ```
//!
//! with u_j the job's baseline units ([`Topology::min_units`]) and s the workload's slowdowns.
//! Levels are joined where that is cheap: a placement inside one rack uses at least U_j^r
//! units (the fewest units of the best single rack), one that leaves the rack at least two
//! racks, so the floor is min(penalty(U_j^r, 1 rack, 1 pod), penalty(U_j, max(2, R_j), P_j)). The aggregated model prices a start of
//! j at its value minus this floor, which keeps its bound valid.

use crate::instance::{Instance, PendingJob};
use crate::topology::{spread_penalty, Span, Topology};
use std::collections::{BTreeMap, HashMap};

/// Prefix sums of domain capacity, largest domain first, at one level.
type Prefix = Vec<u64>;

/// Spread floors of the jobs of one round (capacity per accepted types and per-node cap,
/// computed once per distinct pair).
pub struct SpreadFloor<'a> {
    inst: &'a Instance,
    topo: &'a Topology,
    /// Per node: (priority a job must exceed, GPUs): free GPUs at `i64::MIN`, then the GPUs of
    /// each preemptible running job at its priority.
    offers: &'a [Vec<(i64, u32)>],
    levels: HashMap<(Vec<bool>, Option<u32>, i64), Reach>,
}

impl<'a> SpreadFloor<'a> {
    /// Floors over the GPUs each node offers (`offers`, indexed by node).
    pub fn new(inst: &'a Instance, topo: &'a Topology, offers: &'a [Vec<(i64, u32)>]) -> Self {
        SpreadFloor {
            inst,
            topo,
            offers,
            levels: HashMap::new(),
        }
    }

    /// The floor of job j's spread penalty, 0 for jobs of one GPU or none.
    pub fn of(&mut self, job: &PendingJob) -> f64 {
        self.of_spanning(job, 0)
    }

    /// The floor of job j's spread penalty over the placements that cover at least
    /// `at_least_units` node units (0: every placement).
    pub fn of_spanning(&mut self, job: &PendingJob, at_least_units: u32) -> f64 {
        let s = &job.slowdown;
        if job.gpus <= 1
            || [s.span_nodes, s.span_racks, s.span_pods]
                .iter()
                .any(|&f| f < 1.0)
        {
            return 0.0; // (a slowdown below 1 would make the penalty fall with the span)
        }
        let key = (self.topo.type_mask(job), job.gpus_per_node, job.priority);
        let (inst, topo, offers) = (self.inst, self.topo, self.offers);
        let reach = self
            .levels
            .entry(key)
            .or_insert_with_key(|(mask, per_node, priority)| {
                Reach::new(inst, topo, offers, mask, *per_node, *priority)
            });
        let g = job.gpus as u64;
        let (Some(units), Some(racks), Some(pods)) = (
            fewest(&reach.units, g),
            fewest(&reach.racks, g),
            fewest(&reach.pods, g),
        ) else {
            return 0.0; // the job cannot start at all; the capacity rows see to it
        };
        let penalty = |units: u32, racks: u32, pods: u32| {
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
        };
        // Over several racks: at least the fewest units, two racks, the fewest pods.
        let spread_out = penalty(units.max(at_least_units), racks.max(2), pods);
        // In one rack: the fewest units any one rack can do it with.
        let one_rack = reach
            .units_in_rack
            .iter()
            .filter_map(|prefix| fewest(prefix, g))
            .min()
            .map(|u| penalty(u.max(at_least_units), 1, 1));
        one_rack.map_or(spread_out, |p| p.min(spread_out))
    }
}

/// The fewest domains whose capacities (prefix sums, largest first) reach `g`.
fn fewest(prefix: &Prefix, g: u64) -> Option<u32> {
    let i = prefix.partition_point(|&s| s < g);
    (i < prefix.len()).then_some(i as u32 + 1)
}

/// What a job class can reach: prefix sums of capacity by unit, rack and pod, and by unit
/// inside each rack.
struct Reach {
    units: Prefix,
    racks: Prefix,
    pods: Prefix,
    units_in_rack: Vec<Prefix>,
}

impl Reach {
    fn new(
        inst: &Instance,
        topo: &Topology,
        offers: &[Vec<(i64, u32)>],
        mask: &[bool],
        per_node: Option<u32>,
        priority: i64,
    ) -> Self {
        let mut units = vec![0u64; topo.units];
        let mut racks = vec![0u64; inst.racks.len().max(1)];
        let mut pods = vec![0u64; inst.pods.len().max(1)];
        let mut rack_units: BTreeMap<(usize, usize), u64> = BTreeMap::new();
        for (n, node) in inst.nodes.iter().enumerate() {
            if !mask[topo.node_type[n]] {
                continue;
            }
            let reach: u32 = offers[n]
                .iter()
                .filter(|(p, _)| *p < priority)
                .map(|(_, g)| g)
                .sum();
            let pot = per_node.map_or(reach, |k| reach.min(k)) as u64;
            if pot == 0 {
                continue;
            }
            units[topo.unit_of[n]] += pot;
            racks[node.rack] += pot;
            pods[node.pod] += pot;
            *rack_units.entry((node.rack, topo.unit_of[n])).or_default() += pot;
        }
        let mut units_in_rack: Vec<Vec<u64>> = vec![Vec::new(); racks.len()];
        for ((r, _), pot) in rack_units {
            units_in_rack[r].push(pot);
        }
        Reach {
            units: prefix_sums(units),
            racks: prefix_sums(racks),
            pods: prefix_sums(pods),
            units_in_rack: units_in_rack.into_iter().map(prefix_sums).collect(),
        }
    }
}

/// Prefix sums of capacities, largest first.
fn prefix_sums(mut caps: Vec<u64>) -> Prefix {
    caps.sort_unstable_by(|a, b| b.cmp(a));
    caps.iter()
        .scan(0u64, |acc, &x| {
            *acc += x;
            Some(*acc)
        })
        .collect()
}
