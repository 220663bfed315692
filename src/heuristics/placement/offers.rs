//! What the nodes offer a gang, and how a gang is packed over the offers of one domain: the
//! pieces of the placement search ([`super::search`]) that see offers, not domains.
//!
//! An [`Offer`] is one node's GPUs free to the job and how many of them its CPU and memory
//! leave room for; an [`OfferBoard`] holds every node's offer for one search without
//! allocating per node; [`pack`] splits the gang over a domain's offers on few nodes (best fit
//! for the last piece), [`fewest_groups`] narrows offers to the fewest racks or pods that hold
//! it, and [`holdable_on_limit`] says whether any offers could hold it within its node limit.

use crate::instance::{NodeIx, PendingJob};
use crate::round_state::RoundState;

/// GPUs per node of a gang split over nodes.
pub(super) type Counts = Vec<(NodeIx, u32)>;

/// The piece of a gang a node offering `fit` GPUs may hold: `fit`, at most `gpus_per_node`.
pub(super) fn piece(job: &PendingJob, fit: u32) -> u32 {
    job.gpus_per_node.map_or(fit, |k| fit.min(k))
}

/// Whether nodes offering `fits` (GPUs each, with the CPU and memory they have left) could
/// hold the gang within its node limit: the placements [`pack`] finds never do better. With
/// `gpus_per_node` k, gpus / k nodes offering k (within the limit); otherwise, where the limit
/// is below the gang's GPUs, the largest pieces of that many nodes.
pub(super) fn holdable_on_limit(job: &PendingJob, fits: impl Iterator<Item = u32>) -> bool {
    let limit = job.node_limit();
    if let Some(per) = job.gpus_per_node {
        let need = job.gpus / per.max(1);
        return need <= limit && fits.filter(|&f| f >= per).count() >= need as usize;
    }
    if limit >= job.gpus {
        return true;
    }
    let mut largest: std::collections::BinaryHeap<std::cmp::Reverse<u32>> = Default::default();
    for f in fits {
        largest.push(std::cmp::Reverse(f));
        if largest.len() > limit as usize {
            largest.pop();
        }
    }
    largest.iter().map(|r| r.0).sum::<u32>() >= job.gpus
}

/// Split a gang over a domain's `offers` (its nodes that offer the job GPUs it has CPU and
/// memory for) on few nodes (most free GPUs first, best fit for the last piece),
/// honouring `gpus_per_node` and `max_nodes`. `free` is the GPUs free to the job in the
/// domain. Returns per-node counts and the GPUs left free in the domain.
pub(super) fn pack(
    state: &RoundState,
    job: &PendingJob,
    free: u32,
    offers: &[Offer],
) -> Option<(Counts, u32)> {
    if offers.iter().map(|o| o.fit).sum::<u32>() < job.gpus {
        return None;
    }
    let mut counts = match job.gpus_per_node {
        Some(per) => pack_even(state, job, offers, per)?,
        None => pack_fewest(job, offers.to_vec())?,
    };
    let used: u32 = counts.iter().map(|c| c.1).sum();
    counts.sort_unstable();
    Some((counts, free - used))
}

/// The offers of the fewest groups (`group_of`: each node's rack or pod) whose offers hold
/// `gpus`, the groups that offer most first (lowest index on ties); all offers where no such
/// groups exist.
pub(super) fn fewest_groups(
    offers: &[Offer],
    group_of: &[usize],
    groups: usize,
    gpus: u32,
) -> Vec<Offer> {
    let mut held = vec![0u32; groups];
    for o in offers {
        held[group_of[o.n]] += o.fit;
    }
    let mut by_held: Vec<(usize, u32)> = held
        .iter()
        .enumerate()
        .filter(|&(_, &fit)| fit > 0)
        .map(|(g, &fit)| (g, fit))
        .collect();
    by_held.sort_unstable_by_key(|&(g, fit)| (std::cmp::Reverse(fit), g));
    let mut chosen = vec![false; groups];
    let mut total = 0u32;
    for (g, fit) in by_held {
        if total >= gpus {
            break;
        }
        chosen[g] = true;
        total += fit;
    }
    offers
        .iter()
        .copied()
        .filter(|o| chosen[group_of[o.n]])
        .collect()
}

