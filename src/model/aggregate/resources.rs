//! CPU and memory per GPU type, in blocks of L GPUs. A job of rho CPU per GPU that puts P of
//! its GPUs on node n takes at least rho P of the node's CPU (its share is ceil(total P /
//! gpus)), so it holds floor(P / L) blocks of L GPUs and rho L CPU there; the blocks of such
//! jobs on n are at most min(floor(f_n / L), floor(c_n / (rho L))), f_n the node's free GPUs
//! and c_n its free CPU, and never more than the node holds when empty. Summed over the nodes
//! of type t, for every level rho of the classes on t and every block size L (1, and the
//! per-node piece P of one-node and fixed-shape classes):
//!
//! ```text
//! sum_{c on t: rho_c >= rho, P_c >= L} b_c,L x_ct
//!     <= sum_{n of t} min(floor(f_n / L), floor(c_n / (rho L)))
//!        + sum_{k victim on n of t} max(ceil(g_kn / L), ceil(cpu_kn / (rho L))) p_k
//! ```
//!
//! with b_c,1 = g_c (every class of whole GPUs, multi-node gangs included) and b_c,L = s_c
//! floor(P_c / L) for L > 1 (s_c pieces per job: 1 for one-node jobs, g_c / gpus_per_node
//! for fixed shapes); the same for memory. The victims' term holds because min(a + b, c + d)
//! <= min(a, c) + max(b, d) and floor(x + y) <= floor(x) + ceil(y); a node whose free room
//! already reaches what it holds when empty (min(floor(G_n / L), floor(C_n / (rho L))), G_n its
//! usable GPUs, C_n its CPU) gains nothing from its victims, so their terms are left out there.
//! Every class may use every victim (the GPU rows keep the priorities); a victim sharing a GPU
//! is counted as freeing it. Sharers and nodes without a CPU or memory size are left out of
//! the left side, and classes are keyed by their level ([`level`]: the job's
//! amount per GPU rounded down to 16 steps an octave), so each row holds for every real
//! placement. A row is added only where the resource cuts some node's blocks, and not when
//! the row of the next lower level has the same right side (that row dominates it).

use super::supply::Supply;
use crate::instance::Instance;
use crate::model::MipModel;
use crate::state::{resource_share, ClusterState, GpuUse};
use crate::topology::Topology;
use good_lp::{Expression, Variable};
use std::collections::{BTreeMap, BTreeSet};

/// How a round rounds its jobs' CPU and memory per GPU down to levels: 2^bits levels an
/// octave (16 at the finest; [`super::classes::granularity`] picks them per round). A level never
/// exceeds the job's amount, so every row keyed by levels holds whatever the step.
#[derive(Debug, Clone, Copy)]
pub struct Levels {
    bits: u32,
}

impl Levels {
    /// The finest step: 2^4 = 16 levels an octave.
    pub const FINEST: u32 = 4;

    /// 2^bits levels an octave.
    pub fn new(bits: u32) -> Self {
        Levels { bits }
    }

    /// Its bits: 2^bits levels an octave.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The level of an amount per GPU (CPU or memory): rounded down to one of 2^bits levels an
    /// octave; amounts below 2^(bits + 1) stay as they are.
    pub fn of_amount(&self, per_gpu: u64) -> u64 {
        if per_gpu < 2 << self.bits {
            return per_gpu;
        }
        let step = 1u64 << (63 - per_gpu.leading_zeros() - self.bits);
        per_gpu / step * step
    }
}

/// The two resources.
#[derive(Clone, Copy)]
enum Resource {
    Cpu,
    Memory,
}

/// What one node offers one resource: free and usable GPUs, the resource left and its size
/// (`None`: unlimited), and (GPUs, amount, p_k) of each victim on it, by running job index
/// (the same order in the CPU and the memory room of a node).
pub struct NodeRoom {
    pub free: u32,
    pub usable: u32,
    pub left: Option<i64>,
    pub size: Option<u64>,
    pub victims: Vec<(u32, u64, Variable)>,
}

