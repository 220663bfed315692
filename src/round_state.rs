//! Working state of a round while a planner builds its [`Assignment`]: which GPUs are taken,
//! which running jobs are preempted (their GPUs usable only by strictly higher-priority work),
//! CPU and memory left, GPUs each tenant holds. Per-node counts make the questions a planner
//! asks for every node (how many GPUs may this job take here, is the node in use) O(1). A gang
//! is placed whole: its placement is found first and committed at once. Trial changes
//! (preemptions, commits, releases) go through a [`Transaction`], which undoes them exactly
//! unless it is kept.

use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx, PendingJob};
use crate::state::{gpus_within_resources, resource_share, ClusterState, GpuUse};
use crate::topology::choose_indices;
use crate::units::{MILLI_PER_GPU, TOLERANCE};

/// The working state.
#[derive(Debug, Clone)]
pub struct RoundState<'a> {
    /// The instance.
    pub inst: &'a Instance,
    /// Occupancy before the round.
    pub before: &'a ClusterState,
    /// Pending job that took each whole GPU this round.
    pub taken: Vec<Vec<Option<usize>>>,
    /// Milli added this round by new sharers, per GPU.
    pub shared_added: Vec<Vec<u32>>,
    /// Running jobs preempted so far.
    pub preempted: Vec<bool>,
    /// CPU left per node.
    pub cpu_free: Vec<Option<i64>>,
    /// Memory left per node.
    pub mem_free: Vec<Option<i64>>,
    /// GPUs held per tenant.
    pub held: Vec<f64>,
    /// Free whole GPUs per node (free before the round and not taken since).
    pub free: Vec<u32>,
    /// GPUs of preempted whole-GPU jobs not taken yet, per node, with the victim's priority,
    /// by GPU index.
    pub freed: Vec<Vec<(u32, i64)>>,
    /// Busy usable GPUs per node (held by kept running jobs, shared, or taken this round).
    pub busy: Vec<u32>,
    /// GPUs shared before the round or opened for sharing in it.
    pub shared: std::collections::BTreeSet<(NodeIx, u32)>,
    /// The shared GPUs no preempted job shares, by (milli left, node empty, node, GPU): the
    /// best-fit lookup of a sharer in O(log n) (their room does not depend on the sharer's
    /// priority).
    pub shared_by_room: std::collections::BTreeSet<SharedRoom>,
    /// The shared GPUs a preempted job shares: their room depends on the sharer's priority
    /// ([`RoundState::shareable_milli`]), so they are looked at one by one.
    pub shared_with_victims: std::collections::BTreeSet<(NodeIx, u32)>,
    shared_room_key: std::collections::BTreeMap<(NodeIx, u32), SharedRoom>,
    /// GPU type id of each node (index into the sorted distinct type names).
    pub node_type: Vec<usize>,
    /// Per type id: nodes keyed by (not in use, free GPUs, node): best-fit lookups in O(log n).
    pub by_free: Vec<std::collections::BTreeSet<(bool, u32, NodeIx)>>,
    /// Nodes holding GPUs freed by preemption and not yet taken.
    pub freed_nodes: std::collections::BTreeSet<NodeIx>,
    /// Per type id: nodes with a free whole GPU, whatever CPU and memory they have left (the
    /// multi-node gang search's scan, [`RoundState::nodes_with_whole_gpus`]).
    with_free: Vec<std::collections::BTreeSet<NodeIx>>,
    /// Per rack and type id: free whole GPUs ([`RoundState::free_in_rack`]), and per node the
    /// free count filed there.
    free_by_rack: Vec<Vec<u32>>,
    free_filed: Vec<u32>,
    /// Per rack and type id: the nodes that may have a whole GPU for some job (free, or freed
    /// by preemption), by CPU left and by memory left (`i64::MAX` where the node has no size
    /// for it), and per node what was filed there ([`RoundState::rack_may_fit`]).
    room_by_rack: Vec<Vec<RackRoom>>,
    /// Per rack: the type ids its nodes have (an index into `room_by_rack[rack]`'s types).
    types_in_rack: Vec<Vec<usize>>,
    room_filed: Vec<Option<(i64, i64)>>,
    index_key: Vec<(bool, u32)>,
    /// The least CPU and memory per GPU any pending job holding GPUs asks (0: none asks any):
    /// a node left with less than that per free GPU strands those GPUs.
    pub least_per_gpu: (u64, u64),
    /// The least GPU share (milli) any pending sharer asks ([`crate::units::MILLI_PER_GPU`]
    /// when none waits): a shared GPU left with less room than that is room no sharer takes.
    pub least_sharer_milli: u32,
    /// The decisions so far.
    pub assignment: Assignment,
}

/// The nodes of one rack and GPU type that may have a whole GPU for some job, by CPU left
/// and by memory left ([`RoundState::rack_may_fit`]).
#[derive(Debug, Clone, Default)]
struct RackRoom {
    cpu: std::collections::BTreeSet<(i64, NodeIx)>,
    mem: std::collections::BTreeSet<(i64, NodeIx)>,
    /// The most CPU and the most memory any of them has left (`None` where none is filed).
    most: Option<(i64, i64)>,
}

impl RackRoom {
    /// Take node n's entries out (as filed: `filed`), file it with `now` (if any), and keep
    /// `most` up to date.
    fn refile(&mut self, n: NodeIx, filed: Option<(i64, i64)>, now: Option<(i64, i64)>) {
        if filed == now {
            return;
        }
        if let Some((cpu, mem)) = filed {
            self.cpu.remove(&(cpu, n));
            self.mem.remove(&(mem, n));
        }
        if let Some((cpu, mem)) = now {
            self.cpu.insert((cpu, n));
            self.mem.insert((mem, n));
        }
        self.most = self
            .cpu
            .last()
            .zip(self.mem.last())
            .map(|(c, m)| (c.0, m.0));
    }
}

