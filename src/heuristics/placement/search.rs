//! The placement search: where a job goes in a round state, or nowhere.
//!
//! A CPU-only job, a sharer and a whole-GPU gang that may sit on one node go where the
//! instance's [`NodeScorer`] puts them. A gang that needs several nodes goes to the tightest
//! domain level first (a rack-scale NVLink unit, a rack, a pod, the cluster, as far as
//! `within` allows); inside a domain on the fewest nodes, best fit for the last piece; among
//! the domains of a level, the lowest spread penalty, then the fewest nodes, the fewest GPUs
//! left free in the domain, the lowest domain index.

use super::scorer::NodeScorer;
use crate::assignment::GpuSet;
use crate::instance::{Locality, Node, NodeIx, PendingJob};
use crate::round_state::RoundState;
use crate::topology::{spread_penalty, Level, Span, Topology};
use std::cmp::Ordering;

/// How a domain's placement of a gang ranks: spread penalty (islands aside), nodes, GPUs left
/// free in the domain, domain index; lowest first.
type DomainKey = (f64, u32, u32, usize);

/// GPUs per node of a gang split over nodes.
type Counts = Vec<(NodeIx, u32)>;

/// Where job j would go in this state, or `None`.
pub fn find_placement(state: &RoundState, topo: &Topology, j: usize) -> Option<GpuSet> {
    let inst = state.inst;
    let job = &inst.pending[j];
    let scorer = NodeScorer::of(inst);
    if job.gpus == 0 {
        return scorer.cpu_only(state, job);
    }
    if job.is_sharer() {
        return scorer.sharer(state, topo, job);
    }
    let mask = topo.type_mask(job);
    if job.gpus_per_node.is_none_or(|g| g == job.gpus) {
        if let Some(n) = scorer.single_node(state, &mask, job) {
            return state.pick_indices(j, &[(n, job.gpus)]);
        }
    }
    if job.node_limit() < 2 {
        return None;
    }
    let search = GangSearch::new(state, topo, job, &mask);
    if search.fitting < job.gpus {
        return None;
    }
    let counts = search
        .levels()
        .iter()
        .find_map(|&level| search.best_at(level))?;
    state.pick_indices(j, &counts)
}

/// Domain keys in rank order.
fn rank(a: &DomainKey, b: &DomainKey) -> Ordering {
    a.0.total_cmp(&b.0)
        .then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3)))
}

/// The search for a gang over several nodes, with what one pass over the nodes says of every
/// domain.
struct GangSearch<'s, 'a> {
    state: &'s RoundState<'a>,
    topo: &'s Topology,
    job: &'s PendingJob,
    /// GPU types the job accepts.
    mask: &'s [bool],
    /// GPUs the job may take per domain, at every level.
    reach: [Vec<u32>; 4],
    /// The most GPUs one node of the domain offers (capped by `gpus_per_node`), at every level.
    widest: [Vec<u32>; 4],
    /// The fewest nodes that could hold the gang anywhere.
    fewest_nodes: u32,
    /// Whether every NVLink unit is one node (a domain's fewest nodes then bound its units).
    units_are_nodes: bool,
    /// The fewest NVLink units the gang can span.
    min_units: u32,
    /// GPUs the job could take over the whole cluster with the CPU and memory each node has
    /// left: fewer than the gang asks, and no domain holds it.
    fitting: u32,
}

impl<'s, 'a> GangSearch<'s, 'a> {
    fn new(
        state: &'s RoundState<'a>,
        topo: &'s Topology,
        job: &'s PendingJob,
        mask: &'s [bool],
    ) -> Self {
        let inst = state.inst;
        let mut reach: [Vec<u32>; 4] = std::array::from_fn(|l| vec![0; topo.domains[l].len()]);
        let mut widest: [Vec<u32>; 4] = std::array::from_fn(|l| vec![0; topo.domains[l].len()]);
        let mut fitting = 0u32;
        for n in state.nodes_with_whole_gpus(mask) {
            let a = state.avail_count(n, job.priority);
            if a > 0 {
                fitting = fitting.saturating_add(resource_cap(state, job, n, a));
                let w = job.gpus_per_node.map_or(a, |k| a.min(k));
                let at = [topo.unit_of[n], topo.rack_of[n], topo.pod_of[n], 0];
                for l in 0..4 {
                    reach[l][at[l]] += a;
                    widest[l][at[l]] = widest[l][at[l]].max(w);
                }
            }
        }
        let fewest_nodes = job.gpus.div_ceil(widest[Level::Cluster as usize][0].max(1));
        GangSearch {
            state,
            topo,
            job,
            mask,
            reach,
            widest,
            fewest_nodes,
            units_are_nodes: topo.units == inst.nodes.len(),
            min_units: topo.min_units(inst, job),
            fitting,
        }
    }

