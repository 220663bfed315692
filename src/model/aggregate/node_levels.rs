//! CPU, memory and GPUs together on each node, by pair of levels. The rows of
//! [`super::resources`], [`super::cpu_and_memory`] and [`super::resource_sums`] each bound one
//! threshold summed over a type's nodes, so the relaxation may give a node's CPU to jobs of
//! one pair of levels in one row and its memory to jobs of another pair in another: on a
//! skewed node (CPU left without memory, or memory without CPU) the rows together start more
//! than the node holds. Here every node's room is split among the pairs explicitly.
//!
//! For each type t, the pairs (a, b) of its classes' CPU and memory levels (at most
//! [`super::cpu_and_memory::MOST_LEVELS`] of each, a class taking the highest pair at or
//! below its own levels), and each node n of t that has free GPUs or victims:
//!
//! ```text
//! w_nab >= 0                GPUs of node n given to jobs of the pair (a, b)
//! pair:    sum_{c -> (a, b)} g_c x_ct <= sum_{n of t} w_nab
//! GPUs:    sum_ab w_nab     <= f_n + sum_{k victim on n} g_kn p_k
//! CPU:     sum_ab a w_nab   <= c_n + sum_{k victim on n} cpu_kn p_k
//! memory:  sum_ab b w_nab   <= m_n + sum_{k victim on n} mem_kn p_k
//! ```
//!
//! A job of class c that puts P GPUs on node n takes at least a P CPU and b P memory there
//! (its levels are at or above the pair's), and a victim gives back what it holds; so every
//! real placement gives such w, and the rows hold. A node without a size for a resource gets
//! no row of it. Sharers are left out (their GPUs are shares).
//!
//! Nodes alike (same type, free GPUs, CPU and memory left, no victims) share one set of
//! w columns, their rows scaled by their number: summing identical rows loses nothing where w
//! is continuous. Nodes without a CPU or a memory size (with their victims' GPUs), and those
//! where neither resource binds any pair (the highest levels times their free GPUs fit), offer
//! their GPUs in one pool with the GPU row alone: leaving them out would leave the jobs they
//! hold without room (golden round of `tests/odd_rounds.rs`).

use super::cpu_and_memory::spaced;
use super::resources::{NodeRoom, ResourceUse, Rooms};
use crate::model::MipModel;
use good_lp::{variable, Expression, Variable};
use std::collections::{BTreeMap, BTreeSet};

/// The most w columns the rows may add to the integer model; past it none are added.
pub const MOST_COLUMNS: usize = 4_000;

/// The most w columns the rows may add to the LP relaxation of the rounds that solve it: the
/// 10k-GPU skewed-resources round (7,248 columns) solves in 0.8-0.9 s with them.
pub const MOST_COLUMNS_RELAXATION: usize = 10_000;

/// The rows of every type, before they are added.
pub struct NodeLevels(Vec<TypeRooms>);

/// The rows of every type (`resource_users`: per type, the classes' uses).
pub fn rows(resource_users: &[Vec<ResourceUse>], rooms: &Rooms) -> NodeLevels {
    let types = resource_users
        .iter()
        .enumerate()
        .filter_map(|(t, users)| {
            let (cpu, mem) = rooms.of_type(t);
            TypeRooms::of(users, &cpu, &mem)
        })
        .collect();
    NodeLevels(types)
}

impl NodeLevels {
    /// The w columns the rows add (0: none).
    pub fn columns(&self) -> usize {
        self.0.iter().map(TypeRooms::columns).sum()
    }

    /// Add the rows to `m`.
    pub fn add(self, m: &mut MipModel) {
        for rooms in self.0 {
            rooms.add(m);
        }
    }
}

/// A node's room for the rows: free GPUs, CPU and memory left (`None`: no size).
type Room = (f64, Option<f64>, Option<f64>);

/// What a victim gives back on its node: GPUs, CPU, memory, and its p_k.
type Gives = (f64, f64, f64, Variable);

/// One type's rows, before they are added: the GPUs its classes ask per pair of levels, and
/// its nodes as groups of alike ones (count, room, victims).
struct TypeRooms {
    pairs: BTreeMap<(u64, u64), Expression>,
    nodes: Vec<(f64, Room, Vec<Gives>)>,
}