/// A shared GPU's key in [`RoundState::shared_by_room`]: milli left, whether its node is
/// empty, node, GPU.
pub type SharedRoom = (u32, bool, NodeIx, u32);

impl<'a> RoundState<'a> {
    /// The round with `plan` applied: its victims preempted and its jobs committed.
    pub fn with_plan(inst: &'a Instance, before: &'a ClusterState, plan: &Assignment) -> Self {
        let mut state = RoundState::new(inst, before);
        for &k in &plan.preempted {
            state.preempt(k);
        }
        for (&j, gpus) in &plan.placed {
            state.commit(j, gpus.clone());
        }
        state
    }

    /// A round with nothing decided.
    pub fn new(inst: &'a Instance, before: &'a ClusterState) -> Self {
        let mut held = vec![0.0; inst.tenants.len()];
        for r in &inst.running {
            held[r.tenant] += r.gpu_equivalent();
        }
        let free = (0..inst.nodes.len())
            .map(|n| before.free_count(n))
            .collect();
        let busy = (0..inst.nodes.len())
            .map(|n| before.node_busy_count(n))
            .collect();
        let shared = before
            .gpus
            .iter()
            .enumerate()
            .flat_map(|(n, gs)| {
                gs.iter()
                    .enumerate()
                    .filter(|(_, u)| matches!(u, GpuUse::Shared { .. }))
                    .map(move |(g, _)| (n, g as u32))
            })
            .collect();
        let mut types: Vec<&str> = inst.nodes.iter().map(|n| n.gpu_type.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        let node_type: Vec<usize> = inst
            .nodes
            .iter()
            .map(|n| types.binary_search(&n.gpu_type.as_str()).unwrap_or(0))
            .collect();
        let free: Vec<u32> = free;
        let busy: Vec<u32> = busy;
        let mut state = RoundState {
            least_per_gpu: least_per_gpu(inst),
            least_sharer_milli: least_sharer_milli(inst),
            by_free: vec![std::collections::BTreeSet::new(); types.len()],
            with_free: vec![std::collections::BTreeSet::new(); types.len()],
            free_by_rack: vec![
                vec![0; types.len()];
                inst.nodes.iter().map(|n| n.rack + 1).max().unwrap_or(0)
            ],
            free_filed: vec![0; inst.nodes.len()],
            room_by_rack: vec![
                vec![RackRoom::default(); types.len()];
                inst.nodes.iter().map(|n| n.rack + 1).max().unwrap_or(0)
            ],
            room_filed: vec![None; inst.nodes.len()],
            types_in_rack: Vec::new(),
            node_type,
            freed_nodes: Default::default(),
            index_key: vec![(false, 0); inst.nodes.len()],
            shared_by_room: Default::default(),
            shared_with_victims: Default::default(),
            shared_room_key: Default::default(),
            shared,
            free,
            freed: vec![Vec::new(); inst.nodes.len()],
            busy,
            inst,
            before,
            taken: inst
                .nodes
                .iter()
                .map(|n| vec![None; n.gpus as usize])
                .collect(),
            shared_added: inst
                .nodes
                .iter()
                .map(|n| vec![0; n.gpus as usize])
                .collect(),
            preempted: vec![false; inst.running.len()],
            cpu_free: before.cpu_free.clone(),
            mem_free: before.mem_free.clone(),
            held,
            assignment: Assignment::default(),
        };
        state.types_in_rack = vec![Vec::new(); state.free_by_rack.len()];
        for n in 0..inst.nodes.len() {
            let in_rack = &mut state.types_in_rack[inst.nodes[n].rack];
            if !in_rack.contains(&state.node_type[n]) {
                in_rack.push(state.node_type[n]);
            }
        }
        for n in 0..inst.nodes.len() {
            let key = state.index_key_of(n);
            state.index_key[n] = key;
            state.by_free[state.node_type[n]].insert((key.0, key.1, n));
            if state.free[n] > 0 {
                state.with_free[state.node_type[n]].insert(n);
            }
            state.file_free_in_rack(n);
            state.refile_shared(n);
        }
        state
    }

    /// File node n in its rack's counts: its free GPUs (the difference from what was filed
    /// before) and, where it may have a whole GPU for some job, its CPU and memory left in the
    /// rack's room index ([`RoundState::rack_may_fit`]).
    fn file_free_in_rack(&mut self, n: NodeIx) {
        let (rack, t) = (self.inst.nodes[n].rack, self.node_type[n]);
        let sum = &mut self.free_by_rack[rack][t];
        *sum = *sum - self.free_filed[n] + self.free[n];
        self.free_filed[n] = self.free[n];
        let left = |r: Option<i64>| r.unwrap_or(i64::MAX);
        let now = (self.free[n] > 0 || !self.freed[n].is_empty())
            .then(|| (left(self.cpu_free[n]), left(self.mem_free[n])));
        self.room_by_rack[rack][t].refile(n, self.room_filed[n], now);
        self.room_filed[n] = now;
    }

    /// Whether some node of `rack` of a type in `mask` may offer GPU job `job` a whole GPU
    /// with the CPU and memory it has left: false when no node with a free or freed GPU has
    /// the CPU one GPU of the job needs, or none the memory, so the rack's nodes need not be
    /// looked at (every one would offer none, [`RoundState::gpus_fitting`]).
    pub fn rack_may_fit(&self, rack: usize, mask: &[bool], job: &PendingJob) -> bool {
        let per_gpu = |total: u64| match total {
            0 => i64::MIN,
            t => t.div_ceil(u64::from(job.gpus.max(1))).min(i64::MAX as u64) as i64,
        };
        let (cpu, mem) = (per_gpu(job.cpu_milli), per_gpu(job.memory_mib));
        let Some(types) = self.types_in_rack.get(rack) else {
            return false;
        };
        types.iter().any(|&t| {
            mask.get(t).copied().unwrap_or(false)
                && self.room_by_rack[rack][t]
                    .most
                    .is_some_and(|(most_cpu, most_mem)| most_cpu >= cpu && most_mem >= mem)
        })
    }

    /// The most whole GPUs a job of priority `prio` may take on one node of a type in `mask`
    /// (a node whose CPU or memory is below what any waiting job asks per GPU counts none:
    /// no job fits a GPU there), from the per-type index in O(types x log nodes) plus the
    /// nodes holding freed GPUs.
    pub fn most_free_on_a_node(&self, mask: &[bool], prio: i64) -> u32 {
        let accepted = |t: usize| mask.get(t).copied().unwrap_or(false);
        let indexed = self
            .by_free
            .iter()
            .enumerate()
            .filter(|&(t, _)| accepted(t))
            .flat_map(|(_, set)| {
                let in_use = set.range(..(true, 0, 0)).next_back();
                let empty = set.range((true, 0, 0)..).next_back();
                [in_use, empty].into_iter().flatten().map(|k| k.1)
            });
        let freed = self
            .freed_nodes
            .iter()
            .filter(|&&n| accepted(self.node_type[n]))
            .map(|&n| self.avail_count(n, prio));
        indexed.chain(freed).max().unwrap_or(0)
    }

    /// Whole GPUs a job of priority `prio` may take in each rack, of the types in `mask`:
    /// each rack's free GPUs and those its nodes' preempted victims of lower priority left
    /// (the sum of [`RoundState::avail_count`] over its nodes), in O(racks x types) plus the
    /// nodes holding freed GPUs.
    pub fn free_by_racks(&self, mask: &[bool], prio: i64) -> Vec<u32> {
        let accepted = |t: usize| mask.get(t).copied().unwrap_or(false);
        let mut reach: Vec<u32> = self
            .free_by_rack
            .iter()
            .map(|by_type| {
                by_type
                    .iter()
                    .enumerate()
                    .filter(|&(t, _)| accepted(t))
                    .map(|(_, &f)| f)
                    .sum()
            })
            .collect();
        for &n in self.freed_nodes.iter() {
            if accepted(self.node_type[n]) {
                reach[self.inst.nodes[n].rack] += self.avail_count(n, prio) - self.free[n];
            }
        }
        reach
    }

    /// Free GPUs node n would strand after `on_node` more GPUs and their share of `job`'s CPU
    /// and memory went there: those of its free GPUs left without the CPU or memory per GPU
    /// that the least demanding waiting job asks ([`RoundState::least_per_gpu`]).
    pub fn stranded_after(&self, n: NodeIx, job: &PendingJob, on_node: u32, free: u32) -> u32 {
        let left = free.saturating_sub(on_node) as u64;
        let room = |have: Option<i64>, total: u64, least: u64| -> u64 {
            match have {
                Some(have) if least > 0 => {
                    let after = have - resource_share(total, on_node, job.gpus) as i64;
                    (after.max(0) as u64 / least).min(left)
                }
                _ => left,
            }
        };
        let (cpu, mem) = self.least_per_gpu;
        let usable = room(self.cpu_free[n], job.cpu_milli, cpu).min(room(
            self.mem_free[n],
            job.memory_mib,
            mem,
        ));
        (left - usable) as u32
    }

    /// How far node n would be from its own balance of CPU and memory to GPUs after `on_node`
    /// of the job's GPUs go there, `free` whole GPUs available: for each resource the node
    /// has a size for, |left / (size / G) - GPUs left|, in thousandths of a GPU, summed (G
    /// the node's GPUs). A node left with the resources its free GPUs need in the node's own
    /// proportion scores 0; one left with CPU but no GPUs, or GPUs but no CPU, scores high.
    pub fn imbalance_after(&self, n: NodeIx, job: &PendingJob, on_node: u32, free: u32) -> u64 {
        let gpus = self.inst.nodes[n].gpus as i128;
        let left = free.saturating_sub(on_node) as i128;
        let off = |have: Option<i64>, size: Option<u64>, total: u64| -> u64 {
            match (have, size) {
                (Some(have), Some(size)) if size > 0 && gpus > 0 => {
                    let after = (have - resource_share(total, on_node, job.gpus) as i64) as i128;
                    let size = size as i128;
                    ((after * gpus - left * size).abs() * 1000 / size) as u64
                }
                _ => 0,
            }
        };
        let node = &self.inst.nodes[n];
        off(self.cpu_free[n], node.cpu_milli, job.cpu_milli)
            + off(self.mem_free[n], node.memory_mib, job.memory_mib)
    }

    /// Whether GPU (n, g) may be given whole to a job of priority `prio`, and whether it is
    /// free without preemption (`Some(true)`), freed by preemption (`Some(false)`) or not at all.
    pub fn whole_gpu(&self, n: NodeIx, g: u32, prio: i64) -> Option<bool> {
        if self.taken[n][g as usize].is_some() || self.shared_added[n][g as usize] > 0 {
            return None;
        }
        match &self.before.gpus[n][g as usize] {
            GpuUse::Free => Some(true),
            GpuUse::Whole(k) if self.preempted[*k] && self.inst.running[*k].priority < prio => {
                Some(false)
            }
            _ => None,
        }
    }

    /// GPUs of node n a whole-GPU job of priority `prio` may take: free ones first, then freed.
    pub fn allowed_whole(&self, n: NodeIx, prio: i64) -> Vec<u32> {
        let mut free = Vec::new();
        let mut freed = Vec::new();
        for g in 0..self.inst.nodes[n].gpus {
            match self.whole_gpu(n, g, prio) {
                Some(true) => free.push(g),
                Some(false) => freed.push(g),
                None => {}
            }
        }
        free.extend(freed);
        free
    }

    /// Re-file node n in the best-fit index after its counts changed.
    fn reindex(&mut self, n: NodeIx) {
        let key = self.index_key_of(n);
        let old = self.index_key[n];
        if old != key {
            let t = self.node_type[n];
            self.by_free[t].remove(&(old.0, old.1, n));
            self.by_free[t].insert((key.0, key.1, n));
            self.index_key[n] = key;
        }
        if self.free[n] > 0 {
            self.with_free[self.node_type[n]].insert(n);
        } else {
            self.with_free[self.node_type[n]].remove(&n);
        }
        if self.freed[n].is_empty() {
            self.freed_nodes.remove(&n);
        } else {
            self.freed_nodes.insert(n);
        }
        self.file_free_in_rack(n);
        self.refile_shared(n);
    }

    /// Re-file node n's shared GPUs in [`RoundState::shared_by_room`] or
    /// [`RoundState::shared_with_victims`] after its state changed: its entries are taken out
    /// and its shared GPUs filed again.
    fn refile_shared(&mut self, n: NodeIx) {
        let on_node = (n, 0)..=(n, u32::MAX);
        let filed: Vec<((NodeIx, u32), SharedRoom)> = self
            .shared_room_key
            .range(on_node.clone())
            .map(|(&gpu, &key)| (gpu, key))
            .collect();
        for (gpu, key) in filed {
            self.shared_room_key.remove(&gpu);
            self.shared_by_room.remove(&key);
        }
        let with_victims: Vec<(NodeIx, u32)> = self
            .shared_with_victims
            .range(on_node.clone())
            .copied()
            .collect();
        for gpu in with_victims {
            self.shared_with_victims.remove(&gpu);
        }
        let gpus: Vec<u32> = self.shared.range(on_node).map(|&(_, g)| g).collect();
        for g in gpus {
            let victim_shares = match &self.before.gpus[n][g as usize] {
                GpuUse::Shared { jobs, .. } => jobs.iter().any(|&k| self.preempted[k]),
                _ => false,
            };
            if victim_shares {
                self.shared_with_victims.insert((n, g));
            } else if let Some(left) = self.shareable_milli(n, g, i64::MAX) {
                let key = (left, self.busy[n] == 0, n, g);
                self.shared_by_room.insert(key);
                self.shared_room_key.insert((n, g), key);
            }
        }
    }

    /// Node n's key in the best-fit index: whether it is empty, and its free GPUs, filed as
    /// none when it has less CPU or memory left than any pending job asks for one GPU (no job
    /// fits a GPU there, so best-fit lookups need not look at it).
    fn index_key_of(&self, n: NodeIx) -> (bool, u32) {
        let (cpu, mem) = self.least_per_gpu;
        let short = |left: Option<i64>, least: u64| left.is_some_and(|l| l < least as i64);
        let starved = short(self.cpu_free[n], cpu) || short(self.mem_free[n], mem);
        (self.busy[n] == 0, if starved { 0 } else { self.free[n] })
    }

    /// Whether node n is of a type in `mask` and has a free whole GPU or GPUs freed by
    /// preemption: one of [`RoundState::nodes_with_whole_gpus`].
    pub fn has_whole_gpus(&self, n: NodeIx, mask: &[bool]) -> bool {
        mask.get(self.node_type[n]).copied().unwrap_or(false)
            && (self.free[n] > 0 || !self.freed[n].is_empty())
    }

    /// The nodes of a type in `mask` (by type id) with a free whole GPU or GPUs freed by
    /// preemption: every node where [`RoundState::avail_count`] may be above 0, each once,
    /// by type and node index within each of the two kinds.
    pub fn nodes_with_whole_gpus<'s>(
        &'s self,
        mask: &'s [bool],
    ) -> impl Iterator<Item = NodeIx> + 's {
        let accepted = move |n: &NodeIx| mask.get(self.node_type[*n]).copied().unwrap_or(false);
        let with_free = self
            .with_free
            .iter()
            .enumerate()
            .filter(move |(t, _)| mask.get(*t).copied().unwrap_or(false))
            .flat_map(|(_, nodes)| nodes.iter().copied());
        let freed_only = self
            .freed_nodes
            .iter()
            .copied()
            .filter(move |&n| self.free[n] == 0 && accepted(&n));
        with_free.chain(freed_only)
    }

    /// How many whole GPUs of node n a job of priority `prio` may take (O(1) but for freed GPUs).
    pub fn avail_count(&self, n: NodeIx, prio: i64) -> u32 {
        self.free[n] + self.freed[n].iter().filter(|(_, p)| *p < prio).count() as u32
    }

    /// Milli still free on GPU (n, g) for a sharer of priority `prio`, if it may share it.
    pub fn shareable_milli(&self, n: NodeIx, g: u32, prio: i64) -> Option<u32> {
        if self.taken[n][g as usize].is_some() {
            return None;
        }
        let added = self.shared_added[n][g as usize];
        match &self.before.gpus[n][g as usize] {
            GpuUse::Free => Some(MILLI_PER_GPU - added),
            GpuUse::Shared { jobs, .. } => {
                // Work placed on a preempted job's GPU must outrank it (SPEC rule 5), even when
                // it would fit beside the preempted job's share.
                if jobs
                    .iter()
                    .any(|&k| self.preempted[k] && self.inst.running[k].priority >= prio)
                {
                    return None;
                }
                let kept: u32 = jobs
                    .iter()
                    .filter(|&&k| !(self.preempted[k] && self.inst.running[k].priority < prio))
                    .map(|&k| self.inst.running[k].gpu_milli.unwrap_or(0))
                    .sum();
                Some(MILLI_PER_GPU.saturating_sub(kept + added))
            }
            _ => None,
        }
    }

    /// Whether running job k may be preempted now: a sharer whose GPU already holds a job
    /// placed this round that does not outrank it may not (that job would then sit on a
    /// preempted job's GPU, SPEC rule 5).
    pub fn may_preempt(&self, k: usize) -> bool {
        let r = &self.inst.running[k];
        if r.gpu_milli.is_none() {
            return true;
        }
        let gpus: Vec<(NodeIx, u32)> = r
            .gpus
            .iter()
            .flat_map(|(n, idx)| idx.iter().map(move |&g| (*n, g)))
            .filter(|&(n, g)| self.shared_added[n][g as usize] > 0)
            .collect();
        gpus.is_empty()
            || self.assignment.placed.iter().all(|(&j, set)| {
                self.inst.pending[j].priority > r.priority
                    || !gpus
                        .iter()
                        .any(|(n, g)| set.get(n).is_some_and(|idx| idx.contains(g)))
            })
    }

    /// Whether a GPU is already shared (before or this round).
    pub fn is_shared(&self, n: NodeIx, g: u32) -> bool {
        self.shared_added[n][g as usize] > 0
            || matches!(self.before.gpus[n][g as usize], GpuUse::Shared { .. })
    }

    /// Whether node n is in use (something running or started on it).
    pub fn node_in_use(&self, n: NodeIx) -> bool {
        self.busy[n] > 0
    }

    /// Whether the job may go on node n with `on_node` GPUs there: the node has CPU and
    /// memory for them, and the round's reservations admit the job there
    /// ([`Instance::may_use_node`]). Every heuristic asks this of every node it places on.
    pub fn fits_resources(&self, n: NodeIx, job: &PendingJob, on_node: u32) -> bool {
        if !self.inst.may_use_node(job, n) {
            return false;
        }
        let cpu = resource_share(job.cpu_milli, on_node, job.gpus) as i64;
        let mem = resource_share(job.memory_mib, on_node, job.gpus) as i64;
        // A job that asks none of a resource fits it even on a node already over capacity
        // (the plan adds nothing there).
        let fits = |left: Option<i64>, need: i64| need == 0 || left.is_none_or(|l| l >= need);
        fits(self.cpu_free[n], cpu) && fits(self.mem_free[n], mem)
    }

    /// The most of `job`'s GPUs node n has CPU and memory for (and admits under the round's
    /// reservations): the largest g with [`RoundState::fits_resources`]`(n, job, g)`, 0 when
    /// none fits, `u32::MAX` when nothing limits it. A job's share of a node is
    /// ceil(total g / gpus), at most what is left exactly when g <= left gpus / total.
    pub fn gpus_fitting(&self, n: NodeIx, job: &PendingJob) -> u32 {
        if !self.inst.may_use_node(job, n) {
            return 0;
        }
        gpus_within_resources(job, self.cpu_free[n], self.mem_free[n])
    }

    /// Whole GPUs of node n free to the job ([`RoundState::avail_count`]), and how many of
    /// them it may take with the CPU and memory the node has left ([`RoundState::gpus_fitting`]).
    pub fn whole_gpus_for(&self, n: NodeIx, job: &PendingJob) -> (u32, u32) {
        match self.avail_count(n, job.priority) {
            0 => (0, 0),
            free => (free, self.gpus_fitting(n, job).min(free)),
        }
    }

    /// Whether the tenant's quota allows the job.
    pub fn quota_allows(&self, job: &PendingJob) -> bool {
        match self.inst.tenants[job.tenant].quota {
            Some(q) => self.held[job.tenant] + job.gpu_equivalent() <= q + TOLERANCE,
            None => true,
        }
    }

    /// Open a transaction: the changes made through it are undone when it is dropped, unless
    /// it is kept ([`Transaction::keep`]).
    pub fn transaction(&mut self) -> Transaction<'_, 'a> {
        Transaction {
            held: self.held.clone(),
            state: self,
            changes: Vec::new(),
            kept: false,
        }
    }

    /// Preempt a running job: its GPUs become usable by strictly higher-priority work.
    pub fn preempt(&mut self, k: usize) {
        if self.preempted[k] {
            return;
        }
        self.preempted[k] = true;
        self.adjust_for_victim(k, 1);
        self.assignment.preempted.push(k);
        self.assignment.preempted.sort_unstable();
    }

    /// Undo a preemption whose GPUs nothing has taken yet.
    pub fn unpreempt(&mut self, k: usize) {
        if !self.preempted[k] {
            return;
        }
        self.preempted[k] = false;
        self.adjust_for_victim(k, -1);
        self.assignment.preempted.retain(|&v| v != k);
    }

    fn adjust_for_victim(&mut self, k: usize, sign: i64) {
        let inst = self.inst;
        let r = &inst.running[k];
        self.held[r.tenant] -= sign as f64 * r.gpu_equivalent();
        let total = r.gpu_count();
        for (n, idx) in &r.gpus {
            let on = idx.len() as u32;
            if let Some(c) = self.cpu_free[*n].as_mut() {
                *c += sign * resource_share(r.cpu_milli, on, total) as i64;
            }
            if let Some(m) = self.mem_free[*n].as_mut() {
                *m += sign * resource_share(r.memory_mib, on, total) as i64;
            }
            let node = *n;
            if r.gpu_milli.is_some() {
                self.reindex(node);
                continue;
            }
            for &g in idx {
                if self.before.gpus[*n][g as usize] != GpuUse::Whole(k) {
                    continue;
                }
                if sign > 0 {
                    insert_freed(&mut self.freed[*n], g, r.priority);
                    self.busy[*n] -= 1;
                } else {
                    self.freed[*n].retain(|&(x, _)| x != g);
                    self.busy[*n] += 1;
                }
            }
            self.reindex(node);
        }
    }

    /// Commit a placement of pending job `j` on exactly these GPUs.
    pub fn commit(&mut self, j: usize, gpus: GpuSet) {
        let job = &self.inst.pending[j];
        for (&n, idx) in &gpus {
            for &g in idx {
                let gi = g as usize;
                let was_free = self.before.gpus[n][gi] == GpuUse::Free
                    && self.shared_added[n][gi] == 0
                    && self.taken[n][gi].is_none();
                if was_free {
                    self.free[n] -= 1;
                    self.busy[n] += 1;
                } else if job.gpu_milli.is_none() {
                    self.freed[n].retain(|&(x, _)| x != g);
                    self.busy[n] += 1;
                }
                match job.gpu_milli {
                    Some(m) => {
                        self.shared_added[n][gi] += m;
                        self.shared.insert((n, g));
                    }
                    None => self.taken[n][gi] = Some(j),
                }
            }
            let on = if job.gpus == 0 { 0 } else { idx.len() as u32 };
            if let Some(c) = self.cpu_free[n].as_mut() {
                *c -= resource_share(job.cpu_milli, on, job.gpus) as i64;
            }
            if let Some(m) = self.mem_free[n].as_mut() {
                *m -= resource_share(job.memory_mib, on, job.gpus) as i64;
            }
            self.reindex(n);
        }
        self.held[job.tenant] += job.gpu_equivalent();
        self.assignment.placed.insert(j, gpus);
    }

    /// Undo the commit of pending job `j`: its GPUs, CPU and memory are free again (GPUs freed
    /// by a preemption go back to the freed pool). Returns the GPUs it held, `None` when the job
    /// is not placed.
    pub fn release(&mut self, j: usize) -> Option<GpuSet> {
        let gpus = self.assignment.placed.remove(&j)?;
        let job = &self.inst.pending[j];
        for (&n, idx) in &gpus {
            for &g in idx {
                let gi = g as usize;
                match job.gpu_milli {
                    Some(m) => {
                        self.shared_added[n][gi] -= m;
                        if self.shared_added[n][gi] == 0 && self.before.gpus[n][gi] == GpuUse::Free
                        {
                            self.shared.remove(&(n, g));
                            self.free[n] += 1;
                            self.busy[n] -= 1;
                        }
                    }
                    None => {
                        self.taken[n][gi] = None;
                        self.busy[n] -= 1;
                        match self.before.gpus[n][gi] {
                            GpuUse::Free => self.free[n] += 1,
                            GpuUse::Whole(k) => {
                                insert_freed(&mut self.freed[n], g, self.inst.running[k].priority)
                            }
                            _ => {}
                        }
                    }
                }
            }
            let on = if job.gpus == 0 { 0 } else { idx.len() as u32 };
            if let Some(c) = self.cpu_free[n].as_mut() {
                *c += resource_share(job.cpu_milli, on, job.gpus) as i64;
            }
            if let Some(m) = self.mem_free[n].as_mut() {
                *m += resource_share(job.memory_mib, on, job.gpus) as i64;
            }
            self.reindex(n);
        }
        self.held[job.tenant] -= job.gpu_equivalent();
        Some(gpus)
    }

    /// Turn per-node GPU counts for job `j` into indices (free GPUs first, inside NVLink
    /// islands), or `None` when a node lacks the GPUs.
    pub fn pick_indices(&self, j: usize, counts: &[(NodeIx, u32)]) -> Option<GpuSet> {
        let job = &self.inst.pending[j];
        let mut set = GpuSet::new();
        for &(n, c) in counts {
            let allowed = self.allowed_whole(n, job.priority);
            let free: Vec<u32> = allowed
                .iter()
                .copied()
                .filter(|&g| self.whole_gpu(n, g, job.priority) == Some(true))
                .collect();
            let node = &self.inst.nodes[n];
            let mut pick = if free.len() >= c as usize {
                choose_indices(node, &free, c)?
            } else {
                let mut all = allowed.clone();
                all.sort_unstable();
                choose_indices(node, &all, c)?
            };
            pick.sort_unstable();
            set.insert(n, pick);
        }
        Some(set)
    }
}

