//! Synthetic SPEC instances for tests and benchmarks: racks and pods, mixed GPU types, down
//! GPUs, running fill, tenants with weights and quotas, pending gangs with type, locality,
//! node-count and shape constraints, sharers and CPU/memory. Same parameters and seed, same
//! instance (ChaCha8 stream).
//!
//! [`Family`] names the kind of cluster state: [`Family::Default`] is the generator below
//! (homogeneous racks, node-by-node fill), kept as it was so that earlier benchmarks stay
//! comparable; the others ([`families`]) each add one thing real clusters have (GPU types mixed
//! inside racks, whole-node fills in random node order, scattered partial fills with random
//! priorities, tight CPU and memory, sharers, binding quotas, constrained gangs), and
//! [`Family::Mixed`] has all of them.

pub mod families;
pub mod replicas;

pub use families::Family;

use crate::instance::raw::*;
use rand::{seq::SliceRandom, Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Generator parameters.
#[derive(Debug, Clone)]
pub struct GenParams {
    /// Nodes.
    pub nodes: usize,
    /// Pending jobs.
    pub pending: usize,
    /// Seed.
    pub seed: u64,
    /// Nodes per rack.
    pub nodes_per_rack: usize,
    /// Racks per pod.
    pub racks_per_pod: usize,
    /// Fraction of usable GPUs held by running jobs (0..1).
    pub busy: f64,
    /// Fraction of GPUs down.
    pub down: f64,
    /// Tenants.
    pub tenants: usize,
    /// Largest gang (GPUs).
    pub max_gang: u32,
    /// Fraction of pending jobs that are sharers.
    pub sharers: f64,
    /// Time limit written into the policy.
    pub time_limit: f64,
    /// The kind of cluster state.
    pub family: Family,
}

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            nodes: 32,
            pending: 80,
            seed: 1,
            nodes_per_rack: 16,
            racks_per_pod: 8,
            busy: 0.65,
            down: 0.01,
            tenants: 3,
            max_gang: 64,
            sharers: 0.05,
            time_limit: 10.0,
            family: Family::Default,
        }
    }
}

/// Generate an instance of the parameters' family.
pub fn generate(p: &GenParams) -> RawInstance {
    match p.family {
        Family::Default => generate_default(p),
        _ => families::generate(p),
    }
}