/// What one node offers a gang: its GPUs free to the job, and how many of them its CPU and
/// memory leave room for ([`RoundState::whole_gpus_for`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Offer {
    pub(super) n: NodeIx,
    pub(super) free: u32,
    pub(super) fit: u32,
}

/// What every node offers one gang search, indexed by node: a per-thread board reused from
/// search to search, so that a search allocates nothing per node of the cluster (a round of
/// 12,500 nodes runs thousands of searches). Nodes not set offer nothing ([`Offer::default`]);
/// the board is cleared of what was set when the search drops it.
pub(super) struct OfferBoard {
    by_node: Vec<Offer>,
    set: Vec<NodeIx>,
}

thread_local! {
    static SPARE_BOARD: std::cell::RefCell<Vec<Offer>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl OfferBoard {
    /// A board of `nodes` nodes offering nothing (the thread's spare one where it is free).
    pub(super) fn take(nodes: usize) -> Self {
        let mut by_node = SPARE_BOARD.with(|b| std::mem::take(&mut *b.borrow_mut()));
        by_node.resize(nodes, Offer::default());
        OfferBoard {
            by_node,
            set: Vec::new(),
        }
    }

    pub(super) fn set(&mut self, o: Offer) {
        self.by_node[o.n] = o;
        self.set.push(o.n);
    }

    pub(super) fn of(&self, n: NodeIx) -> Offer {
        self.by_node[n]
    }

    /// The offers set, in the order they were set.
    pub(super) fn offered(&self) -> impl Iterator<Item = Offer> + '_ {
        self.set.iter().map(|&n| self.by_node[n])
    }
}

impl Drop for OfferBoard {
    fn drop(&mut self) {
        for &n in &self.set {
            self.by_node[n] = Offer::default();
        }
        let board = std::mem::take(&mut self.by_node);
        SPARE_BOARD.with(|b| {
            let mut spare = b.borrow_mut();
            if spare.len() < board.len() {
                *spare = board;
            }
        });
    }
}

/// `gpus / per` nodes with `per` GPUs each: in use before empty, best fit, lowest index.
pub(super) fn pack_even(
    state: &RoundState,
    job: &PendingJob,
    offers: &[Offer],
    per: u32,
) -> Option<Counts> {
    let mut fit: Vec<Offer> = offers.iter().copied().filter(|o| o.fit >= per).collect();
    fit.sort_by_key(|o| (!state.node_in_use(o.n), o.free - per, o.n));
    let need = (job.gpus / per) as usize;
    if fit.len() < need || need as u32 > job.node_limit() {
        return None;
    }
    Some(fit[..need].iter().map(|o| (o.n, per)).collect())
}