/// Insert GPU g, freed by a victim of priority `prio`, into a node's freed pool (by index).
fn insert_freed(pool: &mut Vec<(u32, i64)>, g: u32, prio: i64) {
    let at = pool.partition_point(|&(x, _)| x < g);
    pool.insert(at, (g, prio));
}

/// One change made through a [`Transaction`], with what undoing it needs.
#[derive(Debug)]
enum Change {
    /// A running job was preempted.
    Preempted(usize),
    /// A preemption was undone.
    Unpreempted(usize),
    /// A pending job was committed.
    Committed(usize),
    /// A pending job was released from these GPUs.
    Released(usize, GpuSet),
}

/// A commit-or-discard guard on a [`RoundState`]: preemptions, commits and releases made
/// through it are recorded and undone in reverse order when it is dropped, unless
/// [`Transaction::keep`] was called; undoing restores the state exactly (GPUs held per tenant
/// are restored from a copy taken at the start, so no rounding remains). It reads as the round
/// state it guards.
#[derive(Debug)]
pub struct Transaction<'t, 'a> {
    state: &'t mut RoundState<'a>,
    changes: Vec<Change>,
    held: Vec<f64>,
    kept: bool,
}

impl<'a> std::ops::Deref for Transaction<'_, 'a> {
    type Target = RoundState<'a>;

    fn deref(&self) -> &RoundState<'a> {
        self.state
    }
}