/// The default family: homogeneous racks (a rack's hardware follows the rack's number), running
/// jobs of 1, 2, 4 or 8 GPUs filled node by node.
fn generate_default(p: &GenParams) -> RawInstance {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let kinds = [
        ("dgx-h100", "H100", 8u32),
        ("dgx-a100", "A100", 8),
        ("a100-pcie-8x", "A100", 8),
        ("l40s-pcie-4x", "L40S", 4),
    ];
    let mut nodes = Vec::with_capacity(p.nodes);
    for i in 0..p.nodes {
        let rack = i / p.nodes_per_rack.max(1);
        let pod = rack / p.racks_per_pod.max(1);
        // Racks are homogeneous: the type follows the rack.
        let (model, _, gpus) = kinds[match rack % 7 {
            0..=2 => 0,
            3 | 4 => 1,
            5 => 2,
            _ => 3,
        }];
        let down: Vec<u64> = (0..gpus as u64)
            .filter(|_| rng.gen_bool(p.down.clamp(0.0, 1.0)))
            .collect();
        nodes.push(RawNode {
            name: format!("n{i:05}"),
            model: Some(model.to_string()),
            rack: Some(format!("r{rack:03}")),
            pod: Some(format!("p{pod:02}")),
            down,
            cpu_milli: Some(gpus as u64 * 16_000),
            memory_mib: Some(gpus as u64 * 131_072),
            ..Default::default()
        });
    }
    let tenants: Vec<RawTenant> = (0..p.tenants.max(1))
        .map(|t| RawTenant {
            name: format!("t{t}"),
            weight: [3.0, 2.0, 1.0, 1.0][t % 4],
            quota: if t == p.tenants.max(1) - 1 && p.tenants > 1 {
                Some((p.nodes as u64 * 8) / 4)
            } else {
                None
            },
        })
        .collect();
    // Running fill: whole nodes or node parts, node by node, to the busy fraction.
    let mut running = Vec::new();
    let mut id = 0;
    for (i, node) in nodes.iter().enumerate() {
        let gpus = kinds
            .iter()
            .find(|k| Some(k.0) == node.model.as_deref())
            .map(|k| k.2)
            .unwrap_or(8);
        let mut free: Vec<u64> = (0..gpus as u64)
            .filter(|g| !node.down.contains(g))
            .collect();
        while !free.is_empty() && rng.gen_bool(p.busy.clamp(0.0, 1.0)) {
            let size = *[1usize, 2, 4, 8].choose(&mut rng).unwrap();
            let size = size.min(free.len());
            let held: Vec<u64> = free.drain(..size).collect();
            let prio = rng.gen_range(0..3);
            running.push(RawRunning {
                id: format!("run{id:05}"),
                tenant: Some(tenants[rng.gen_range(0..tenants.len())].name.clone()),
                priority: prio,
                preemptible: rng.gen_bool(0.5),
                checkpoint_cost: Some(rng.gen_range(0..7200) as f64),
                gpus: BTreeMap::from([(node.name.clone(), held.clone())]),
                cpu_milli: Some(held.len() as u64 * 8_000),
                memory_mib: Some(held.len() as u64 * 65_536),
                ..Default::default()
            });
            id += 1;
            let _ = i;
        }
    }
    // Gang sizes per 100 jobs: median 1 GPU, mean ~4.2, close to the Helios clusters'
    // published summary (median 1, mean 3.7 GPUs per GPU job; shared/traces/helios).
    let sizes: Vec<u32> = [
        (1u32, 60usize),
        (2, 10),
        (4, 10),
        (8, 12),
        (16, 5),
        (32, 2),
        (64, 1),
    ]
    .iter()
    .flat_map(|&(s, n)| std::iter::repeat_n(s, n))
    .collect();
    let mut pending = Vec::with_capacity(p.pending);
    for i in 0..p.pending {
        let sharer = rng.gen_bool(p.sharers.clamp(0.0, 1.0));
        let mut gpus = if sharer {
            1
        } else {
            *sizes.choose(&mut rng).unwrap()
        };
        gpus = gpus.min(p.max_gang.max(1));
        let mut job = RawPending {
            id: format!("job{i:05}"),
            tenant: Some(tenants[rng.gen_range(0..tenants.len())].name.clone()),
            gpus: gpus as u64,
            priority: rng.gen_range(0..5),
            wait: Some(rng.gen_range(0..36_000) as f64),
            cpu_milli: Some(gpus as u64 * 4_000),
            memory_mib: Some(gpus as u64 * 32_768),
            ..Default::default()
        };
        if sharer {
            job.gpu_milli = Some(*[250u64, 500, 300].choose(&mut rng).unwrap());
        } else {
            match rng.gen_range(0..10) {
                0 | 1 => job.gpu_type = Some(GpuTypes::One("H100".into())),
                2 => job.gpu_type = Some(GpuTypes::Many(vec!["A100".into(), "H100".into()])),
                _ => {}
            }
            if gpus > 8 {
                match rng.gen_range(0..4) {
                    0 => job.within = Some("rack".into()),
                    1 => job.gpus_per_node = Some(8),
                    2 => job.max_nodes = Some((gpus as u64).div_ceil(8) + 1),
                    _ => {}
                }
                job.workload =
                    Some(["llm-3d", "data-parallel", "default"][rng.gen_range(0..3)].to_string());
            } else if gpus > 1 && rng.gen_bool(0.5) {
                job.within = Some("node".into());
            }
        }
        pending.push(job);
    }
    RawInstance {
        nodes,
        tenants: Some(tenants),
        running,
        pending,
        policy: Some(RawPolicy {
            time_limit: Some(p.time_limit),
            mip_gap: Some(0.01),
            ..Default::default()
        }),
    }
}
