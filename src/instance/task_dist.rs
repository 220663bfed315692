//! The task distribution of a workload and the fragmentation measure against it (Weng et al.,
//! USENIX ATC'23, "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
//! Fragmentation Gradient Descent").
//!
//! The fragmentation of a node against one task type m is the GPU capacity on the node that m
//! could not use: all of the node's free GPU capacity when m cannot run there at all (wrong GPU
//! type, too little CPU or memory, too few GPUs with room), else the free capacity of the GPUs
//! too full for m's per-GPU demand. Against the task distribution M (the popular task types of
//! the workload and their frequencies), F_n(M) = sum_m p_m F_n(m).
//!
//! An instance may carry a distribution (`policy.task_distribution`, or set by the simulator):
//! the greedy then places one-node jobs where F_n(M) grows least. The FGD baseline measures
//! against the same kind of distribution.

use super::raw::{GpuTypes, RawTaskType};
use super::PendingJob;
use crate::units::MILLI_PER_GPU;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A task type: what one task asks of one node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskType {
    /// CPU, thousandths.
    pub cpu_milli: u64,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// GPUs (1 for a sharer).
    pub gpus: u32,
    /// Demand per GPU, thousandths (1000 for whole GPUs).
    pub milli_per_gpu: u32,
    /// Acceptable GPU types (`None`: any).
    pub gpu_types: Option<Vec<String>>,
}

impl TaskType {
    /// The type of a pending job.
    pub fn of(job: &PendingJob) -> Self {
        TaskType {
            cpu_milli: job.cpu_milli,
            memory_mib: job.memory_mib,
            gpus: job.gpus,
            milli_per_gpu: job.gpu_milli.unwrap_or(crate::units::MILLI_PER_GPU),
            gpu_types: job.gpu_types.clone(),
        }
    }
}

/// The task distribution: popular task types and their frequencies (summing to 1).
///
/// It also keeps a memo of fragmentation values ([`TaskDist::frag_cached`]), shared by every
/// round that holds the same distribution; the memo is not part of its value (clones start
/// with an empty one, equality ignores it).
#[derive(Debug, Default)]
pub struct TaskDist {
    /// Types and frequencies.
    pub types: Vec<(TaskType, f64)>,
    /// Score node choices as the FGD artifact does ([`artifact_score`], ties to the first
    /// node of a random node order drawn from this seed, [`artifact_rank`]); `None`: exact
    /// growth, ties by the caller's key.
    pub artifact_ties: Option<u64>,
    memo: FragMemo,
}

impl Clone for TaskDist {
    fn clone(&self) -> Self {
        TaskDist {
            artifact_ties: self.artifact_ties,
            ..TaskDist::new(self.types.clone())
        }
    }
}

/// The FGD artifact's integer node score for a fragmentation growth (milli GPUs):
/// `floor(100 * sigmoid(-growth / 1000))` (`fgd_score.go`).
pub fn artifact_score(growth: f64) -> i64 {
    let x = -growth / 1000.0;
    (100.0 / (1.0 + (-x).exp())).floor() as i64
}

/// A node's place in a pseudo-random node order fixed by `seed` (smaller first): splitmix64
/// of the seed and the node index.
pub fn artifact_rank(seed: u64, node: usize) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(node as u64)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl PartialEq for TaskDist {
    fn eq(&self, other: &Self) -> bool {
        self.types == other.types
    }
}

/// Share of tasks the kept types must cover. The FGD artifact can keep only the most popular
/// types; keeping all of them (1.0) matched its published numbers best on openb `default`
/// (seed 42: 94.58% allocated with 1.0, 94.19% with 0.95).
pub const COVERAGE: f64 = 1.0;

/// Entries kept in a distribution's memo before it is cleared.
const MEMO_LIMIT: usize = 1 << 20;

impl TaskDist {
    /// A distribution of these types and frequencies, as given (not renormalised).
    pub fn new(types: Vec<(TaskType, f64)>) -> Self {
        TaskDist {
            types,
            artifact_ties: None,
            memo: FragMemo::default(),
        }
    }