impl Transaction<'_, '_> {
    /// Preempt running job k ([`RoundState::preempt`]).
    pub fn preempt(&mut self, k: usize) {
        if !self.state.preempted[k] {
            self.state.preempt(k);
            self.changes.push(Change::Preempted(k));
        }
    }

    /// Undo the preemption of running job k ([`RoundState::unpreempt`]).
    pub fn unpreempt(&mut self, k: usize) {
        if self.state.preempted[k] {
            self.state.unpreempt(k);
            self.changes.push(Change::Unpreempted(k));
        }
    }

    /// Commit pending job j, not placed yet, on these GPUs ([`RoundState::commit`]).
    pub fn commit(&mut self, j: usize, gpus: GpuSet) {
        self.state.commit(j, gpus);
        self.changes.push(Change::Committed(j));
    }

    /// Release pending job j ([`RoundState::release`]); the GPUs it held, if placed.
    pub fn release(&mut self, j: usize) -> Option<GpuSet> {
        let gpus = self.state.release(j)?;
        self.changes.push(Change::Released(j, gpus.clone()));
        Some(gpus)
    }

    /// Keep the changes made through the transaction.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Transaction<'_, '_> {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        for change in std::mem::take(&mut self.changes).into_iter().rev() {
            match change {
                Change::Preempted(k) => self.state.unpreempt(k),
                Change::Unpreempted(k) => self.state.preempt(k),
                Change::Committed(j) => {
                    self.state.release(j);
                }
                Change::Released(j, gpus) => self.state.commit(j, gpus),
            }
        }
        self.state.held.clone_from(&self.held);
    }
}