impl TypeRooms {
    /// The rows of type t's classes (`users`) over its nodes (`cpu` and `mem`, in the same
    /// order); `None` where no class or no node takes part.
    fn of(users: &[ResourceUse], cpu: &[&NodeRoom], mem: &[&NodeRoom]) -> Option<TypeRooms> {
        let cpu_levels: BTreeSet<u64> = users.iter().map(|u| u.cpu).collect();
        let mem_levels: BTreeSet<u64> = users.iter().map(|u| u.mem).collect();
        let (a_levels, b_levels) = (spaced(&cpu_levels), spaced(&mem_levels));
        let below = |levels: &[u64], x: u64| levels.iter().rev().find(|&&l| l <= x).copied();
        let mut pairs: BTreeMap<(u64, u64), Expression> = BTreeMap::new();
        for u in users {
            let (Some(a), Some(b)) = (below(&a_levels, u.cpu), below(&b_levels, u.mem)) else {
                continue;
            };
            pairs
                .entry((a, b))
                .or_insert_with(|| Expression::from(0.0))
                .add_mul(u.gpus as f64, u.x);
        }
        let (a_top, b_top) = (*a_levels.last()?, *b_levels.last()?);
        let left = |r: &NodeRoom| r.size.and(r.left.map(|l| l.max(0)));
        let binds = |rc: &NodeRoom, rm: &NodeRoom| {
            let short =
                |r: &NodeRoom, top: u64| left(r).is_some_and(|l| (l as u64) < top * rc.free as u64);
            short(rc, a_top) || short(rm, b_top)
        };
        // One pool of GPUs alone: nodes without a CPU or memory size (with their victims'
        // GPUs) and nodes where neither resource binds any pair.
        let (mut pooled, mut pooled_victims) = (0u32, Vec::new());
        let mut nodes = Vec::new();
        let mut alike: BTreeMap<(u32, Option<i64>, Option<i64>), u32> = BTreeMap::new();
        let f = |x: Option<i64>| x.map(|x| x as f64);
        for (rc, rm) in cpu.iter().zip(mem) {
            let gives = || -> Vec<Gives> {
                rc.victims
                    .iter()
                    .zip(&rm.victims)
                    .map(|(&(g, c, p), &(_, mm, _))| (g as f64, c as f64, mm as f64, p))
                    .collect()
            };
            if rc.size.is_none() && rm.size.is_none() {
                pooled += rc.free;
                pooled_victims.extend(gives().into_iter().map(|(g, _, _, p)| (g, 0.0, 0.0, p)));
            } else if !rc.victims.is_empty() {
                nodes.push((1.0, (rc.free as f64, f(left(rc)), f(left(rm))), gives()));
            } else if rc.free > 0 && !binds(rc, rm) {
                pooled += rc.free;
            } else if rc.free > 0 {
                *alike.entry((rc.free, left(rc), left(rm))).or_default() += 1;
            }
        }
        if pooled > 0 || !pooled_victims.is_empty() {
            nodes.push((1.0, (pooled as f64, None, None), pooled_victims));
        }
        for ((free, c, mm), count) in alike {
            nodes.push((count as f64, (free as f64, f(c), f(mm)), Vec::new()));
        }
        (!pairs.is_empty() && !nodes.is_empty()).then_some(TypeRooms { pairs, nodes })
    }

    /// The w columns its rows add.
    fn columns(&self) -> usize {
        self.pairs.len() * self.nodes.len()
    }

    /// Add its columns and rows to `m`.
    fn add(self, m: &mut MipModel) {
        let mut offered: BTreeMap<(u64, u64), Expression> = BTreeMap::new();
        for (count, room, gives) in &self.nodes {
            let mut gpus = Expression::from(0.0);
            let mut cpu = Expression::from(0.0);
            let mut mem = Expression::from(0.0);
            for &(a, b) in self.pairs.keys() {
                let w = m.problem.add(variable().min(0));
                offered
                    .entry((a, b))
                    .or_insert_with(|| Expression::from(0.0))
                    .add_mul(*count, w);
                gpus += w;
                cpu.add_mul(a as f64, w);
                mem.add_mul(b as f64, w);
            }
            for &(g, c, mm, p) in gives {
                gpus.add_mul(-g, p);
                cpu.add_mul(-c, p);
                mem.add_mul(-mm, p);
            }
            m.constraints.push(gpus.leq(room.0));
            if let Some(c) = room.1 {
                m.constraints.push(cpu.leq(c));
            }
            if let Some(mm) = room.2 {
                m.constraints.push(mem.leq(mm));
            }
        }
        for (pair, asked) in self.pairs {
            let offered = offered
                .remove(&pair)
                .unwrap_or_else(|| Expression::from(0.0));
            m.constraints.push(asked.leq(offered));
        }
    }
}
