//! GPU indices inside one node: keep a gang inside one NVLink island, then one NUMA half.

use crate::instance::Node;

/// Choose `count` GPUs out of `allowed` (sorted ascending) on `node`.
///
/// Preference, deterministic: the smallest island that holds the whole request (best fit, so
/// large islands stay whole); else islands with the most allowed GPUs first, staying inside one
/// NUMA half when it can; ties broken by lowest index. Returns `None` when fewer than `count`
/// GPUs are allowed.
pub fn choose_indices(node: &Node, allowed: &[u32], count: u32) -> Option<Vec<u32>> {
    let count = count as usize;
    if allowed.len() < count {
        return None;
    }
    if count == 0 {
        return Some(Vec::new());
    }
    // Groups of allowed GPUs per island (GPUs in no island form singleton groups).
    let mut groups: Vec<Vec<u32>> = node
        .islands
        .iter()
        .map(|isl| {
            allowed
                .iter()
                .copied()
                .filter(|g| isl.contains(g))
                .collect::<Vec<_>>()
        })
        .filter(|g: &Vec<u32>| !g.is_empty())
        .collect();
    for &g in allowed {
        if !node.islands.iter().any(|isl| isl.contains(&g)) {
            groups.push(vec![g]);
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
    // Otherwise try inside one NUMA half first, then the whole node.
    let numa_of = |g: u32| node.numa.iter().position(|s| s.contains(&g)).unwrap_or(0);
    let mut candidates: Vec<Vec<u32>> = Vec::new();
    for half in 0..node.numa.len().max(1) {
        let mut inside: Vec<&Vec<u32>> = groups.iter().filter(|g| numa_of(g[0]) == half).collect();
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
