//! Working state of a round while a planner builds its [`Assignment`]: which GPUs are taken,
//! which running jobs are preempted (their GPUs usable only by strictly higher-priority work),
//! CPU and memory left, GPUs each tenant holds. Per-node counts make the questions a planner
//! asks for every node (how many GPUs may this job take here, is the node in use) O(1). A gang
//! is placed as a transaction: its placement is found first and committed whole, and trial
//! preemptions are undone exactly ([`RoundState::unpreempt`]) when the gang does not fit.

use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx, PendingJob};
use crate::state::{resource_share, ClusterState, GpuUse};
use crate::topology::choose_indices;

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
    /// GPUs of preempted whole-GPU jobs not taken yet, per node, with the victim's priority.
    pub freed: Vec<Vec<(u32, i64)>>,
    /// Busy usable GPUs per node (held by kept running jobs, shared, or taken this round).
    pub busy: Vec<u32>,
    /// GPUs shared before the round or opened for sharing in it.
    pub shared: std::collections::BTreeSet<(NodeIx, u32)>,
    /// GPU type id of each node (index into the sorted distinct type names).
    pub node_type: Vec<usize>,
    /// Per type id: nodes keyed by (not in use, free GPUs, node): best-fit lookups in O(log n).
    pub by_free: Vec<std::collections::BTreeSet<(bool, u32, NodeIx)>>,
    /// Nodes holding GPUs freed by preemption and not yet taken.
    pub freed_nodes: std::collections::BTreeSet<NodeIx>,
    index_key: Vec<(bool, u32)>,
    /// The decisions so far.
    pub assignment: Assignment,
}

impl<'a> RoundState<'a> {
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
        let mut by_free = vec![std::collections::BTreeSet::new(); types.len()];
        let index_key: Vec<(bool, u32)> = (0..inst.nodes.len())
            .map(|n| (busy[n] == 0, free[n]))
            .collect();
        for n in 0..inst.nodes.len() {
            by_free[node_type[n]].insert((index_key[n].0, index_key[n].1, n));
        }
        RoundState {
            node_type,
            by_free,
            freed_nodes: Default::default(),
            index_key,
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
        }
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
        let key = (self.busy[n] == 0, self.free[n]);
        let old = self.index_key[n];
        if old != key {
            let t = self.node_type[n];
            self.by_free[t].remove(&(old.0, old.1, n));
            self.by_free[t].insert((key.0, key.1, n));
            self.index_key[n] = key;
        }
        if self.freed[n].is_empty() {
            self.freed_nodes.remove(&n);
        } else {
            self.freed_nodes.insert(n);
        }
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
            GpuUse::Free => Some(1000 - added),
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
                Some(1000u32.saturating_sub(kept + added))
            }
            _ => None,
        }
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

    /// Whether the node has CPU and memory for `on_node` GPUs of the job.
    pub fn fits_resources(&self, n: NodeIx, job: &PendingJob, on_node: u32) -> bool {
        let cpu = resource_share(job.cpu_milli, on_node, job.gpus) as i64;
        let mem = resource_share(job.memory_mib, on_node, job.gpus) as i64;
        self.cpu_free[n].is_none_or(|c| c >= cpu) && self.mem_free[n].is_none_or(|m| m >= mem)
    }

    /// Whether the tenant's quota allows the job.
    pub fn quota_allows(&self, job: &PendingJob) -> bool {
        match self.inst.tenants[job.tenant].quota {
            Some(q) => self.held[job.tenant] + job.gpu_equivalent() <= q as f64 + 1e-9,
            None => true,
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
            if r.gpu_milli.is_some() {
                continue;
            }
            let node = *n;
            for &g in idx {
                if self.before.gpus[*n][g as usize] != GpuUse::Whole(k) {
                    continue;
                }
                if sign > 0 {
                    self.freed[*n].push((g, r.priority));
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
            self.reindex(n);
            let on = if job.gpus == 0 { 0 } else { idx.len() as u32 };
            if let Some(c) = self.cpu_free[n].as_mut() {
                *c -= resource_share(job.cpu_milli, on, job.gpus) as i64;
            }
            if let Some(m) = self.mem_free[n].as_mut() {
                *m -= resource_share(job.memory_mib, on, job.gpus) as i64;
            }
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
                                self.freed[n].push((g, self.inst.running[k].priority))
                            }
                            _ => {}
                        }
                    }
                }
            }
            self.reindex(n);
            let on = if job.gpus == 0 { 0 } else { idx.len() as u32 };
            if let Some(c) = self.cpu_free[n].as_mut() {
                *c += resource_share(job.cpu_milli, on, job.gpus) as i64;
            }
            if let Some(m) = self.mem_free[n].as_mut() {
                *m += resource_share(job.memory_mib, on, job.gpus) as i64;
            }
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
