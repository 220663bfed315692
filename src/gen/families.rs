//! The generator's families of cluster states besides the default one. Each family is the
//! default round's layout (racks of `nodes_per_rack`, pods of `racks_per_pod`, the same gang
//! size mix) with one feature that real clusters have and the default generator lacks;
//! [`Family::Mixed`] has all of them at once but `skewed-resources` and `nvlink-racks` (added
//! later; mixed rounds stay as they were):
//!
//! - `mixed-types`: GPU types mixed inside racks: per node 70% DGX H100, 20% DGX A100, 10%
//!   4-GPU L40S, and pending jobs that ask for a type more often.
//! - `whole-nodes`: running jobs fill whole nodes one after another in a random node order
//!   (some spanning two nodes) until the busy fraction is reached; the other nodes are empty.
//! - `partial-nodes`: running jobs of 1-8 GPUs on scattered GPU indices of every node, a third
//!   of them preemptible, at random priorities and checkpoint costs.
//! - `tight-cpu`: nodes with 10 CPUs and 96 GiB per GPU, pending jobs asking 4-16 CPUs and
//!   32-160 GiB per GPU, so CPU and memory bind before GPUs on many nodes.
//! - `skewed-resources`: `tight-cpu` whose running jobs hold 2-16 CPUs and 16-192 GiB per GPU,
//!   drawn apart (as much as their node has left), so some nodes keep CPU without memory and
//!   others memory without CPU.
//! - `sharers`: running sharers (gpu_milli) on a tenth of the busy GPUs, a third of the
//!   pending jobs sharers.
//! - `quotas`: five tenants, four of them with a quota a little above what they hold.
//! - `constrained`: most gangs ask for a GPU type, a `within` level, a `max_nodes` or a
//!   `gpus_per_node`.
//! - `nvlink-racks`: every third rack is a rack-scale NVLink domain of 4-GPU GB200 trays (one
//!   `nvlink_domain` per rack), the others the default hardware; running jobs of 1-32 GPUs
//!   placed as a topology-unaware scheduler leaves them (first fit over the nodes in a random
//!   order, so gangs span nodes and racks); a quarter of the pending gangs of more than 8 GPUs
//!   ask for GB200.
//!
//! Same parameters and seed, same instance.

use super::GenParams;
use crate::instance::raw::*;
use rand::{seq::SliceRandom, Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// The kind of cluster state a generated round has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, clap::ValueEnum)]
pub enum Family {
    /// Homogeneous racks, node-by-node fill (the generator's original rounds).
    #[default]
    Default,
    /// GPU types mixed inside racks (mostly H100, some A100, some 4-GPU L40S).
    MixedTypes,
    /// Whole nodes filled in random node order, the rest empty.
    WholeNodes,
    /// 1-8 GPU running jobs on scattered GPUs, a third preemptible.
    PartialNodes,
    /// CPU and memory per GPU tight enough to bind.
    TightCpu,
    /// Tight CPU and memory, running jobs holding them in uneven proportions.
    SkewedResources,
    /// Running and pending sharers (gpu_milli).
    Sharers,
    /// Binding quotas on most tenants.
    Quotas,
    /// Gangs with type, within, max_nodes and gpus_per_node constraints.
    Constrained,
    /// All of the above but skewed resources and NVLink racks.
    Mixed,
    /// Rack-scale NVLink domains of GB200 trays; running jobs scattered over nodes and racks.
    NvlinkRacks,
}

impl Family {
    /// Every family, in the order benches print them.
    pub const ALL: [Family; 11] = [
        Family::Default,
        Family::MixedTypes,
        Family::WholeNodes,
        Family::PartialNodes,
        Family::TightCpu,
        Family::SkewedResources,
        Family::Sharers,
        Family::Quotas,
        Family::Constrained,
        Family::Mixed,
        Family::NvlinkRacks,
    ];

    /// The family's name, as `--family` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Default => "default",
            Family::MixedTypes => "mixed-types",
            Family::WholeNodes => "whole-nodes",
            Family::PartialNodes => "partial-nodes",
            Family::TightCpu => "tight-cpu",
            Family::SkewedResources => "skewed-resources",
            Family::Sharers => "sharers",
            Family::Quotas => "quotas",
            Family::Constrained => "constrained",
            Family::Mixed => "mixed",
            Family::NvlinkRacks => "nvlink-racks",
        }
    }

    /// The family of a name; `None` if unknown.
    pub fn parse(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == s)
    }

    /// Whether rounds of this family have the feature of family `f`.
    fn has(self, f: Family) -> bool {
        match self {
            Family::Mixed => f != Family::SkewedResources && f != Family::NvlinkRacks,
            Family::SkewedResources => f == self || f == Family::TightCpu,
            _ => self == f,
        }
    }
}

