//! Best-fit node choice, used when the instance carries no task distribution: a one-node job
//! goes to the node it leaves fullest, nodes already in use before empty ones, passing over a
//! node that would keep free GPUs without the CPU or memory any waiting job asks; among nodes
//! left as full, the one left nearest its own CPU and memory per GPU, then the lowest index; a
//! sharer to the shared GPU it leaves fullest, else a fresh GPU on such a node.

use super::nodes::Nodes;
use crate::assignment::GpuSet;
use crate::instance::{NodeIx, PendingJob};
use crate::round_state::RoundState;
use crate::topology::Topology;
use crate::units::MILLI_PER_GPU;

/// Fitting nodes of one kind (in use, or empty) looked at per GPU type, fewest GPUs left
/// first, when the first strands GPUs ([`RoundState::stranded_after`]) or while they leave as
/// many GPUs as the best fit: a node whose CPU or memory the job would take while GPUs stay
/// free is passed over for one a little less full that keeps them usable, and of equally full
/// nodes the best balanced wins (a choice: enough to find such a node where CPU or memory
/// bind, few enough to keep the lookup cheap).
const STRANDING_CANDIDATES: usize = 8;

/// The best node for a whole gang on one node: in use before empty, then the fewest free GPUs
/// stranded without CPU or memory, then the fewest GPUs left, then the node left nearest its
/// own CPU and memory per GPU ([`RoundState::imbalance_after`]: the CPU a later job needs
/// stays beside the GPUs it needs), then the lowest index; per GPU type through the round
/// state's index, looking past the best fit while it strands GPUs or ties on GPUs left.
///
/// The balance key, measured with `gangplan bench --family all --sizes 1k,10k --time-limit 1`
/// (seeds 1 and 2, 36 rounds, each run twice without it): tight-cpu +0.13% to +0.45% on the
/// objective (10k, seed 2: gap 7.1-7.3% to 6.8%), default 1k +0.21%, sharers 1k +0.23%, mixed
/// 1k +0.1%; whole-nodes 10k seed 1 -0.12% (its two runs without it differ by 0.05%); the
/// rest within 0.02%.
pub fn single_node(state: &RoundState, mask: &[bool], job: &PendingJob) -> Option<NodeIx> {
    let g = job.gpus;
    let mut best: Option<(bool, u32, u32, u64, NodeIx)> = None;
    let mut offer = |key: (bool, u32, u32, u64, NodeIx)| {
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    };
    for (t, set) in state.by_free.iter().enumerate() {
        if !state.inst.nodes.is_empty() && !mask.get(t).copied().unwrap_or(false) {
            continue;
        }
        for empty in [false, true] {
            let fitting = set
                .range((empty, g, 0)..=(empty, u32::MAX, usize::MAX))
                .filter(|&&(_, _, n)| state.freed[n].is_empty() && state.fits_resources(n, job, g));
            let mut found = false;
            // The free count of a fit that strands nothing: no node with more free GPUs beats it.
            let mut settled: Option<u32> = None;
            for (&(e, free, n), _) in fitting.zip(0..STRANDING_CANDIDATES) {
                if settled.is_some_and(|f| free > f) {
                    break;
                }
                let stranded = state.stranded_after(n, job, g, free);
                offer((
                    e,
                    stranded,
                    free - g,
                    state.imbalance_after(n, job, g, free),
                    n,
                ));
                found = true;
                if stranded == 0 {
                    settled = Some(free);
                }
            }
            if found {
                break;
            }
        }
    }
    for &n in &state.freed_nodes {
        if !mask.get(state.node_type[n]).copied().unwrap_or(false) {
            continue;
        }
        let avail = state.avail_count(n, job.priority);
        if avail >= g && state.fits_resources(n, job, g) {
            let stranded = state.stranded_after(n, job, g, avail);
            let imbalance = state.imbalance_after(n, job, g, avail);
            offer((!state.node_in_use(n), stranded, avail - g, imbalance, n));
        }
    }
    best.map(|(_, _, _, _, n)| n)
}

/// [`single_node`] among a few listed nodes: the same key, every listed node looked at.
pub fn single_node_among(
    state: &RoundState,
    mask: &[bool],
    job: &PendingJob,
    nodes: &[NodeIx],
) -> Option<NodeIx> {
    let g = job.gpus;
    nodes
        .iter()
        .copied()
        .filter(|&n| mask.get(state.node_type[n]).copied().unwrap_or(false))
        .filter_map(|n| {
            let avail = state.avail_count(n, job.priority);
            (avail >= g && state.fits_resources(n, job, g)).then(|| {
                (
                    !state.node_in_use(n),
                    state.stranded_after(n, job, g, avail),
                    avail - g,
                    state.imbalance_after(n, job, g, avail),
                    n,
                )
            })
        })
        .min()
        .map(|key| key.4)
}