    /// The distribution of GPU tasks in `types` (CPU-only tasks are left out): the most
    /// frequent types up to [`COVERAGE`] of the tasks, most frequent first, renormalised.
    pub fn from_types(types: impl IntoIterator<Item = TaskType>) -> Self {
        let mut count: BTreeMap<TaskType, u64> = BTreeMap::new();
        let mut total = 0u64;
        for t in types.into_iter().filter(|t| t.gpus > 0) {
            *count.entry(t).or_default() += 1;
            total += 1;
        }
        let mut v: Vec<(TaskType, u64)> = count.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut kept = Vec::new();
        let mut covered = 0u64;
        for (t, c) in v {
            if covered as f64 >= COVERAGE * total as f64 {
                break;
            }
            covered += c;
            kept.push((t, c));
        }
        let sum: u64 = kept.iter().map(|k| k.1).sum();
        TaskDist::new(
            kept.into_iter()
                .map(|(t, c)| (t, c as f64 / sum.max(1) as f64))
                .collect(),
        )
    }

    /// Types with their shares divided by the sum of the shares (which must be positive).
    pub fn from_shares(types: Vec<(TaskType, f64)>) -> Self {
        let sum: f64 = types.iter().map(|t| t.1).sum();
        let scale = if sum > 0.0 { 1.0 / sum } else { 0.0 };
        TaskDist::new(types.into_iter().map(|(t, p)| (t, p * scale)).collect())
    }

    /// The distribution as `policy.task_distribution` writes it (the artifact's tie seed is
    /// `policy.artifact_score`, not part of the list).
    pub fn raw_types(&self) -> Vec<RawTaskType> {
        self.types
            .iter()
            .map(|(t, share)| RawTaskType {
                gpus: u64::from(t.gpus),
                gpu_milli: (t.milli_per_gpu < MILLI_PER_GPU).then_some(u64::from(t.milli_per_gpu)),
                cpu_milli: Some(t.cpu_milli),
                memory_mib: Some(t.memory_mib),
                gpu_type: t.gpu_types.clone().map(GpuTypes::Many),
                share: *share,
            })
            .collect()
    }

    /// F_n(M) for a node's free view, memoised across calls (and rounds) on this distribution.
    pub fn frag_cached(&self, node: &NodeFree) -> f64 {
        let mut memo = self.memo.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&v) = memo.get(node) {
            return v;
        }
        let v = frag(node, self);
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(node.clone(), v);
        v
    }
}

/// Memo of fragmentation values by node view (Fx hashing: the keys are short and not chosen
/// by an adversary, and SipHash took a tenth of an openb run with the ILP).
#[derive(Default)]
struct FragMemo(Mutex<FxHashMap<NodeFree, f64>>);

impl std::fmt::Debug for FragMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FragMemo")
    }
}

/// What fragmentation depends on: a node's GPU type and its free resources.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeFree {
    /// GPU type.
    pub gpu_type: String,
    /// Free milli per usable GPU, sorted descending.
    pub free: Vec<u32>,
    /// CPU left (`None`: unlimited).
    pub cpu: Option<i64>,
    /// Memory left.
    pub mem: Option<i64>,
}

/// F_n(m): the free GPU milli on the node that task type m cannot use. A CPU-only type uses
/// no GPU, so all of it (the FGD artifact's "XL"/"XR" cases, both counted as fragment).
pub fn frag_for(node: &NodeFree, t: &TaskType) -> f64 {
    let total: u32 = node.free.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let all = total as f64;
    if t.gpus == 0 {
        return all;
    }
    if t.gpu_types
        .as_ref()
        .is_some_and(|ts| !ts.contains(&node.gpu_type))
    {
        return all;
    }
    if node.cpu.is_some_and(|c| c < t.cpu_milli as i64)
        || node.mem.is_some_and(|m| m < t.memory_mib as i64)
    {
        return all;
    }
    let fits = node.free.iter().filter(|&&f| f >= t.milli_per_gpu).count() as u32;
    if fits < t.gpus.max(1) {
        return all;
    }
    node.free
        .iter()
        .filter(|&&f| f < t.milli_per_gpu)
        .map(|&f| f as f64)
        .sum()
}

/// F_n(M) = sum_m p_m F_n(m).
pub fn frag(node: &NodeFree, dist: &TaskDist) -> f64 {
    dist.types.iter().map(|(t, p)| p * frag_for(node, t)).sum()
}
