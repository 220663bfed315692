//! GPU indices inside one node, chosen on the node's links ([`NodeFabric`]): keep a gang
//! inside one NVLink group, then on one CPU socket, so its paths cross as few slow links as
//! the free GPUs allow.

use super::fabric::NodeFabric;
use crate::instance::Node;

/// Choose `count` GPUs out of `allowed` (sorted ascending) on `node`.
///
/// See [`choose_on`]; the node's fabric is read off its links.
pub fn choose_indices(node: &Node, allowed: &[u32], count: u32) -> Option<Vec<u32>> {
    choose_on(&NodeFabric::of(node), allowed, count)
}

/// Choose `count` GPUs out of `allowed` (sorted ascending) on a node of layout `fabric`.
///
/// Preference, deterministic: the smallest NVLink group that holds the whole request (best
/// fit, so large groups stay whole); else groups with the most allowed GPUs first, staying on
/// one socket when it can; ties broken by lowest index. Returns `None` when fewer than
/// `count` GPUs are allowed.
pub fn choose_on(fabric: &NodeFabric, allowed: &[u32], count: u32) -> Option<Vec<u32>> {
    let count = count as usize;
    if allowed.len() < count {
        return None;
    }
    if count == 0 {
        return Some(Vec::new());
    }
    // Allowed GPUs per NVLink group, each ascending.
    let mut slot: Vec<Option<usize>> = vec![None; fabric.groups as usize];
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for &g in allowed {
        let id = fabric.group[g as usize] as usize;
        match slot[id] {
            Some(i) => groups[i].push(g),
            None => {
                slot[id] = Some(groups.len());
                groups.push(vec![g]);
            }
        }
    }
    // Best fit: smallest group that holds the request.
    if let Some(best) = groups
        .iter()
        .filter(|g| g.len() >= count)
        .min_by_key(|g| (g.len(), g[0]))
    {
        return Some(best[..count].to_vec());
    }
    // Otherwise try on one socket first (a group counts on the socket of its first GPU), then
    // the whole node.
    let mut candidates: Vec<Vec<u32>> = Vec::new();
    for socket in 0..fabric.sockets {
        let mut inside: Vec<&Vec<u32>> = groups
            .iter()
            .filter(|g| fabric.socket[g[0] as usize] == socket)
            .collect();
        if inside.iter().map(|g| g.len()).sum::<usize>() >= count {
            inside.sort_by_key(|g| (std::cmp::Reverse(g.len()), g[0]));
            candidates.push(take(&inside, count));
        }
    }
    if let Some(c) = candidates.into_iter().min_by_key(|c| c[0]) {
        return Some(c);
    }
    let mut all: Vec<&Vec<u32>> = groups.iter().collect();
    all.sort_by_key(|g| (std::cmp::Reverse(g.len()), g[0]));
    Some(take(&all, count))
}

fn take(groups: &[&Vec<u32>], count: usize) -> Vec<u32> {
    let mut out: Vec<u32> = groups
        .iter()
        .flat_map(|g| g.iter().copied())
        .take(count)
        .collect();
    out.sort_unstable();
    out
}