/// The GPU for a sharer: a GPU already shared, the one left fullest (least milli left after)
/// without leaving a sliver, on a node in use first; else a fresh free GPU on the best-fit node
/// in use (its highest free index, so low indices stay together for gangs). A sliver is room
/// left that is less than any waiting sharer asks ([`RoundState::least_sharer_milli`]): a
/// shared GPU that would keep room for another sharer beats the fullest fit that would waste
/// its rest, and a GPU left with a sliver still beats opening a fresh one.
pub fn sharer(state: &RoundState, topo: &Topology, job: &PendingJob) -> Option<GpuSet> {
    let m = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
    let mask = topo.type_mask(job);
    let open = |n: NodeIx| mask[topo.node_type[n]] && state.fits_resources(n, job, 1);
    let sliver = |left: u32| left > 0 && left < state.least_sharer_milli;
    // Key: leaves a sliver, milli left after, node not in use, node, GPU. The indexed GPUs
    // come in room order, so the first that admits the job is the fullest fit, and the first
    // with room for the job and one more sharer is the fullest without a sliver.
    let first_from = |room: u32| {
        state
            .shared_by_room
            .range((room, false, 0, 0)..)
            .find(|&&(_, _, n, _)| open(n))
            .map(|&(left, empty, n, g)| (sliver(left - m), left - m, empty, n, g))
    };
    let mut best = first_from(m);
    if best.is_some_and(|b| b.0) {
        if let Some(whole) = first_from(m.saturating_add(state.least_sharer_milli)) {
            best = Some(whole);
        }
    }
    for &(n, g) in &state.shared_with_victims {
        if !open(n) {
            continue;
        }
        if let Some(left) = state
            .shareable_milli(n, g, job.priority)
            .filter(|&l| l >= m)
        {
            let key = (sliver(left - m), left - m, !state.node_in_use(n), n, g);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
    }
    if let Some((_, _, _, n, g)) = best {
        return Some(GpuSet::from([(n, vec![g])]));
    }
    let n = fresh_gpu_node(state, &mask, job)?;
    let g = (0..state.inst.nodes[n].gpus)
        .rev()
        .find(|&g| state.whole_gpu(n, g, i64::MIN) == Some(true))?;
    Some(GpuSet::from([(n, vec![g])]))
}

/// [`sharer`] among a few listed nodes: the same rule, every GPU of the listed nodes looked at.
pub fn sharer_among(
    state: &RoundState,
    topo: &Topology,
    job: &PendingJob,
    nodes: &[NodeIx],
) -> Option<GpuSet> {
    let m = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
    let mask = topo.type_mask(job);
    let open: Vec<NodeIx> = nodes
        .iter()
        .copied()
        .filter(|&n| mask[topo.node_type[n]] && state.fits_resources(n, job, 1))
        .collect();
    let sliver = |left: u32| left > 0 && left < state.least_sharer_milli;
    let shared = open
        .iter()
        .flat_map(|&n| (0..state.inst.nodes[n].gpus).map(move |g| (n, g)))
        .filter(|&(n, g)| state.is_shared(n, g))
        .filter_map(|(n, g)| {
            let left = state
                .shareable_milli(n, g, job.priority)
                .filter(|&l| l >= m)?;
            Some((sliver(left - m), left - m, !state.node_in_use(n), n, g))
        })
        .min();
    if let Some((_, _, _, n, g)) = shared {
        return Some(GpuSet::from([(n, vec![g])]));
    }
    let (_, _, n) = open
        .iter()
        .filter(|&&n| state.free[n] > 0)
        .map(|&n| (!state.node_in_use(n), state.free[n], n))
        .min()?;
    let g = (0..state.inst.nodes[n].gpus)
        .rev()
        .find(|&g| state.whole_gpu(n, g, i64::MIN) == Some(true))?;
    Some(GpuSet::from([(n, vec![g])]))
}

/// The node whose free GPU a sharer opens: in use before empty, then the fewest free GPUs,
/// then the lowest index, among nodes of an accepted type with CPU and memory for it; per GPU
/// type through the round state's index.
fn fresh_gpu_node(state: &RoundState, mask: &[bool], job: &PendingJob) -> Option<NodeIx> {
    let mut best: Option<(bool, u32, NodeIx)> = None;
    for (t, set) in state.by_free.iter().enumerate() {
        if !mask.get(t).copied().unwrap_or(false) {
            continue;
        }
        for empty in [false, true] {
            let found = set
                .range((empty, 1, 0)..=(empty, u32::MAX, usize::MAX))
                .find(|&&(_, _, n)| state.fits_resources(n, job, 1));
            if let Some(&key) = found {
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
                break;
            }
        }
    }
    best.map(|(_, _, n)| n)
}

/// The node for a CPU-only job: in use before empty, least CPU left, lowest index.
pub fn cpu_only(state: &RoundState, job: &PendingJob, nodes: Nodes) -> Option<GpuSet> {
    nodes
        .iter(state.inst.nodes.len())
        .filter(|&n| state.fits_resources(n, job, 0))
        .min_by_key(|&n| {
            (
                !state.node_in_use(n),
                state.cpu_free[n].unwrap_or(i64::MAX),
                n,
            )
        })
        .map(|n| GpuSet::from([(n, Vec::new())]))
}

#[cfg(test)]
mod tests {
    use super::{sharer, sharer_among, single_node, single_node_among};
    use crate::assignment::GpuSet;
    use crate::gen::{generate, GenParams};
    use crate::hardware::ModelLibrary;
    use crate::instance::load::parse_instance;
    use crate::instance::validate::validate;
    use crate::instance::NodeIx;
    use crate::round_state::RoundState;
    use crate::state::ClusterState;
    use crate::topology::Topology;

    /// n1 is the fuller node, but the job would leave its last free GPU with 4 of the 8 CPUs
    /// the least demanding waiting job asks; n2 keeps every free GPU usable.
    const STRANDING: &str = "
nodes:
  - {name: n1, gpus: 8, cpu_milli: 64000}
  - {name: n2, gpus: 8, cpu_milli: 64000}
running:
  - {id: r1, gpus: {n1: [0, 1, 2, 3, 4, 5]}, cpu_milli: 48000}
  - {id: r2, gpus: {n2: [0, 1, 2, 3, 4]}, cpu_milli: 24000}
pending:
  - {id: heavy, gpus: 1, cpu_milli: 12000}
  - {id: light, gpus: 1, cpu_milli: 8000}
";

    #[test]
    fn the_fullest_node_is_passed_over_when_it_would_strand_gpus() {
        let inst = parse_instance(STRANDING, "stranding", &ModelLibrary::builtin()).unwrap();
        let before = ClusterState::new(&inst);
        let state = RoundState::new(&inst, &before);
        let mask = [true];
        // The heavy job strands n1's other GPU there; the light one strands nothing anywhere.
        assert_eq!(single_node(&state, &mask, &inst.pending[0]), Some(1));
        assert_eq!(single_node(&state, &mask, &inst.pending[1]), Some(0));
    }

    /// The best-fit key [`single_node_among`] ranks node n by, for a job of g GPUs.
    fn fit_key(state: &RoundState, j: usize, n: NodeIx) -> (bool, u32, u32, u64) {
        let job = &state.inst.pending[j];
        let avail = state.avail_count(n, job.priority);
        (
            !state.node_in_use(n),
            state.stranded_after(n, job, job.gpus, avail),
            avail - job.gpus,
            state.imbalance_after(n, job, job.gpus, avail),
        )
    }

    #[test]
    fn a_one_node_gang_on_listed_nodes_takes_the_best_key_among_them() {
        let mut compared = 0;
        for seed in 0..6 {
            let params = GenParams {
                nodes: 16,
                pending: 40,
                seed,
                busy: 0.5,
                ..GenParams::default()
            };
            let inst = validate(&generate(&params), &ModelLibrary::builtin()).unwrap();
            let topo = Topology::new(&inst);
            let before = ClusterState::new(&inst);
            let mut state = RoundState::new(&inst, &before);
            let every: Vec<NodeIx> = (0..inst.nodes.len()).collect();
            let odd: Vec<NodeIx> = every.iter().copied().filter(|n| n % 2 == 1).collect();
            for (j, job) in inst.pending.iter().enumerate() {
                let mask = topo.type_mask(job);
                let indexed = single_node(&state, &mask, job);
                let scanned = single_node_among(&state, &mask, job, &every);
                // The scan looks at every node, the index at a few per class: never worse.
                assert_eq!(scanned.is_some(), indexed.is_some(), "seed {seed}, job {j}");
                if let (Some(a), Some(b)) = (scanned, indexed) {
                    assert!(
                        fit_key(&state, j, a) <= fit_key(&state, j, b),
                        "seed {seed}, job {j}"
                    );
                    compared += 1;
                }
                if let Some(n) = single_node_among(&state, &mask, job, &odd) {
                    assert_eq!(n % 2, 1, "seed {seed}, job {j}: a node not listed");
                }
                if let Some(n) = indexed {
                    if let Some(set) = state.pick_indices(j, &[(n, job.gpus)]) {
                        state.commit(j, set);
                    }
                }
            }
        }
        assert!(compared > 40, "only {compared} one-node choices compared");
    }

    /// The sharer's GPU by looking at every shared GPU: the one left fullest without a sliver
    /// (room below the least waiting sharer's share), then the fullest, on a node in use first,
    /// lowest node and GPU on ties.
    fn sharer_by_scan(state: &RoundState, topo: &Topology, j: usize) -> Option<(NodeIx, u32)> {
        let job = &state.inst.pending[j];
        let m = job.gpu_milli?;
        let mask = topo.type_mask(job);
        state
            .shared
            .iter()
            .filter(|&&(n, _)| mask[topo.node_type[n]] && state.fits_resources(n, job, 1))
            .filter_map(|&(n, g)| {
                let left = state.shareable_milli(n, g, job.priority)?;
                let rest = left.checked_sub(m)?;
                let sliver = rest > 0 && rest < state.least_sharer_milli;
                Some((sliver, rest, !state.node_in_use(n), n, g))
            })
            .min()
            .map(|(_, _, _, n, g)| (n, g))
    }

    /// Place every sharer of the round where [`sharer`] puts it, checking each choice against
    /// the scan of every shared GPU (with victims preempted, and every other sharer released
    /// again half way); the number of choices compared.
    fn place_sharers(seed: u64) -> usize {
        let params = GenParams {
            nodes: 12,
            pending: 40,
            seed,
            nodes_per_rack: 4,
            busy: 0.6,
            sharers: 0.4,
            ..GenParams::default()
        };
        let inst = validate(&generate(&params), &ModelLibrary::builtin()).unwrap();
        let topo = Topology::new(&inst);
        let before = ClusterState::new(&inst);
        let mut state = RoundState::new(&inst, &before);
        let victims = (0..inst.running.len()).filter(|&k| inst.running[k].preemptible);
        for k in victims.step_by(3) {
            state.preempt(k);
        }
        let sharers: Vec<usize> = (0..inst.pending.len())
            .filter(|&j| inst.pending[j].is_sharer())
            .collect();
        let mut compared = 0;
        for (i, &j) in sharers.iter().enumerate() {
            if i == sharers.len() / 2 {
                for &r in sharers[..i].iter().step_by(2) {
                    state.release(r);
                }
            }
            let got = sharer(&state, &topo, &inst.pending[j]);
            let every: Vec<NodeIx> = (0..inst.nodes.len()).collect();
            assert_eq!(
                sharer_among(&state, &topo, &inst.pending[j], &every),
                got,
                "seed {seed}, job {j}: the scan of every node chose otherwise"
            );
            if let Some((n, g)) = sharer_by_scan(&state, &topo, j) {
                assert_eq!(
                    got,
                    Some(GpuSet::from([(n, vec![g])])),
                    "seed {seed}, job {j}"
                );
                compared += 1;
            }
            if let Some(set) = got {
                state.commit(j, set);
            }
        }
        compared
    }

    /// GPU 0 has 450 milli of room, GPU 1 has 700; the waiting sharers ask 250 and 300.
    const SLIVERS: &str = "
nodes:
  - {name: n1, gpus: 8}
running:
  - {id: r1, gpus: {n1: [0]}, gpu_milli: 550}
  - {id: r2, gpus: {n1: [1]}, gpu_milli: 300}
pending:
  - {id: quarter, gpus: 1, gpu_milli: 250}
  - {id: exact, gpus: 1, gpu_milli: 450}
  - {id: big, gpus: 1, gpu_milli: 300}
";

    #[test]
    fn a_sharer_leaves_no_sliver_where_another_shared_gpu_admits_it() {
        let inst = parse_instance(SLIVERS, "slivers", &ModelLibrary::builtin()).unwrap();
        let topo = Topology::new(&inst);
        let before = ClusterState::new(&inst);
        let state = RoundState::new(&inst, &before);
        assert_eq!(state.least_sharer_milli, 250);
        let gpu = |j: usize| sharer(&state, &topo, &inst.pending[j]).unwrap();
        // 250 in GPU 0 would leave 200, below any waiting sharer: GPU 1 keeps 450.
        assert_eq!(gpu(0), GpuSet::from([(0, vec![1])]));
        // An exact fit leaves nothing and is the fullest.
        assert_eq!(gpu(1), GpuSet::from([(0, vec![0])]));
        // 300 leaves a sliver of 150 in GPU 0 and 400 in GPU 1.
        assert_eq!(gpu(2), GpuSet::from([(0, vec![1])]));
    }

    #[test]
    fn a_sharer_goes_to_the_fullest_shared_gpu_that_admits_it() {
        let compared: usize = (0..8).map(place_sharers).sum();
        assert!(
            compared > 20,
            "only {compared} sharers had a shared GPU to go to"
        );
    }
}