    /// The domain levels to try, tightest first, as far as `within` allows.
    fn levels(&self) -> &'static [Level] {
        match self.job.within {
            Some(Locality::Node) => &[],
            Some(Locality::Rack) => &[Level::Unit, Level::Rack],
            Some(Locality::Pod) => &[Level::Unit, Level::Rack, Level::Pod],
            None => &[Level::Unit, Level::Rack, Level::Pod, Level::Cluster],
        }
    }

    /// The best placement in one domain of `level`, or `None` when no domain holds the gang.
    /// Domains go best fit first (a domain leaves reach - gpus GPUs free): once one gives no
    /// spread penalty on the fewest nodes possible, no later domain can beat it.
    fn best_at(&self, level: Level) -> Option<Counts> {
        let reach = &self.reach[level as usize];
        let mut order: Vec<usize> = (0..reach.len())
            .filter(|&d| reach[d] >= self.job.gpus)
            .collect();
        order.sort_unstable_by_key(|&d| (reach[d], d));
        let mut best: Option<(DomainKey, Counts)> = None;
        let mut nodes: Vec<NodeIx> = Vec::new();
        for d in order {
            if best
                .as_ref()
                .is_some_and(|(b, _)| b.0 <= 0.0 && b.1 <= self.fewest_nodes)
            {
                break;
            }
            if best
                .as_ref()
                .is_some_and(|(b, _)| self.cannot_beat(level, d, b))
            {
                continue;
            }
            let members = &self.topo.domains[level as usize][d];
            // Single nodes were tried before the search.
            if level == Level::Unit && (members.len() < 2 || self.unit_leaves_within(members)) {
                continue;
            }
            nodes.clear();
            nodes.extend(
                members
                    .iter()
                    .copied()
                    .filter(|&n| self.mask[self.topo.node_type[n]]),
            );
            if let Some((counts, leftover)) = pack(self.state, self.job, &nodes) {
                let key = (self.penalty(&counts), counts.len() as u32, leftover, d);
                if best.as_ref().is_none_or(|(b, _)| rank(&key, b).is_lt()) {
                    best = Some((key, counts));
                }
            }
        }
        best.map(|(_, counts)| counts)
    }

    /// Whether domain d of `level` loses to `best` even with its best conceivable key: the
    /// fewest nodes, one rack and pod, its known leftover.
    fn cannot_beat(&self, level: Level, d: usize, best: &DomainKey) -> bool {
        let job = self.job;
        let least_nodes = job.gpus.div_ceil(self.widest[level as usize][d].max(1));
        let floor_span = Span {
            nodes: least_nodes,
            units: if self.units_are_nodes { least_nodes } else { 1 },
            racks: 1,
            pods: 1,
            island_splits: 0,
        };
        let floor = spread_penalty(
            &floor_span,
            self.min_units,
            job.gpus,
            &job.slowdown,
            self.state.inst.policy.weights.spread,
        );
        let leftover = self.reach[level as usize][d] - job.gpus;
        rank(&(floor, least_nodes, leftover, d), best).is_gt()
    }

    /// Whether an NVLink unit crosses the rack or pod the job must stay within (a unit may
    /// span racks or pods: it is tighter only inside them).
    fn unit_leaves_within(&self, members: &[NodeIx]) -> bool {
        let nodes = &self.state.inst.nodes;
        let spans = |f: fn(&Node) -> usize| {
            members
                .iter()
                .any(|&n| f(&nodes[n]) != f(&nodes[members[0]]))
        };
        match self.job.within {
            Some(Locality::Rack) => spans(|n| n.rack),
            Some(Locality::Pod) => spans(|n| n.pod),
            _ => false,
        }
    }

    /// Spread penalty of the gang on these nodes.
    fn penalty(&self, counts: &[(NodeIx, u32)]) -> f64 {
        let inst = self.state.inst;
        spread_penalty(
            &self.topo.span_of_nodes(inst, counts.iter().map(|c| c.0)),
            self.min_units,
            self.job.gpus,
            &self.job.slowdown,
            inst.policy.weights.spread,
        )
    }
}

