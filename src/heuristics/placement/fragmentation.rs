//! Fragmentation-aware node choice, used when the instance carries a task distribution
//! ([`crate::instance::Instance::task_dist`]).
//!
//! Among the nodes (and, for a sharer, the GPUs) where a one-node job fits, the job goes where
//! its node's fragmentation against the distribution (FGD's measure,
//! [`crate::instance::task_dist::frag`]) grows least; ties go to the best-fit key of
//! [`super::best_fit`], then to the lowest index. Every node is scanned; the fragmentation
//! values come from the distribution's memo, so a node whose free resources did not change
//! since an earlier job, pass or round costs two hash look-ups.
//!
//! With the distribution's `artifact_ties` the growth is scored as the FGD artifact scores it
//! (an integer, ties to the first node of a seeded random node order), see
//! [`crate::heuristics::fgd`].
//!
//! Fragmentation is a placement rule, like best fit; the per-node MIP prices it separately
//! ([`crate::model::fragmentation`]).

use super::free::node_free;
use super::nodes::Nodes;
use crate::assignment::GpuSet;
use crate::instance::task_dist::{artifact_rank, artifact_score, NodeFree, TaskDist};
use crate::instance::{NodeIx, PendingJob};
use crate::round_state::RoundState;
use crate::state::resource_share;
use crate::units::{MILLI_PER_GPU, TOLERANCE};

/// The best option so far: (score, tie key led by the node's rank, the option).
type Best<K, V> = Option<(f64, (u64, K), V)>;

/// Keep `cand` when it beats `best`: smaller growth of fragmentation (by more than
/// [`TOLERANCE`]), then smaller tie key. With the distribution's `artifact_ties`, the growth
/// is first turned into the FGD artifact's integer score and the key led by the node's rank
/// in the artifact-style random node order, so node choices are the artifact's.
fn offer<K: Ord + Copy, V>(
    best: &mut Best<K, V>,
    dist: &TaskDist,
    node: NodeIx,
    delta: f64,
    key: K,
    v: V,
) {
    let (delta, key) = match dist.artifact_ties {
        Some(seed) => (
            -(artifact_score(delta) as f64),
            (artifact_rank(seed, node), key),
        ),
        None => (delta, (0, key)),
    };
    let better = match best {
        None => true,
        Some((bd, bk, _)) => delta < *bd - TOLERANCE || (delta <= *bd + TOLERANCE && key < *bk),
    };
    if better {
        *best = Some((delta, key, v));
    }
}

/// Growth of node fragmentation when `take` milli are taken from GPUs at the free levels
/// `levels` (one entry per GPU used) and `cpu`, `mem` from the node.
pub fn growth(
    dist: &TaskDist,
    before: &NodeFree,
    levels: &[u32],
    take: u32,
    cpu: u64,
    mem: u64,
) -> f64 {
    let mut after = before.clone();
    for &lvl in levels {
        if let Some(p) = after.free.iter().position(|&x| x == lvl) {
            after.free[p] = lvl.saturating_sub(take);
        }
    }
    after.free.sort_unstable_by(|a, b| b.cmp(a));
    if let Some(c) = after.cpu.as_mut() {
        *c -= cpu as i64;
    }
    if let Some(m) = after.mem.as_mut() {
        *m -= mem as i64;
    }
    dist.frag_cached(&after) - dist.frag_cached(before)
}

/// The node for a whole-GPU gang on one node: least growth of fragmentation, then in use
/// before empty, fewest GPUs left, lowest index.
pub fn single_node(
    state: &RoundState,
    mask: &[bool],
    job: &PendingJob,
    dist: &TaskDist,
    nodes: Nodes,
) -> Option<NodeIx> {
    let g = job.gpus;
    let cpu = resource_share(job.cpu_milli, g, g);
    let mem = resource_share(job.memory_mib, g, g);
    let full = vec![MILLI_PER_GPU; g as usize];
    let mut best: Best<(bool, u32, NodeIx), NodeIx> = None;
    for n in nodes.iter(state.inst.nodes.len()) {
        if !mask.get(state.node_type[n]).copied().unwrap_or(false) {
            continue;
        }
        let avail = state.avail_count(n, job.priority);
        if avail < g || !state.fits_resources(n, job, g) {
            continue;
        }
        let before = node_free(state, n, job.priority);
        let delta = growth(dist, &before, &full, MILLI_PER_GPU, cpu, mem);
        offer(
            &mut best,
            dist,
            n,
            delta,
            (!state.node_in_use(n), avail - g, n),
            n,
        );
    }
    best.map(|b| b.2)
}

/// The GPU for a sharer: least growth of its node's fragmentation, then the best-fit rule
/// (a GPU already shared, left fullest, on a node in use; else a fresh GPU on the node in use
/// with the fewest free GPUs, highest free index).
pub fn sharer(
    state: &RoundState,
    mask: &[bool],
    job: &PendingJob,
    dist: &TaskDist,
    nodes: Nodes,
) -> Option<GpuSet> {
    let m = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
    // Tie key: (fresh, milli left on the GPU, node empty, free GPUs on the node, node, GPU
    // order) where GPU order prefers the lowest index on a shared GPU, the highest on a fresh.
    type Key = (bool, u32, bool, u32, NodeIx, u32);
    let mut best: Best<Key, (NodeIx, u32)> = None;
    let mut deltas: Vec<(u32, f64)> = Vec::new();
    for n in nodes.iter(state.inst.nodes.len()) {
        let node = &state.inst.nodes[n];
        if !mask.get(state.node_type[n]).copied().unwrap_or(false)
            || !state.fits_resources(n, job, 1)
        {
            continue;
        }
        let mut before: Option<NodeFree> = None;
        deltas.clear();
        for g in 0..node.gpus {
            let Some(left) = state
                .shareable_milli(n, g, job.priority)
                .filter(|&l| l >= m)
            else {
                continue;
            };
            // GPUs of a node with the same free milli are interchangeable for fragmentation.
            let delta = match deltas.iter().find(|d| d.0 == left) {
                Some(d) => d.1,
                None => {
                    let b = before.get_or_insert_with(|| node_free(state, n, job.priority));
                    let d = growth(dist, b, &[left], m, job.cpu_milli, job.memory_mib);
                    deltas.push((left, d));
                    d
                }
            };
            let empty = !state.node_in_use(n);
            let key: Key = if state.is_shared(n, g) {
                (false, left - m, empty, 0, n, g)
            } else {
                (true, 0, empty, state.free[n], n, u32::MAX - g)
            };
            offer(&mut best, dist, n, delta, key, (n, g));
        }
    }
    best.map(|(_, _, (n, g))| GpuSet::from([(n, vec![g])]))
}

/// The node for a CPU-only job: least growth of fragmentation, then in use before empty,
/// least CPU left, lowest index.
pub fn cpu_only(
    state: &RoundState,
    job: &PendingJob,
    dist: &TaskDist,
    nodes: Nodes,
) -> Option<GpuSet> {
    let mut best: Best<(bool, i64, NodeIx), NodeIx> = None;
    for n in nodes.iter(state.inst.nodes.len()) {
        if !state.fits_resources(n, job, 0) {
            continue;
        }
        let before = node_free(state, n, job.priority);
        let delta = growth(dist, &before, &[], 0, job.cpu_milli, job.memory_mib);
        let key = (
            !state.node_in_use(n),
            state.cpu_free[n].unwrap_or(i64::MAX),
            n,
        );
        offer(&mut best, dist, n, delta, key, n);
    }
    best.map(|b| GpuSet::from([(b.2, Vec::new())]))
}