/// Few nodes: the nodes with the most free GPUs first, each taking what its CPU and memory
/// leave room for, the last piece on the node with the fewest free GPUs (lowest index on ties)
/// that has them and the CPU and memory for them.
pub(super) fn pack_fewest(job: &PendingJob, offers: Vec<Offer>) -> Option<Counts> {
    let limit = job.node_limit();
    let most_fit = offers.iter().map(|o| o.fit).max().unwrap_or(0);
    // Most free GPUs first, even where CPU or memory let the job take fewer of them: taking
    // the largest pieces the CPU and memory allow instead (fewer nodes per gang) placed 0.2-0.4%
    // less objective on the tight-cpu and mixed 10k rounds of `gangplan bench` (it leaves
    // GPUs short of CPU behind, unused, and takes the whole ones later jobs need). A heap
    // rather than a sort: a gang takes a few of the thousands of nodes a cluster offers.
    let mut by_size: std::collections::BinaryHeap<(u32, std::cmp::Reverse<NodeIx>, usize)> = offers
        .iter()
        .enumerate()
        .map(|(i, o)| (o.free, std::cmp::Reverse(o.n), i))
        .collect();
    let mut used = vec![false; offers.len()];
    let mut counts = Vec::new();
    let mut left = job.gpus;
    while left > 0 {
        if counts.len() as u32 >= limit {
            return None;
        }
        if left <= most_fit {
            // The last piece: best fit, the fewest free GPUs (lowest index on ties) among the
            // unused offers with room for it.
            let last = (0..offers.len())
                .filter(|&i| !used[i] && offers[i].fit >= left)
                .min_by_key(|&i| (offers[i].free, offers[i].n));
            if let Some(i) = last {
                counts.push((offers[i].n, left));
                break;
            }
        }
        let (_, _, i) = by_size.pop()?;
        let take = offers[i].fit.min(left);
        counts.push((offers[i].n, take));
        used[i] = true;
        left -= take;
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;
    use rand::{Rng, SeedableRng};

    /// [`pack_fewest`] as a sort of the whole offer list defines it: most free GPUs first
    /// (lowest index on ties), the last piece on the unused offer with room for it that has
    /// the fewest free GPUs (lowest index on ties).
    fn pack_fewest_by_sorting(job: &PendingJob, mut offers: Vec<Offer>) -> Option<Counts> {
        let limit = job.node_limit();
        offers.sort_unstable_by_key(|o| (o.free, o.n));
        let most_fit = offers.iter().map(|o| o.fit).max().unwrap_or(0);
        let mut by_size: Vec<usize> = (0..offers.len()).collect();
        by_size.sort_unstable_by_key(|&i| (std::cmp::Reverse(offers[i].free), offers[i].n));
        let mut used = vec![false; offers.len()];
        let (mut counts, mut left, mut next) = (Vec::new(), job.gpus, by_size.into_iter());
        while left > 0 {
            if counts.len() as u32 >= limit {
                return None;
            }
            if left <= most_fit {
                let from = offers.partition_point(|o| o.free < left);
                let last = (from..offers.len()).find(|&i| !used[i] && offers[i].fit >= left);
                if let Some(i) = last {
                    counts.push((offers[i].n, left));
                    break;
                }
            }
            let i = next.next()?;
            let take = offers[i].fit.min(left);
            counts.push((offers[i].n, take));
            used[i] = true;
            left -= take;
        }
        Some(counts)
    }

    fn job(gpus: u32, max_nodes: Option<u32>, gpus_per_node: Option<u32>) -> PendingJob {
        let yaml = "nodes: [{name: n, gpus: 8}]\npending: [{id: j, gpus: 1}]\n";
        let inst = parse_instance(yaml, "job", &ModelLibrary::builtin()).unwrap();
        PendingJob {
            gpus,
            max_nodes,
            gpus_per_node,
            ..inst.pending[0].clone()
        }
    }

    #[test]
    fn the_heap_packing_matches_the_sorted_one() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..2000 {
            let nodes = rng.gen_range(1..40);
            let offers: Vec<Offer> = (0..nodes)
                .map(|n| {
                    let free = rng.gen_range(1..9);
                    Offer {
                        n: n * 3,
                        free,
                        fit: rng.gen_range(1..=free),
                    }
                })
                .collect();
            let gpus = rng.gen_range(2..48);
            let max_nodes = rng.gen_bool(0.5).then(|| rng.gen_range(1..12));
            let j = job(gpus, max_nodes, None);
            assert_eq!(
                pack_fewest(&j, offers.clone()),
                pack_fewest_by_sorting(&j, offers),
                "{gpus} GPUs, max_nodes {max_nodes:?}"
            );
        }
    }

    #[test]
    fn a_gang_beyond_its_node_limit_is_not_holdable() {
        // 16 GPUs on at most 3 nodes: pieces 8 + 5 + 3 hold it, 8 + 4 + 3 do not.
        let capped = job(16, Some(3), None);
        assert!(holdable_on_limit(&capped, [8, 5, 3, 2].into_iter()));
        assert!(!holdable_on_limit(&capped, [8, 4, 3, 3, 3].into_iter()));
        // 64 GPUs as 8 per node: eight nodes with room for 8, not seven.
        let shaped = job(64, None, Some(8));
        assert!(holdable_on_limit(&shaped, [8; 8].into_iter()));
        assert!(!holdable_on_limit(
            &shaped,
            [8, 8, 8, 8, 8, 8, 8, 7, 6].into_iter()
        ));
        // Without a limit below its GPUs, any offers that add up may hold it.
        assert!(holdable_on_limit(&job(16, None, None), [1; 16].into_iter()));
    }
}