impl NodeRoom {
    /// Blocks of `per_block` of the resource the node holds: in what is left now, and at most
    /// (its size); `None` where the node has no size for it (unlimited).
    pub fn blocks(&self, per_block: u64) -> Option<(u64, u64)> {
        match (self.left, self.size) {
            (Some(left), Some(size)) => Some((left.max(0) as u64 / per_block, size / per_block)),
            _ => None,
        }
    }
}

/// What a class of whole GPUs asks of a type, for these rows.
#[derive(Clone, Copy)]
pub struct ResourceUse {
    /// CPU level per GPU.
    pub cpu: u64,
    /// Memory level per GPU.
    pub mem: u64,
    /// GPUs per job.
    pub gpus: u32,
    /// GPUs per node of one piece (one-node jobs: the job; fixed shapes: gpus_per_node; 0
    /// for gangs of no fixed shape).
    pub piece: u32,
    /// Pieces per job.
    pub pieces: u32,
    /// x_ct.
    pub x: Variable,
}

impl ResourceUse {
    /// b_c,L: the blocks of L GPUs one job holds (0 when it holds none for sure).
    fn blocks(&self, l: u32) -> f64 {
        if l == 1 {
            self.gpus as f64
        } else {
            (self.pieces * (self.piece / l)) as f64
        }
    }
}

/// Add the CPU and memory rows of every type (`resource_users`: per type, the classes' uses);
/// every node's rooms, for [`super::cpu_and_memory`].
pub fn add(
    inst: &Instance,
    topo: &Topology,
    before: &ClusterState,
    supply: &Supply,
    resource_users: &[Vec<ResourceUse>],
    m: &mut MipModel,
) -> Rooms {
    let mut of_type = vec![Vec::new(); topo.type_names.len()];
    for (n, &t) in topo.node_type.iter().enumerate() {
        of_type[t].push(n);
    }
    let rooms = Rooms {
        cpu: node_rooms(inst, before, supply, Resource::Cpu),
        mem: node_rooms(inst, before, supply, Resource::Memory),
        of_type,
    };
    for (t, users) in resource_users.iter().enumerate() {
        let (cpu, mem) = rooms.of_type(t);
        type_rows(users, &cpu, Resource::Cpu, m);
        type_rows(users, &mem, Resource::Memory, m);
    }
    rooms
}

/// Every node's room for CPU and for memory, by node index, and each type's nodes.
pub struct Rooms {
    cpu: Vec<NodeRoom>,
    mem: Vec<NodeRoom>,
    of_type: Vec<Vec<usize>>,
}

impl Rooms {
    /// Every node's CPU and memory rooms, by node index.
    pub fn all(&self) -> (&[NodeRoom], &[NodeRoom]) {
        (&self.cpu, &self.mem)
    }

    /// The CPU and the memory rooms of type t's nodes, in the same node order.
    pub fn of_type(&self, t: usize) -> (Vec<&NodeRoom>, Vec<&NodeRoom>) {
        let nodes = &self.of_type[t];
        (
            nodes.iter().map(|&n| &self.cpu[n]).collect(),
            nodes.iter().map(|&n| &self.mem[n]).collect(),
        )
    }
}

/// The rows of one type and resource, over its classes and nodes.
fn type_rows(users: &[ResourceUse], nodes: &[&NodeRoom], resource: Resource, m: &mut MipModel) {
    let amount = |u: &ResourceUse| match resource {
        Resource::Cpu => u.cpu,
        Resource::Memory => u.mem,
    };
    let levels: BTreeSet<u64> = users.iter().map(amount).filter(|&a| a > 0).collect();
    let mut blocks: BTreeSet<u32> = users.iter().map(|u| u.piece).filter(|&p| p > 1).collect();
    blocks.insert(1);
    for &l in &blocks {
        let mut previous: Option<RowTerms> = None;
        for &rho in &levels {
            let Some(terms) = row_terms(nodes, rho, l) else {
                continue;
            };
            if previous.as_ref() == Some(&terms) {
                continue;
            }
            let mut lhs = Expression::from(0.0);
            let mut any = false;
            for u in users.iter().filter(|u| amount(u) >= rho) {
                let b = u.blocks(l);
                if b > 0.0 {
                    lhs.add_mul(b, u.x);
                    any = true;
                }
            }
            if any {
                for &(coef, p) in &terms.1 {
                    lhs.add_mul(-coef, p);
                }
                m.constraints.push(lhs.leq(terms.0));
            }
            previous = Some(terms);
        }
    }
}

