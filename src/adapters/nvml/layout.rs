//! From NVLink links, NVLink P2P status and PCIe distances to NVLink islands, NUMA groups and
//! the interconnect kind of a node.

use super::inventory::{Snapshot, TopologyLevel};
use crate::hardware::Interconnect;
use std::collections::BTreeMap;

/// The intra-node layout read from a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Sets of GPUs joined by NVLink (size >= 2, sorted, ordered by first GPU).
    pub islands: Vec<Vec<u32>>,
    /// GPUs per NUMA node / PCIe root (sorted, ordered by first GPU).
    pub numa: Vec<Vec<u32>>,
    /// Intra-node fabric.
    pub interconnect: Interconnect,
    /// Per GPU: the GPUs it reaches over NVLink (directly, through a shared NVSwitch, or as NVML's
    /// NVLink P2P status says).
    pub peers: Vec<Vec<u32>>,
    /// Per GPU: active NVLinks that end at an NVSwitch (not at a GPU of this node).
    pub switch_links: Vec<u32>,
    /// Per GPU: active NVLinks.
    pub active_links: Vec<u32>,
    /// Things the caller should tell the user (missing data, guesses made).
    pub warnings: Vec<String>,
}

/// Disjoint sets over `0..n`.
struct Sets(Vec<usize>);

impl Sets {
    fn new(n: usize) -> Self {
        Sets((0..n).collect())
    }
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.0[r] != r {
            r = self.0[r];
        }
        let mut y = x;
        while self.0[y] != r {
            let next = self.0[y];
            self.0[y] = r;
            y = next;
        }
        r
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra.max(rb)] = ra.min(rb);
        }
    }
    /// Groups (sorted members, ordered by first member).
    fn groups(&mut self) -> Vec<Vec<u32>> {
        let mut by_root: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for x in 0..self.0.len() {
            let r = self.find(x);
            by_root.entry(r).or_default().push(x as u32);
        }
        let mut g: Vec<Vec<u32>> = by_root.into_values().collect();
        g.sort();
        g
    }
}

/// A PCI bus id in one spelling: lower case, 8-digit domain (`0000:18:00.0` and
/// `00000000:18:00.0` are the same device).
pub fn normalize_bus_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.split_once(':') {
        Some((dom, rest)) if rest.contains(':') => match u32::from_str_radix(dom, 16) {
            Ok(d) => format!("{d:08x}:{rest}"),
            Err(_) => id,
        },
        _ => id,
    }
}

/// Read the layout of the GPUs in `s`.
pub fn layout(s: &Snapshot) -> Layout {
    let n = s.devices.len();
    let mut warnings = Vec::new();
    let pos: BTreeMap<u32, usize> = s
        .devices
        .iter()
        .enumerate()
        .map(|(k, d)| (d.index, k))
        .collect();
    let bus: BTreeMap<String, usize> = s
        .devices
        .iter()
        .enumerate()
        .filter_map(|(k, d)| d.pci_bus_id.as_deref().map(|b| (normalize_bus_id(b), k)))
        .collect();

    // NVLink edges.
    let mut edge = vec![vec![false; n]; n];
    let mut switch_members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut switch_links = vec![0u32; n];
    let mut active_links = vec![0u32; n];
    let mut unknown_remote = false;
    for (k, d) in s.devices.iter().enumerate() {
        active_links[k] = d.nvlinks.len() as u32;
        for l in &d.nvlinks {
            match l.remote_pci_bus_id.as_deref().map(normalize_bus_id) {
                Some(r) => match bus.get(&r) {
                    Some(&j) if j != k => {
                        edge[k][j] = true;
                        edge[j][k] = true;
                    }
                    Some(_) => {}
                    None => {
                        switch_links[k] += 1;
                        switch_members.entry(r).or_default().push(k);
                    }
                },
                None => unknown_remote = true,
            }
        }
    }
    for members in switch_members.values() {
        for &a in members {
            for &b in members {
                if a != b {
                    edge[a][b] = true;
                }
            }
        }
    }
    let mut p2p_all = n >= 2;
    for p in &s.pairs {
        let (Some(&a), Some(&b)) = (pos.get(&p.a), pos.get(&p.b)) else {
            continue;
        };
        if p.nvlink_p2p == Some(true) {
            edge[a][b] = true;
            edge[b][a] = true;
        } else {
            p2p_all = false;
        }
    }
    if s.pairs.len() < n * n.saturating_sub(1) / 2 {
        p2p_all = false;
    }

    let mut sets = Sets::new(n);
    let mut peers = vec![Vec::new(); n];
    for (a, row) in edge.iter().enumerate() {
        for (b, &linked) in row.iter().enumerate() {
            if linked {
                sets.union(a, b);
                peers[a].push(s.devices[b].index);
            }
        }
    }
    let idx = |g: Vec<u32>| -> Vec<u32> {
        let mut v: Vec<u32> = g.into_iter().map(|k| s.devices[k as usize].index).collect();
        v.sort();
        v
    };
    let mut islands: Vec<Vec<u32>> = sets
        .groups()
        .into_iter()
        .filter(|g| g.len() >= 2)
        .map(idx)
        .collect();
    islands.sort();

    let total_switch: u32 = switch_links.iter().sum();
    let one_island_of_all = islands.len() == 1 && islands[0].len() == n;
    let interconnect = if islands.is_empty() {
        Interconnect::Pcie
    } else if total_switch > 0 {
        Interconnect::Nvswitch
    } else if unknown_remote && one_island_of_all && n >= 3 && p2p_all {
        warnings.push(
            "NVML did not name the far end of the NVLinks; every GPU pair has NVLink P2P, so the node is taken to be NVSwitch-connected"
                .to_string(),
        );
        Interconnect::Nvswitch
    } else {
        Interconnect::NvlinkBridge
    };

    // NUMA groups: the NUMA node NVML reports, else PCIe distance closer than "system".
    let numa_of: Vec<Option<u32>> = s.devices.iter().map(|d| d.numa_node).collect();
    let mut anc: BTreeMap<(usize, usize), TopologyLevel> = BTreeMap::new();
    for p in &s.pairs {
        if let (Some(&a), Some(&b), Some(l)) = (pos.get(&p.a), pos.get(&p.b), p.common_ancestor) {
            anc.insert((a.min(b), a.max(b)), l);
        }
    }
    let mut numa_sets = Sets::new(n);
    let mut any_numa_info = false;
    for a in 0..n {
        for b in a + 1..n {
            match (numa_of[a], numa_of[b], anc.get(&(a, b))) {
                (Some(x), Some(y), _) => {
                    any_numa_info = true;
                    if x == y {
                        numa_sets.union(a, b);
                    }
                }
                (_, _, Some(&l)) => {
                    any_numa_info = true;
                    if l < TopologyLevel::System {
                        numa_sets.union(a, b);
                    }
                }
                _ => {}
            }
        }
    }
    let numa = if n <= 1 || any_numa_info {
        numa_sets.groups().into_iter().map(idx).collect()
    } else {
        warnings.push(
            "NVML reported neither NUMA nodes nor PCIe distances; all GPUs are put in one NUMA group"
                .to_string(),
        );
        vec![s.devices.iter().map(|d| d.index).collect::<Vec<_>>()]
    };

    for p in peers.iter_mut() {
        p.sort();
        p.dedup();
    }
    Layout {
        islands,
        numa,
        interconnect,
        peers,
        switch_links,
        active_links,
        warnings,
    }
}