/// The least CPU and memory per GPU that a pending job holding GPUs asks (see
/// [`RoundState::least_per_gpu`]; a sharer asks all of its own for its one GPU).
fn least_per_gpu(inst: &Instance) -> (u64, u64) {
    let whole = || inst.pending.iter().filter(|j| j.gpus > 0);
    let least = |amount: fn(&PendingJob) -> u64| {
        whole()
            .map(|j| amount(j) / j.gpus as u64)
            .min()
            .unwrap_or(0)
    };
    (least(|j| j.cpu_milli), least(|j| j.memory_mib))
}

/// The least GPU share any pending sharer asks (see [`RoundState::least_sharer_milli`]).
fn least_sharer_milli(inst: &Instance) -> u32 {
    inst.pending
        .iter()
        .filter_map(|j| j.gpu_milli)
        .min()
        .unwrap_or(crate::units::MILLI_PER_GPU)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate, GenParams};
    use crate::hardware::ModelLibrary;
    use crate::instance::validate::validate;
    use std::collections::BTreeSet;

    /// A random round with running jobs, sharers and CPU-only work.
    fn round(seed: u64) -> Instance {
        let params = GenParams {
            nodes: 12,
            pending: 40,
            seed,
            nodes_per_rack: 4,
            racks_per_pod: 2,
            busy: 0.6,
            sharers: 0.25,
            ..GenParams::default()
        };
        validate(&generate(&params), &ModelLibrary::builtin()).unwrap()
    }

    /// Where pending job j fits on one node as the state stands (the first node with room).
    fn one_node(state: &RoundState, j: usize) -> Option<GpuSet> {
        let job = &state.inst.pending[j];
        if !state.quota_allows(job) || job.gpus_per_node.is_some_and(|g| g != job.gpus) {
            return None;
        }
        (0..state.inst.nodes.len())
            .filter(|&n| job.gpus == 0 || job.accepts_type(&state.inst.nodes[n].gpu_type))
            .find_map(|n| match job.gpu_milli {
                _ if job.gpus == 0 => state
                    .fits_resources(n, job, 0)
                    .then(|| GpuSet::from([(n, Vec::new())])),
                Some(m) => (0..state.inst.nodes[n].gpus)
                    .find(|&g| {
                        state
                            .shareable_milli(n, g, job.priority)
                            .is_some_and(|f| f >= m)
                    })
                    .filter(|_| state.fits_resources(n, job, 1))
                    .map(|g| GpuSet::from([(n, vec![g])])),
                None => (state.avail_count(n, job.priority) >= job.gpus
                    && state.fits_resources(n, job, job.gpus))
                .then(|| state.pick_indices(j, &[(n, job.gpus)]))
                .flatten(),
            })
    }

    /// Preemptible running jobs, every `step`-th from `from`.
    fn victims(inst: &Instance, from: usize, step: usize) -> Vec<usize> {
        (0..inst.running.len())
            .filter(|&k| inst.running[k].preemptible)
            .skip(from)
            .step_by(step)
            .collect()
    }

    /// The base of each test: some victims preempted and the first half of the jobs placed.
    fn base<'a>(inst: &'a Instance, before: &'a ClusterState) -> RoundState<'a> {
        let mut state = RoundState::new(inst, before);
        for k in victims(inst, 0, 3) {
            state.preempt(k);
        }
        for j in 0..inst.pending.len() / 2 {
            if let Some(set) = one_node(&state, j) {
                state.commit(j, set);
            }
        }
        state
    }

    /// A mix of changes through a transaction: more victims preempted (one of them undone
    /// again), every other placed job released, the second half of the jobs placed.
    fn churn(tx: &mut Transaction) {
        let inst = tx.inst;
        let more = victims(inst, 1, 3);
        for &k in &more {
            tx.preempt(k);
        }
        if let Some(&k) = more.first() {
            tx.unpreempt(k);
        }
        let placed: Vec<usize> = tx.assignment.placed.keys().copied().step_by(2).collect();
        for j in placed {
            assert!(tx.release(j).is_some());
        }
        for j in inst.pending.len() / 2..inst.pending.len() {
            if let Some(set) = one_node(tx, j) {
                tx.commit(j, set);
            }
        }
    }

    #[test]
    fn a_dropped_transaction_restores_the_state_exactly() {
        for seed in 0..8 {
            let inst = round(seed);
            let before = ClusterState::new(&inst);
            let mut state = base(&inst, &before);
            let reference = format!("{state:?}");
            let mut tx = state.transaction();
            churn(&mut tx);
            let changed = format!("{:?}", *tx) != reference;
            drop(tx);
            assert_eq!(format!("{state:?}"), reference, "seed {seed}");
            assert!(
                changed || inst.pending.is_empty(),
                "seed {seed}: the churn changed nothing"
            );
        }
    }

    #[test]
    fn a_kept_transaction_keeps_its_changes() {
        for seed in 0..8 {
            let inst = round(seed);
            let before = ClusterState::new(&inst);
            let mut state = base(&inst, &before);
            let mut tx = state.transaction();
            churn(&mut tx);
            let inside = format!("{:?}", *tx);
            tx.keep();
            assert_eq!(format!("{state:?}"), inside, "seed {seed}");
        }
    }

    #[test]
    fn undoing_releases_a_job_on_a_victims_gpus_before_the_preemption() {
        let inst = round(3);
        let before = ClusterState::new(&inst);
        let mut state = RoundState::new(&inst, &before);
        let reference = format!("{state:?}");
        let Some(&k) = victims(&inst, 0, 1).first() else {
            return;
        };
        let mut tx = state.transaction();
        tx.preempt(k);
        // A job may take the victim's GPUs inside the transaction; undoing releases it first.
        let taker = (0..inst.pending.len()).find_map(|j| {
            let set = one_node(&tx, j)?;
            let r = &inst.running[k];
            set.keys()
                .any(|n| r.gpus.iter().any(|(m, _)| m == n))
                .then_some((j, set))
        });
        if let Some((j, set)) = taker {
            tx.commit(j, set);
        }
        drop(tx);
        assert_eq!(format!("{state:?}"), reference);
    }

    /// The best-fit and sharer indices, rebuilt from the state's counts.
    fn rebuilt_indices(state: &RoundState) -> String {
        let inst = state.inst;
        let (cpu, mem) = state.least_per_gpu;
        let short = |l: Option<i64>, least: u64| l.is_some_and(|l| l < least as i64);
        let mut by_free: Vec<BTreeSet<(bool, u32, NodeIx)>> =
            vec![BTreeSet::new(); state.by_free.len()];
        let mut with_free: Vec<BTreeSet<NodeIx>> = vec![BTreeSet::new(); state.by_free.len()];
        for n in 0..inst.nodes.len() {
            let starved = short(state.cpu_free[n], cpu) || short(state.mem_free[n], mem);
            let free = if starved { 0 } else { state.free[n] };
            by_free[state.node_type[n]].insert((state.busy[n] == 0, free, n));
            if state.free[n] > 0 {
                with_free[state.node_type[n]].insert(n);
            }
        }
        let (mut by_room, mut with_victims) = (BTreeSet::new(), BTreeSet::new());
        for &(n, g) in &state.shared {
            let victim = match &state.before.gpus[n][g as usize] {
                GpuUse::Shared { jobs, .. } => jobs.iter().any(|&k| state.preempted[k]),
                _ => false,
            };
            if victim {
                with_victims.insert((n, g));
            } else if let Some(left) = state.shareable_milli(n, g, i64::MAX) {
                by_room.insert((left, state.busy[n] == 0, n, g));
            }
        }
        format!("{by_free:?} {with_free:?} {by_room:?} {with_victims:?}")
    }

    fn indices(state: &RoundState) -> String {
        format!(
            "{:?} {:?} {:?} {:?}",
            state.by_free, state.with_free, state.shared_by_room, state.shared_with_victims
        )
    }

    #[test]
    fn the_indices_follow_every_change() {
        for seed in 0..8 {
            let inst = round(seed);
            let before = ClusterState::new(&inst);
            let mut state = base(&inst, &before);
            assert_eq!(
                indices(&state),
                rebuilt_indices(&state),
                "seed {seed}, base"
            );
            let mut tx = state.transaction();
            churn(&mut tx);
            assert_eq!(indices(&tx), rebuilt_indices(&tx), "seed {seed}, churned");
            drop(tx);
            assert_eq!(
                indices(&state),
                rebuilt_indices(&state),
                "seed {seed}, undone"
            );
        }
    }

    #[test]
    fn gpus_fitting_is_the_largest_count_that_fits() {
        let mut limited = 0;
        for seed in 0..8 {
            let params = GenParams {
                nodes: 12,
                pending: 40,
                seed,
                nodes_per_rack: 4,
                busy: 0.6,
                family: crate::gen::families::Family::TightCpu,
                ..GenParams::default()
            };
            let inst = validate(&generate(&params), &ModelLibrary::builtin()).unwrap();
            let before = ClusterState::new(&inst);
            let state = base(&inst, &before);
            for job in &inst.pending {
                for n in 0..inst.nodes.len() {
                    let most = state.gpus_fitting(n, job);
                    limited += usize::from(most > 0 && most < 16);
                    for g in 1..=16u32 {
                        assert_eq!(
                            state.fits_resources(n, job, g),
                            g <= most,
                            "seed {seed}, job {}, node {n}, {g} GPUs (fitting: {most})",
                            job.id
                        );
                    }
                }
            }
        }
        assert!(limited > 0, "no node's CPU or memory limited a job");
    }
}