/// The right side of a row: the static capacity and the victims' coefficients.
type RowTerms = (f64, Vec<(f64, Variable)>);

/// The right side of the row of level `rho` and blocks of `l` GPUs over `nodes`; `None`
/// when the resource cuts no node's blocks.
fn row_terms(nodes: &[&NodeRoom], rho: u64, l: u32) -> Option<RowTerms> {
    let (mut cap, mut cut, mut victims) = (0.0, false, Vec::new());
    let per_block = rho * l as u64;
    for room in nodes {
        let by_gpus = (room.free / l) as u64;
        let Some((now, size_blocks)) = room.blocks(per_block) else {
            cap += by_gpus as f64;
            victims.extend(
                room.victims
                    .iter()
                    .map(|&(g, _, p)| (g.div_ceil(l) as f64, p)),
            );
            continue;
        };
        let fit = now.min(by_gpus);
        let most = size_blocks.min((room.usable / l) as u64);
        cut |= fit < by_gpus;
        cap += fit as f64;
        if fit < most {
            for &(g, amount, p) in &room.victims {
                let coef = (g.div_ceil(l) as u64).max(amount.div_ceil(per_block));
                victims.push((coef.min(most - fit) as f64, p));
            }
        }
    }
    cut.then_some((cap, victims))
}

/// Every node's room for one resource.
fn node_rooms(
    inst: &Instance,
    before: &ClusterState,
    supply: &Supply,
    resource: Resource,
) -> Vec<NodeRoom> {
    // Candidate victims by the nodes they are on: preempting one frees its CPU and memory
    // there even where it holds no usable GPU (a CPU-only job, or one whose GPUs are down).
    let mut listed: Vec<Vec<usize>> = vec![Vec::new(); inst.nodes.len()];
    for (k, r) in inst.running.iter().enumerate() {
        if supply.preempt[k].is_some() {
            for &(n, _) in &r.gpus {
                listed[n].push(k);
            }
        }
    }
    (0..inst.nodes.len())
        .map(|n| {
            let mut free = 0;
            let usable = before.gpus[n]
                .iter()
                .filter(|u| **u != GpuUse::Down)
                .count() as u32;
            let mut held: BTreeMap<usize, u32> = BTreeMap::new();
            for u in &before.gpus[n] {
                match u {
                    GpuUse::Free => free += 1,
                    GpuUse::Whole(k) if supply.preempt[*k].is_some() => {
                        *held.entry(*k).or_default() += 1
                    }
                    GpuUse::Shared { jobs, .. } => {
                        for &k in jobs.iter().filter(|&&k| supply.preempt[k].is_some()) {
                            *held.entry(k).or_default() += 1;
                        }
                    }
                    _ => {}
                }
            }
            for &k in &listed[n] {
                held.entry(k).or_insert(0);
            }
            let victims = held
                .into_iter()
                .map(|(k, g)| {
                    let r = &inst.running[k];
                    let total = match resource {
                        Resource::Cpu => r.cpu_milli,
                        Resource::Memory => r.memory_mib,
                    };
                    // The job's share on the node counts every GPU it holds there, down or not.
                    let on = r
                        .gpus
                        .iter()
                        .find(|(node, _)| *node == n)
                        .map_or(g, |(_, idx)| idx.len() as u32);
                    let amount = resource_share(total, on, r.gpu_count());
                    (g, amount, supply.preempt[k].expect("a victim"))
                })
                .collect();
            let (left, size) = match resource {
                Resource::Cpu => (before.cpu_free[n], inst.nodes[n].cpu_milli),
                Resource::Memory => (before.mem_free[n], inst.nodes[n].memory_mib),
            };
            NodeRoom {
                free,
                usable,
                left,
                size,
                victims,
            }
        })
        .collect()
}
