//! What the round offers each GPU type: free GPUs, room on shared GPUs, and the GPUs of the
//! candidate victims, with their preemption variables.
//!
//! Room on a shared GPU serves sharers only, so a GPU with room r offers what the waiting
//! sharers' shares can fill of it: fill(r), the largest sum of shares (each share any number
//! of times) at most r; room below every share offers nothing. A shared GPU with a candidate
//! victim among its sharers offers all its room r, and each such victim k its own share m_k,
//! in the GPU rows with the victims (`g_kt = m_k / 1000`): preempting it frees that much. A
//! shared GPU whose sharers are all candidate victims is also a whole GPU in its node's offers
//! and slots, freed with the highest-priority sharer (an over-count: the others may stay).
//!
//! ```text
//! p_k in {0,1}   preemptible running job k is preempted (only if some pending job outranks
//!                it); in [0,1] past INTEGER_VICTIMS_LIMIT candidates (a relaxation)
//! u_n in [0,1]   some victim on node n is preempted (nodes with several victims):
//!                u_n <= sum_{k on n} p_k
//! ```

use crate::instance::{Instance, RunningJob};
use crate::model::MipModel;
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use crate::units::{gpu_units, MILLI_PER_GPU};
use good_lp::{variable, Expression, Variable};
use std::collections::{BTreeMap, BTreeSet};

/// Rounds with more candidate victims than this get continuous preemption variables.
pub const INTEGER_VICTIMS_LIMIT: usize = 200;

/// What one node offers the round: free GPUs, and the GPUs each victim there would free.
pub struct NodeOffer {
    /// The node.
    pub node: usize,
    /// Free whole GPUs.
    pub free: u32,
    /// u_n, for a node with several victims.
    pub any_victim: Option<Variable>,
    /// (GPUs, p_k) of each victim on the node.
    pub victims: Vec<(u32, Variable)>,
}

/// The round's supply of GPUs per type.
pub struct Supply {
    /// p_k per running job (`None`: not a candidate victim).
    pub preempt: Vec<Option<Variable>>,
    /// Free GPUs per type, room on shared GPUs counted in GPU units.
    pub free: Vec<f64>,
    /// Free whole GPUs per type.
    pub free_whole: Vec<f64>,
    /// Room (milli) of each shared GPU per type, with candidate victims among its sharers
    /// or not.
    pub shared_rooms: Vec<Vec<u32>>,
    /// (priority, GPUs, p_k) of the victims on each type.
    pub victims: Vec<Vec<(i64, f64, Variable)>>,
    /// Each type's nodes, as offers.
    pub node_offers: Vec<Vec<NodeOffer>>,
    /// Per node: (priority below which the GPUs are offered, GPUs): the free ones at
    /// `i64::MIN`, then each victim's.
    pub offers: Vec<Vec<(i64, u32)>>,
}

impl Supply {
    /// The priorities of the round's candidate victims (on any type or node offer).
    pub fn victim_priorities(&self) -> VictimPriorities {
        let on_types = self.victims.iter().flatten().map(|v| v.0);
        let offered = self.offers.iter().flatten().map(|o| o.0);
        let all: BTreeSet<i64> = on_types.chain(offered.filter(|&p| p != i64::MIN)).collect();
        VictimPriorities(all.into_iter().collect())
    }
}

/// The priorities of a round's candidate victims, ascending. A pending job's priority matters
/// to the aggregated model only through which of them it outranks (the GPU rows of
/// [`super::capacity`], the reach of [`super::spread`]), so jobs of many priorities that
/// outrank the same victims share a class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VictimPriorities(Vec<i64>);

impl VictimPriorities {
    /// How many priorities.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The priority standing for `p` in the model: the lowest victim priority at or above it
    /// (`i64::MAX` above them all). A victim of priority v is below it exactly when v < p,
    /// and it is at most a victim's priority exactly when p is: every comparison the model
    /// makes gives what `p` gives.
    pub fn stand_in(&self, p: i64) -> i64 {
        let i = self.0.partition_point(|&v| v < p);
        self.0.get(i).copied().unwrap_or(i64::MAX)
    }

    /// At most `bands` of these priorities, evenly spaced from the lowest, the highest kept:
    /// a job's stand-in among them is at or above its stand-in among all, so its class
    /// outranks at least the victims it does (a relaxation: more reach, fewer GPU rows).
    pub fn banded(&self, bands: usize) -> Self {
        let n = self.0.len();
        if n <= bands || bands == 0 {
            return self.clone();
        }
        let kept = (1..=bands).map(|i| self.0[i * n / bands - 1]);
        VictimPriorities(kept.collect())
    }
}

/// The shares (milli) the waiting sharers ask, each once, ascending.
pub fn waiting_shares(inst: &Instance) -> Vec<u32> {
    let mut shares: Vec<u32> = inst.pending.iter().filter_map(|j| j.gpu_milli).collect();
    shares.sort_unstable();
    shares.dedup();
    shares
}