/// Node hardware: (model, GPU type, GPUs).
const KINDS: [(&str, &str, u64); 5] = [
    ("dgx-h100", "H100", 8),
    ("dgx-a100", "A100", 8),
    ("a100-pcie-8x", "A100", 8),
    ("l40s-pcie-4x", "L40S", 4),
    ("gb200-nvl72-tray", "GB200", 4),
];

/// The index in [`KINDS`] of a GB200 tray.
const GB200_TRAY: usize = 4;

/// A node being generated: the usable GPUs, CPU and memory not yet given to a running job.
struct GenNode {
    raw: RawNode,
    free: Vec<u64>,
    cpu_left: u64,
    mem_left: u64,
}

/// Generate an instance of `p.family` (any family but the default).
pub fn generate(p: &GenParams) -> RawInstance {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed ^ (0x5eed_0000 + p.family as u64));
    let f = p.family;
    let mut nodes = make_nodes(p, &mut rng);
    let tenant_count = if f.has(Family::Quotas) {
        p.tenants.max(5)
    } else {
        p.tenants.max(1)
    };
    let tenants: Vec<String> = (0..tenant_count).map(|t| format!("t{t}")).collect();
    let mut running = Vec::new();
    if f == Family::Mixed {
        fill_whole_nodes(&mut nodes, p.busy * 0.5, &tenants, &mut rng, &mut running);
        fill_partial(
            &mut nodes,
            p.busy * 0.6,
            f,
            &tenants,
            &mut rng,
            &mut running,
        );
    } else if f == Family::WholeNodes {
        fill_whole_nodes(&mut nodes, p.busy, &tenants, &mut rng, &mut running);
    } else if f == Family::NvlinkRacks {
        fill_scattered(&mut nodes, p.busy, &tenants, &mut rng, &mut running);
    } else {
        fill_partial(&mut nodes, p.busy, f, &tenants, &mut rng, &mut running);
    }
    let pending = (0..p.pending)
        .map(|i| pending_job(i, p, &tenants, &mut rng))
        .collect();
    let tenants = make_tenants(p, &tenants, &nodes, &running);
    RawInstance {
        nodes: nodes.into_iter().map(|n| n.raw).collect(),
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

/// The nodes: the rack cycle of the default generator, or per node 70% H100, 20% A100 and
/// 10% L40S where types mix inside racks; CPU and memory per GPU generous or tight.
fn make_nodes(p: &GenParams, rng: &mut ChaCha8Rng) -> Vec<GenNode> {
    let f = p.family;
    (0..p.nodes)
        .map(|i| {
            let rack = i / p.nodes_per_rack.max(1);
            let pod = rack / p.racks_per_pod.max(1);
            let kind = if f.has(Family::NvlinkRacks) && rack.is_multiple_of(3) {
                GB200_TRAY
            } else if f.has(Family::MixedTypes) {
                match rng.gen_range(0..10) {
                    0..=6 => 0,
                    7 | 8 => 1,
                    _ => 3,
                }
            } else {
                match rack % 7 {
                    0..=2 => 0,
                    3 | 4 => 1,
                    5 => 2,
                    _ => 3,
                }
            };
            let (model, _, gpus) = KINDS[kind];
            let down: Vec<u64> = (0..gpus)
                .filter(|_| rng.gen_bool(p.down.clamp(0.0, 1.0)))
                .collect();
            let (cpu, mem) = if f.has(Family::TightCpu) {
                (10_000, 98_304)
            } else {
                (16_000, 131_072)
            };
            let free = (0..gpus).filter(|g| !down.contains(g)).collect();
            GenNode {
                cpu_left: gpus * cpu,
                mem_left: gpus * mem,
                raw: RawNode {
                    name: format!("n{i:05}"),
                    model: Some(model.to_string()),
                    rack: Some(format!("r{rack:03}")),
                    pod: Some(format!("p{pod:02}")),
                    nvlink_domain: (kind == GB200_TRAY).then(|| format!("r{rack:03}-nvl")),
                    down,
                    cpu_milli: Some(gpus * cpu),
                    memory_mib: Some(gpus * mem),
                    ..Default::default()
                },
                free,
            }
        })
        .collect()
}

/// A running job of `held` GPUs per node: a third preemptible, priority 0-4, checkpoint cost
/// up to ten GPU-hours per GPU, 6 CPUs and 48 GiB per GPU.
fn running_job(
    id: usize,
    held: BTreeMap<String, Vec<u64>>,
    tenants: &[String],
    rng: &mut ChaCha8Rng,
) -> RawRunning {
    let gpus: u64 = held.values().map(|g| g.len() as u64).sum();
    RawRunning {
        id: format!("run{id:05}"),
        tenant: Some(tenants[rng.gen_range(0..tenants.len())].clone()),
        priority: rng.gen_range(0..5),
        preemptible: rng.gen_bool(1.0 / 3.0),
        checkpoint_cost: Some((rng.gen_range(0..36_000) * gpus) as f64),
        gpus: held,
        cpu_milli: Some(gpus * 6_000),
        memory_mib: Some(gpus * 49_152),
        ..Default::default()
    }
}

/// The GPUs running jobs hold at `busy` of the nodes' usable GPUs.
fn busy_target(nodes: &[GenNode], busy: f64) -> usize {
    let usable: usize = nodes.iter().map(|n| n.free.len()).sum();
    (usable as f64 * busy.clamp(0.0, 1.0)) as usize
}

/// Fill whole nodes in a random node order until `busy` of the usable GPUs are held; one job
/// in four spans the node and the next one of the same hardware.
fn fill_whole_nodes(
    nodes: &mut [GenNode],
    busy: f64,
    tenants: &[String],
    rng: &mut ChaCha8Rng,
    running: &mut Vec<RawRunning>,
) {
    let target = busy_target(nodes, busy);
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.shuffle(rng);
    let mut held_total = 0;
    let mut k = 0;
    while held_total < target && k < order.len() {
        let span = if rng.gen_bool(0.25) && k + 1 < order.len() {
            2
        } else {
            1
        };
        let mut held = BTreeMap::new();
        for &n in &order[k..k + span] {
            let gpus = std::mem::take(&mut nodes[n].free);
            held_total += gpus.len();
            if !gpus.is_empty() {
                held.insert(nodes[n].raw.name.clone(), gpus);
            }
        }
        k += span;
        if !held.is_empty() {
            let id = running.len();
            running.push(running_job(id, held, tenants, rng));
        }
    }
}

/// Running jobs of 1-32 GPUs (the gang size mix, doubled) until `busy` of the usable GPUs are
/// held, each on the first free GPUs of the nodes in a random order, as a scheduler that knows
/// no topology leaves them: a gang takes what each node it meets has free, across racks.
fn fill_scattered(
    nodes: &mut [GenNode],
    busy: f64,
    tenants: &[String],
    rng: &mut ChaCha8Rng,
    running: &mut Vec<RawRunning>,
) {
    let target = busy_target(nodes, busy);
    let mut held_total = 0;
    while held_total < target {
        let mut left = (2 * gang_size(rng))
            .min(32)
            .min((target - held_total) as u64);
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.shuffle(rng);
        let mut held = BTreeMap::new();
        for n in order {
            if left == 0 {
                break;
            }
            let take = (left as usize).min(nodes[n].free.len());
            if take > 0 {
                let gpus: Vec<u64> = nodes[n].free.drain(..take).collect();
                held.insert(nodes[n].raw.name.clone(), gpus);
                left -= take as u64;
                held_total += take;
            }
        }
        if held.is_empty() {
            break;
        }
        let id = running.len();
        running.push(running_job(id, held, tenants, rng));
    }
}

/// On every node, while a draw under `busy` says so, a running job of 1-8 GPUs (at most what
/// is free) on random free GPU indices; with sharers, a tenth of them are 1-GPU sharers, two
/// or three on one GPU.
fn fill_partial(
    nodes: &mut [GenNode],
    busy: f64,
    f: Family,
    tenants: &[String],
    rng: &mut ChaCha8Rng,
    running: &mut Vec<RawRunning>,
) {
    for node in nodes.iter_mut() {
        node.free.shuffle(rng);
        while !node.free.is_empty() && rng.gen_bool(busy.clamp(0.0, 1.0)) {
            if f.has(Family::Sharers) && rng.gen_bool(0.1) {
                let gpu = node.free.pop().unwrap();
                for _ in 0..rng.gen_range(2..=3) {
                    let held = BTreeMap::from([(node.raw.name.clone(), vec![gpu])]);
                    let mut job = running_job(running.len(), held, tenants, rng);
                    job.gpu_milli = Some(*[200u64, 250, 300].choose(rng).unwrap());
                    running.push(job);
                }
                continue;
            }
            let size = rng.gen_range(1..=8usize).min(node.free.len());
            let mut gpus: Vec<u64> = node.free.drain(..size).collect();
            gpus.sort_unstable();
            let held = BTreeMap::from([(node.raw.name.clone(), gpus)]);
            let mut job = running_job(running.len(), held, tenants, rng);
            if f.has(Family::SkewedResources) {
                skew_resources(&mut job, node, rng);
            }
            running.push(job);
        }
    }
}

/// A running job's CPU and memory drawn apart: 2-16 CPUs and 16-192 GiB per GPU, at most
/// what its node has left (taken from it).
fn skew_resources(job: &mut RawRunning, node: &mut GenNode, rng: &mut ChaCha8Rng) {
    let gpus: u64 = job.gpus.values().map(|g| g.len() as u64).sum();
    let cpu = *[2_000u64, 4_000, 8_000, 12_000, 16_000]
        .choose(rng)
        .unwrap();
    let mem = *[16_384u64, 32_768, 98_304, 131_072, 196_608]
        .choose(rng)
        .unwrap();
    let (cpu, mem) = (
        (gpus * cpu).min(node.cpu_left),
        (gpus * mem).min(node.mem_left),
    );
    node.cpu_left -= cpu;
    node.mem_left -= mem;
    job.cpu_milli = Some(cpu);
    job.memory_mib = Some(mem);
}

/// Tenants with weights 3, 2, 1, 1, ...; with binding quotas, every tenant but the first has a
/// quota of what it holds plus 3% of the GPUs; otherwise the last tenant has a quota of a
/// quarter of the GPUs (as the default generator), raised to what it holds.
fn make_tenants(
    p: &GenParams,
    names: &[String],
    nodes: &[GenNode],
    running: &[RawRunning],
) -> Vec<RawTenant> {
    let total: u64 = nodes.iter().map(|n| n.raw_gpus()).sum();
    let held = |t: &str| -> u64 {
        running
            .iter()
            .filter(|r| r.tenant.as_deref() == Some(t) && r.gpu_milli.is_none())
            .map(|r| r.gpus.values().map(|g| g.len() as u64).sum::<u64>())
            .sum::<u64>()
            + running
                .iter()
                .filter(|r| r.tenant.as_deref() == Some(t) && r.gpu_milli.is_some())
                .count() as u64
    };
    names
        .iter()
        .enumerate()
        .map(|(t, name)| {
            let quota = if p.family.has(Family::Quotas) {
                (t > 0).then(|| held(name) + total * 3 / 100)
            } else {
                (t == names.len() - 1 && names.len() > 1).then(|| (total / 4).max(held(name)))
            };
            RawTenant {
                name: name.clone(),
                weight: [3.0, 2.0, 1.0, 1.0][t % 4],
                quota,
            }
        })
        .collect()
}

impl GenNode {
    fn raw_gpus(&self) -> u64 {
        KINDS
            .iter()
            .find(|k| Some(k.0) == self.raw.model.as_deref())
            .map_or(8, |k| k.2)
    }
}

/// Gang sizes per 100 jobs, as the default generator (median 1 GPU, mean ~4.2).
const SIZES: [(u64, usize); 7] = [
    (1, 60),
    (2, 10),
    (4, 10),
    (8, 12),
    (16, 5),
    (32, 2),
    (64, 1),
];

/// One pending job: the default size mix, sharers, CPU and memory, and the family's
/// constraints.
fn pending_job(i: usize, p: &GenParams, tenants: &[String], rng: &mut ChaCha8Rng) -> RawPending {
    let f = p.family;
    let share = if f.has(Family::Sharers) {
        0.33
    } else {
        p.sharers
    };
    let sharer = rng.gen_bool(share.clamp(0.0, 1.0));
    let gpus = gang_size(rng);
    let gpus = if sharer {
        1
    } else {
        gpus.min(p.max_gang.max(1) as u64)
    };
    let (cpu, mem) = if f.has(Family::TightCpu) {
        (
            *[4_000u64, 8_000, 12_000, 16_000].choose(rng).unwrap(),
            *[32_768u64, 65_536, 98_304, 163_840].choose(rng).unwrap(),
        )
    } else {
        (4_000, 32_768)
    };
    let mut job = RawPending {
        id: format!("job{i:05}"),
        tenant: Some(tenants[rng.gen_range(0..tenants.len())].clone()),
        gpus,
        priority: rng.gen_range(0..5),
        wait: Some(rng.gen_range(0..36_000) as f64),
        cpu_milli: Some(gpus * cpu),
        memory_mib: Some(gpus * mem),
        ..Default::default()
    };
    if sharer {
        job.gpu_milli = Some(*[250u64, 500, 300].choose(rng).unwrap());
        return job;
    }
    constrain(&mut job, f, rng);
    job
}

/// A gang size from [`SIZES`].
fn gang_size(rng: &mut ChaCha8Rng) -> u64 {
    let mut pick = rng.gen_range(0..100usize);
    for (s, n) in SIZES {
        if pick < n {
            return s;
        }
        pick -= n;
    }
    1
}

/// Type, locality, node-count and shape constraints: as the default generator's mix, or most
/// gangs constrained in the constrained family; with NVLink racks, a quarter of the gangs of
/// more than 8 GPUs ask for GB200.
fn constrain(job: &mut RawPending, f: Family, rng: &mut ChaCha8Rng) {
    let gpus = job.gpus;
    let strict = f.has(Family::Constrained);
    let typed = if strict { 6 } else { 3 };
    match rng.gen_range(0..10) {
        x if x < typed / 2 => job.gpu_type = Some(GpuTypes::One("H100".into())),
        x if x < typed => {
            let other = if f.has(Family::MixedTypes) && gpus <= 4 {
                "L40S"
            } else {
                "A100"
            };
            job.gpu_type = Some(GpuTypes::Many(vec![other.into(), "H100".into()]));
        }
        _ => {}
    }
    if gpus > 8 && f.has(Family::NvlinkRacks) && rng.gen_bool(0.25) {
        job.gpu_type = Some(GpuTypes::One("GB200".into()));
    }
    if gpus > 8 {
        match rng.gen_range(0..if strict { 4 } else { 6 }) {
            0 => job.within = Some("rack".into()),
            1 => job.gpus_per_node = Some(8),
            2 => job.max_nodes = Some(gpus.div_ceil(8) + u64::from(!strict)),
            3 => job.within = Some("pod".into()),
            _ => {}
        }
        job.workload =
            Some(["llm-3d", "data-parallel", "default"][rng.gen_range(0..3)].to_string());
    } else if gpus > 1 && rng.gen_bool(if strict { 0.8 } else { 0.5 }) {
        job.within = Some("node".into());
    }
}
