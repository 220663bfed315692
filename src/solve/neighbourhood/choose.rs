//! Which nodes form a neighbourhood, which of them to try first, and which waiting jobs each
//! may start.

use crate::assignment::Assignment;
use crate::instance::{Instance, NodeIx};
use crate::state::{ClusterState, GpuUse};
use std::collections::BTreeSet;

/// Nodes a neighbourhood holds at most: a rack of the usual 16 nodes, or small racks of one pod
/// put together up to this many; a larger rack is cut into near-equal pieces of at most this
/// many nodes in file order. (On the 1k-GPU tight-cpu and mixed rounds, pieces of 4 and 8
/// nodes with 12-24 candidates found no more than whole racks with 40.)
pub const TARGET_NODES: usize = 16;

/// Waiting jobs a neighbourhood may start at most (with the placed jobs it holds, the cut's
/// per-node model stays at a few thousand columns).
pub const MAX_CANDIDATES: usize = 40;

/// Waiting jobs of one GPU count among the candidates at most, so that small jobs that fill
/// holes are tried beside the most valuable large ones.
pub const PER_SIZE: usize = 8;

/// The neighbourhoods of a round: nodes grouped by rack (racks in pod order), small racks of
/// one pod together up to [`TARGET_NODES`], large racks cut into pieces.
pub fn neighbourhoods(inst: &Instance) -> Vec<Vec<NodeIx>> {
    let mut by_rack: Vec<Vec<NodeIx>> = vec![Vec::new(); inst.racks.len().max(1)];
    for (n, node) in inst.nodes.iter().enumerate() {
        by_rack[node.rack].push(n);
    }
    let mut racks: Vec<usize> = (0..by_rack.len())
        .filter(|&r| !by_rack[r].is_empty())
        .collect();
    racks.sort_by_key(|&r| (inst.rack_pod.get(r).copied().unwrap_or(0), r));
    let mut out: Vec<Vec<NodeIx>> = Vec::new();
    let mut open: Option<(usize, Vec<NodeIx>)> = None;
    for r in racks {
        let pod = inst.rack_pod.get(r).copied().unwrap_or(0);
        let nodes = &by_rack[r];
        if nodes.len() > TARGET_NODES {
            let pieces = nodes.len().div_ceil(TARGET_NODES);
            out.extend(
                nodes
                    .chunks(nodes.len().div_ceil(pieces))
                    .map(<[NodeIx]>::to_vec),
            );
            continue;
        }
        match open.as_mut() {
            Some((p, group)) if *p == pod && group.len() + nodes.len() <= TARGET_NODES => {
                group.extend(nodes);
            }
            _ => {
                out.extend(open.take().map(|(_, g)| g));
                open = Some((pod, nodes.clone()));
            }
        }
    }
    out.extend(open.map(|(_, g)| g));
    for group in &mut out {
        group.sort_unstable();
    }
    out
}

/// Whole GPUs idle on each node after `plan`: usable, and neither held by a running job the
/// plan keeps nor given to a started job.
pub fn idle_gpus(inst: &Instance, plan: &Assignment) -> Vec<u32> {
    let before = ClusterState::new(inst);
    let preempted: BTreeSet<usize> = plan.preempted.iter().copied().collect();
    let taken: BTreeSet<(NodeIx, u32)> = plan
        .placed
        .values()
        .flat_map(|set| {
            set.iter()
                .flat_map(|(&n, g)| g.iter().map(move |&i| (n, i)))
        })
        .collect();
    before
        .gpus
        .iter()
        .enumerate()
        .map(|(n, gpus)| {
            let idle = |(g, u): (usize, &GpuUse)| {
                let free = match u {
                    GpuUse::Free => true,
                    GpuUse::Whole(k) => preempted.contains(k),
                    GpuUse::Shared { jobs, .. } => jobs.iter().all(|k| preempted.contains(k)),
                    GpuUse::Down => false,
                };
                free && !taken.contains(&(n, g as u32))
            };
            gpus.iter().enumerate().filter(|&x| idle(x)).count() as u32
        })
        .collect()
}

/// The waiting jobs of `plan` a neighbourhood of `nodes` may start: in `order` (the greedy's
/// value-per-GPU order), those that accept a GPU type of the neighbourhood and fit in its
/// usable GPUs, at most [`PER_SIZE`] of one GPU count and [`MAX_CANDIDATES`] in all.
pub fn candidates(
    inst: &Instance,
    plan: &Assignment,
    nodes: &[NodeIx],
    order: &[usize],
) -> Vec<usize> {
    let types: BTreeSet<&str> = nodes
        .iter()
        .map(|&n| inst.nodes[n].gpu_type.as_str())
        .collect();
    let usable: u32 = nodes.iter().map(|&n| inst.nodes[n].usable()).sum();
    let mut per_size: std::collections::BTreeMap<u32, usize> = Default::default();
    let mut out = Vec::new();
    for &j in order {
        if out.len() >= MAX_CANDIDATES {
            break;
        }
        let job = &inst.pending[j];
        if plan.placed.contains_key(&j)
            || job.gpus > usable
            || !types.iter().any(|t| job.accepts_type(t))
        {
            continue;
        }
        let seen = per_size.entry(job.gpus).or_default();
        if *seen < PER_SIZE {
            *seen += 1;
            out.push(j);
        }
    }
    out.sort_unstable();
    out
}