/// fill(r) for every room r of one GPU: the largest sum of the waiting sharers' shares, each
/// any number of times, at most r (milli).
fn sharer_fill(inst: &Instance) -> Vec<u32> {
    let shares = waiting_shares(inst);
    let top = MILLI_PER_GPU as usize;
    let mut reachable = vec![false; top + 1];
    reachable[0] = true;
    for r in 1..=top {
        reachable[r] = shares
            .iter()
            .any(|&m| m as usize <= r && reachable[r - m as usize]);
    }
    let mut fill = vec![0u32; top + 1];
    for r in 1..=top {
        fill[r] = if reachable[r] { r as u32 } else { fill[r - 1] };
    }
    fill
}

/// The supply, adding p_k (binary while few, `integer`) and u_n to the model.
pub fn build(
    inst: &Instance,
    topo: &Topology,
    before: &ClusterState,
    integer: bool,
    m: &mut MipModel,
) -> Supply {
    let ntypes = topo.type_names.len();
    let top_priority = inst.pending.iter().map(|j| j.priority).max();
    let can_be_victim = |r: &RunningJob| {
        inst.policy.preemption && r.preemptible && top_priority.is_some_and(|t| t > r.priority)
    };
    let integer_victims = integer
        && inst.running.iter().filter(|r| can_be_victim(r)).count() <= INTEGER_VICTIMS_LIMIT;
    let preempt: Vec<Option<Variable>> = inst
        .running
        .iter()
        .map(|r| {
            can_be_victim(r).then(|| {
                let def = variable().min(0).max(1);
                m.problem
                    .add(if integer_victims { def.integer() } else { def })
            })
        })
        .collect();
    let mut supply = Supply {
        preempt,
        free: vec![0.0f64; ntypes],
        free_whole: vec![0.0f64; ntypes],
        shared_rooms: vec![Vec::new(); ntypes],
        victims: vec![Vec::new(); ntypes],
        node_offers: (0..ntypes).map(|_| Vec::new()).collect(),
        offers: vec![Vec::new(); inst.nodes.len()],
    };
    let fill = sharer_fill(inst);
    for (n, gpus) in before.gpus.iter().enumerate() {
        node(inst, topo.node_type[n], n, gpus, &fill, &mut supply, m);
    }
    supply
}

/// A shared GPU of type t (its sharers `jobs` hold `milli`): fill(room), or, with candidate
/// victims among its sharers, all its room and each victim's share.
fn shared_gpu(
    inst: &Instance,
    t: usize,
    jobs: &[usize],
    milli: u32,
    fill: &[u32],
    supply: &mut Supply,
) {
    let room = MILLI_PER_GPU - milli.min(MILLI_PER_GPU);
    supply.shared_rooms[t].push(room);
    let victims: Vec<(usize, Variable)> = jobs
        .iter()
        .filter_map(|&k| supply.preempt[k].map(|p| (k, p)))
        .collect();
    if victims.is_empty() {
        supply.free[t] += gpu_units(fill[room as usize]);
        return;
    }
    supply.free[t] += gpu_units(room);
    for (k, p) in victims {
        let share = inst.running[k].gpu_milli.unwrap_or(MILLI_PER_GPU);
        supply.victims[t].push((inst.running[k].priority, gpu_units(share), p));
    }
}

/// The sharer that stands for a shared GPU in its node's offers and slots when every sharer on
/// it is a candidate victim (preempting them all frees the GPU whole): the one of highest
/// priority (then the lowest index). Counting the GPU free whenever that one sharer is
/// preempted over-counts (the others may stay), so the slots and reach stay upper bounds;
/// `None` when some sharer is not a candidate victim.
fn whole_when_shared_victims_go(
    inst: &Instance,
    jobs: &[usize],
    preempt: &[Option<Variable>],
) -> Option<usize> {
    if jobs.is_empty() || jobs.iter().any(|&k| preempt[k].is_none()) {
        return None;
    }
    jobs.iter()
        .copied()
        .max_by_key(|&k| (inst.running[k].priority, std::cmp::Reverse(k)))
}