/// Split a gang over `nodes` with the fewest nodes (largest free first, best fit for the last
/// piece), honouring `gpus_per_node` and `max_nodes`. Returns per-node counts and the GPUs
/// left free in the domain.
fn pack(state: &RoundState, job: &PendingJob, nodes: &[NodeIx]) -> Option<(Counts, u32)> {
    let avail: Vec<(NodeIx, u32)> = nodes
        .iter()
        .map(|&n| (n, state.avail_count(n, job.priority)))
        .filter(|&(_, a)| a > 0)
        .collect();
    let total: u32 = avail.iter().map(|a| a.1).sum();
    if total < job.gpus {
        return None;
    }
    let mut counts = match job.gpus_per_node {
        Some(per) => pack_even(state, job, avail, per)?,
        None => pack_fewest(state, job, &avail)?,
    };
    let used: u32 = counts.iter().map(|c| c.1).sum();
    counts.sort_unstable();
    Some((counts, total - used))
}

/// `gpus / per` nodes with `per` GPUs each: in use before empty, best fit, lowest index.
fn pack_even(
    state: &RoundState,
    job: &PendingJob,
    avail: Vec<(NodeIx, u32)>,
    per: u32,
) -> Option<Counts> {
    let mut fit: Vec<(NodeIx, u32)> = avail
        .into_iter()
        .filter(|&(n, a)| a >= per && state.fits_resources(n, job, per))
        .collect();
    fit.sort_by_key(|&(n, a)| (!state.node_in_use(n), a - per, n));
    let need = (job.gpus / per) as usize;
    if fit.len() < need || need as u32 > job.node_limit() {
        return None;
    }
    Some(fit[..need].iter().map(|&(n, _)| (n, per)).collect())
}

/// The fewest nodes, largest free first, the last piece on the smallest node that holds it.
fn pack_fewest(state: &RoundState, job: &PendingJob, avail: &[(NodeIx, u32)]) -> Option<Counts> {
    let limit = job.node_limit();
    let mut by_size = avail.to_vec();
    by_size.sort_by_key(|&(n, a)| (std::cmp::Reverse(a), n));
    let mut counts = Vec::new();
    let mut left = job.gpus;
    let mut used = std::collections::BTreeSet::new();
    while left > 0 {
        if counts.len() as u32 >= limit {
            return None;
        }
        let last = avail
            .iter()
            .filter(|&&(n, a)| {
                !used.contains(&n) && a >= left && state.fits_resources(n, job, left)
            })
            .min_by_key(|&&(n, a)| (a, n));
        if let Some(&(n, _)) = last {
            counts.push((n, left));
            break;
        }
        // The largest node left, taking what its CPU and memory leave room for (a node short
        // of CPU for all its free GPUs still takes part of the gang).
        let (n, take) = by_size
            .iter()
            .filter(|&&(n, _)| !used.contains(&n))
            .map(|&(n, a)| (n, resource_cap(state, job, n, a.min(left))))
            .find(|&(_, take)| take > 0)?;
        counts.push((n, take));
        used.insert(n);
        left -= take;
    }
    Some(counts)
}

/// The most of `job`'s GPUs, at most `most`, node n has CPU and memory for.
fn resource_cap(state: &RoundState, job: &PendingJob, n: NodeIx, most: u32) -> u32 {
    state.gpus_fitting(n, job).min(most)
}
