//! CPU-only jobs (`gpus: 0`) and the CPU and memory of the cluster. Such a job runs on one
//! node and needs no GPU, so the GPU rows leave it out; without these rows every CPU-only job
//! counts as started. A CPU-only job that no node's size holds has no class at all
//! ([`super::classes`]).
//!
//! Where every node has a CPU size (and, for the memory row, a memory size):
//!
//! ```text
//! CPU:    sum_{j CPU-only} cpu_j n_j + sum_t sum_{c on t} a_c g_c x_ct
//!             <= sum_n (c_n + sum_{k victim on n} cpu_kn p_k)
//! memory: the same with mem_j, b_c, m_n and mem_kn
//! ```
//!
//! (a_c, b_c: the class's CPU and memory levels per GPU, at most what its jobs ask; c_n,
//! m_n: what node n has left; a victim gives back what it holds.) Every job started takes at
//! least that much of some node's room, left now or given back by a victim it preempts: every
//! real placement satisfies the rows. They are added only on rounds with CPU-only jobs (the
//! per-type rows of [`super::resources`] hold the GPU jobs alone).

use super::resources::{NodeRoom, ResourceUse, Rooms};
use crate::model::MipModel;
use good_lp::{Expression, Variable};

/// Add the CPU and memory rows (`jobs`: CPU, memory and n_c of each CPU-only job;
/// `users`: per type, what each GPU class asks).
pub fn add(
    jobs: &[(u64, u64, Variable)],
    users: &[Vec<ResourceUse>],
    rooms: &Rooms,
    m: &mut MipModel,
) {
    if jobs.is_empty() {
        return;
    }
    let (cpu, mem) = rooms.all();
    let gpu_jobs = users.iter().flatten();
    let cpu_asked = gpu_jobs.clone().map(|u| (u.cpu * u64::from(u.gpus), u.x));
    row(
        jobs.iter().map(|&(c, _, n)| (c, n)).chain(cpu_asked),
        cpu,
        m,
    );
    let mem_asked = gpu_jobs.map(|u| (u.mem * u64::from(u.gpus), u.x));
    row(
        jobs.iter().map(|&(_, mm, n)| (mm, n)).chain(mem_asked),
        mem,
        m,
    );
}

/// `sum amount x <= sum_n (left_n + victims' give-backs)`, where every node has a size.
fn row(asked: impl Iterator<Item = (u64, Variable)>, nodes: &[NodeRoom], m: &mut MipModel) {
    if nodes.iter().any(|n| n.size.is_none()) {
        return;
    }
    let mut room = Expression::from(0.0);
    for n in nodes {
        room += n.left.unwrap_or(0).max(0) as f64;
        for &(_, amount, p) in &n.victims {
            room.add_mul(amount as f64, p);
        }
    }
    let mut used = Expression::from(0.0);
    for (amount, x) in asked {
        used.add_mul(amount as f64, x);
    }
    m.constraints.push(used.leq(room));
}