/// Node n's share of the supply of its type t.
fn node(
    inst: &Instance,
    t: usize,
    n: usize,
    gpus: &[GpuUse],
    fill: &[u32],
    supply: &mut Supply,
    m: &mut MipModel,
) {
    let mut pot = 0;
    let mut by_victim: BTreeMap<usize, u32> = BTreeMap::new();
    // GPUs that preempting every sharer on them frees whole, by the sharer that stands for
    // them in the node's offers and slots (see `whole_when_shared_victims_go`).
    let mut by_sharer: BTreeMap<usize, u32> = BTreeMap::new();
    for u in gpus {
        match u {
            GpuUse::Free => {
                supply.free[t] += 1.0;
                supply.free_whole[t] += 1.0;
                pot += 1;
            }
            GpuUse::Shared { jobs, milli } => {
                shared_gpu(inst, t, jobs, *milli, fill, supply);
                if let Some(k) = whole_when_shared_victims_go(inst, jobs, &supply.preempt) {
                    *by_sharer.entry(k).or_default() += 1;
                    pot += 1;
                }
            }
            GpuUse::Whole(k) if supply.preempt[*k].is_some() => {
                *by_victim.entry(*k).or_default() += 1;
                pot += 1;
            }
            _ => {}
        }
    }
    // The node's offers and slots count both; the GPU rows count a sharer's share instead
    // (`shared_gpu`).
    let mut slot_victims = by_victim.clone();
    for (k, g) in by_sharer {
        *slot_victims.entry(k).or_default() += g;
    }
    let free = pot - slot_victims.values().sum::<u32>();
    supply.offers[n].push((i64::MIN, free));
    for (&k, &g) in &slot_victims {
        supply.offers[n].push((inst.running[k].priority, g));
    }
    // u_n: whether any victim on the node is preempted (several victims share the GPUs
    // left over past the node's last full slot, counted once).
    let any_victim = (slot_victims.len() > 1).then(|| {
        let u = m.problem.add(variable().min(0).max(1));
        let mut sum_p = Expression::from(0.0);
        for &k in slot_victims.keys() {
            sum_p += supply.preempt[k].expect("a victim");
        }
        m.constraints.push((u - sum_p).leq(0.0));
        u
    });
    supply.node_offers[t].push(NodeOffer {
        node: n,
        free,
        any_victim,
        victims: slot_victims
            .iter()
            .map(|(&k, &g)| (g, supply.preempt[k].expect("a victim")))
            .collect(),
    });
    for (k, g) in by_victim {
        supply.victims[t].push((
            inst.running[k].priority,
            g as f64,
            supply.preempt[k].expect("a victim"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;

    /// GPU 0 shared by a kept sharer (room 450), GPU 1 by a preemptible one (room 600) that
    /// the waiting sharers outrank; the waiting sharers ask 250, 300 and 500.
    const SHARED: &str = "
nodes:
  - {name: n1, gpus: 2}
running:
  - {id: kept, gpus: {n1: [0]}, gpu_milli: 550, priority: 9}
  - {id: victim, gpus: {n1: [1]}, gpu_milli: 400, priority: 0, preemptible: true}
pending:
  - {id: a, gpus: 1, gpu_milli: 250, priority: 5}
  - {id: b, gpus: 1, gpu_milli: 300, priority: 5}
  - {id: c, gpus: 1, gpu_milli: 500, priority: 5}
";

    #[test]
    fn room_counts_what_the_waiting_shares_can_fill() {
        let inst = parse_instance(SHARED, "shared", &ModelLibrary::builtin()).unwrap();
        let fill = sharer_fill(&inst);
        assert_eq!(fill[200], 0);
        assert_eq!(fill[450], 300);
        assert_eq!(fill[550], 550);
        assert_eq!(fill[999], 900);
        assert_eq!(fill[1000], 1000);
    }

    #[test]
    fn a_shared_gpu_offers_its_fill_or_its_room_and_its_victims_shares() {
        let inst = parse_instance(SHARED, "shared", &ModelLibrary::builtin()).unwrap();
        let topo = Topology::new(&inst);
        let before = ClusterState::new(&inst);
        let mut m = MipModel::empty();
        let supply = build(&inst, &topo, &before, true, &mut m);
        // GPU 0: fill(450) = 300; GPU 1: all of its 600, and the victim's 400 when preempted.
        assert!((supply.free[0] - 0.9).abs() < 1e-9, "{}", supply.free[0]);
        let victims: Vec<(i64, f64)> = supply.victims[0].iter().map(|v| (v.0, v.1)).collect();
        assert_eq!(victims, vec![(0, 0.4)]);
        // In the node's offers and slots GPU 1 is freed whole with its only sharer; GPU 0,
        // whose sharer stays, is not offered at all.
        assert_eq!(supply.offers[0], vec![(i64::MIN, 0), (0, 1)]);
        let offer = &supply.node_offers[0][0];
        assert_eq!(offer.free, 0);
        assert_eq!(
            offer.victims.iter().map(|v| v.0).collect::<Vec<_>>(),
            vec![1]
        );
    }

    /// A priority stands for itself among the victims' (the lowest at or above it), and in
    /// bands for one at or above that: it outranks the victims it did, perhaps more.
    #[test]
    fn stand_ins_keep_or_widen_the_victims_a_job_outranks() {
        let all = VictimPriorities(vec![1, 3, 5, 7]);
        let stand = |v: &VictimPriorities| (-1..=9).map(|p| v.stand_in(p)).collect::<Vec<_>>();
        let m = i64::MAX;
        assert_eq!(stand(&all), vec![1, 1, 1, 3, 3, 5, 5, 7, 7, m, m]);
        let two = all.banded(2);
        assert_eq!(two.0, vec![3, 7]);
        for (p, (a, b)) in (-1..=9).zip(stand(&all).into_iter().zip(stand(&two))) {
            assert!(b >= a, "priority {p}: banded {b} below {a}");
            // Every victim the job outranks stays below its stand-in.
            for &v in &all.0 {
                assert!(
                    v >= p || v < b,
                    "priority {p} outranks {v}, its stand-in {b} not"
                );
            }
        }
        assert_eq!(all.banded(1).0, vec![7]);
        assert_eq!(all.banded(9).0, all.0);
    }
}
