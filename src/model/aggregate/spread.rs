//! A floor under the spread penalty of each gang, from the best capacity it could reach.
//!
//! For job j (g_j GPUs, priority pi_j, accepted types M_j) let pot_n be the GPUs of node n
//! that are free or held whole by preemptible work of priority below pi_j, on nodes of M_j:
//! all the job could ever take there; with a fixed shape of k_j GPUs on every node it uses,
//! pot_n is k_j where that count reaches k_j and 0 where it does not. Any
//! placement of j covers at least U_j node units, R_j racks and P_j pods, where U_j is the
//! fewest units whose pot sums reach g_j (likewise R_j over racks, P_j over pods). So
//!
//! ```text
//! spread_j >= w g_j ((s_node - 1) max(0, U_j - u_j) + (s_rack - 1)(R_j - 1) + (s_pod - 1)(P_j - 1))
//! ```
//!
//! pot_n is also capped by the CPU and memory the job could have there: floor((c_n + the
//! shares of every preemptible job on n) / rho_j), rho_j its CPU per GPU (rounded down to
//! its level, [`super::resources::Levels`]), and the same for memory.
//!
//! with u_j the job's baseline units ([`Topology::min_units`]) and s the workload's slowdowns.
//! Levels are joined where that is cheap: a placement inside one rack uses at least U_j^r
//! units (the fewest units of the best single rack), one that leaves the rack at least two
//! racks, so the floor is min(penalty(U_j^r, 1 rack, 1 pod), penalty(U_j, max(2, R_j), P_j)). The aggregated model prices a start of
//! j at its value minus this floor, which keeps its bound valid.

use super::resources::Levels;
use super::supply::VictimPriorities;
use crate::instance::{Instance, PendingJob};
use crate::state::{resource_share, ClusterState};
use crate::topology::{spread_penalty, Span, Topology};
use std::collections::HashMap;

/// Prefix sums of domain capacity, largest domain first, at one level.
type Prefix = Vec<u64>;

/// Spread floors of the jobs of one round (capacity per accepted types and per-node cap,
/// computed once per distinct pair).
pub struct SpreadFloor<'a> {
    inst: &'a Instance,
    topo: &'a Topology,
    /// The nodes some job could take a GPU on: every other node reaches nothing.
    live: Vec<LiveNode>,
    /// The live nodes' offers, end to end.
    live_offers: Vec<(i64, u32)>,
    /// (rack, unit) of every node unit, racks ascending, where no unit spans racks
    /// ([`rack_of_units`]).
    unit_rack: Option<Vec<(usize, usize)>>,
    /// The most node units any one rack has (`u32::MAX` where units span racks): no
    /// placement inside one rack covers more.
    most_units_in_a_rack: u32,
    levels: HashMap<ReachKey, Reach>,
    /// How jobs' CPU and memory per GPU round down to the levels keying `levels`.
    per_gpu: Levels,
    /// The victims' priorities whose stand-ins key `levels` in place of jobs' priorities.
    victims: &'a VictimPriorities,
}

/// (rack, unit) of every node unit, racks ascending; `None` when some unit has nodes in two
/// racks.
fn rack_of_units(inst: &Instance, topo: &Topology) -> Option<Vec<(usize, usize)>> {
    let mut rack: Vec<Option<usize>> = vec![None; topo.units];
    for (n, node) in inst.nodes.iter().enumerate() {
        let r = rack[topo.unit_of[n]].get_or_insert(node.rack);
        if *r != node.rack {
            return None;
        }
    }
    let mut pairs: Vec<(usize, usize)> = rack
        .into_iter()
        .enumerate()
        .map(|(u, r)| (r.unwrap_or(0), u))
        .collect();
    pairs.sort_unstable();
    Some(pairs)
}

/// The most units of any one rack in `unit_rack` ((rack, unit) pairs, racks ascending;
/// `None`: units span racks, no limit).
fn most_units_in_a_rack(unit_rack: Option<&[(usize, usize)]>) -> u32 {
    let Some(pairs) = unit_rack else {
        return u32::MAX;
    };
    pairs
        .chunk_by(|a, b| a.0 == b.0)
        .map(|rack| rack.len() as u32)
        .max()
        .unwrap_or(0)
}

/// What a job's reach depends on: accepted types, GPUs per node, priority, CPU and memory
/// levels per GPU, and which GPUs it counts.
type ReachKey = (Vec<bool>, Option<u32>, i64, u64, u64, Reachable);

/// A node's CPU and memory left with every preemptible running job's share counted free
/// (`None`: unlimited). CPU and memory freed by a victim may go to any job, whatever its
/// priority, so every preemptible job's share is counted.
struct NodeResources {
    cpu: Option<u64>,
    mem: Option<u64>,
}

impl NodeResources {
    /// The GPUs a job of `cpu` and `mem` per GPU could take here at most, by CPU and memory
    /// (`u32::MAX`: no limit).
    fn gpu_cap(&self, cpu: u64, mem: u64) -> u32 {
        let cap = |left: Option<u64>, per_gpu: u64| match left {
            Some(left) if per_gpu > 0 => (left / per_gpu).min(u32::MAX as u64) as u32,
            _ => u32::MAX,
        };
        cap(self.cpu, cpu).min(cap(self.mem, mem))
    }
}

/// A node with GPUs some job could take (free, or held by preemptible work), and where it
/// lies: what a key's reach reads of it, in one place.
struct LiveNode {
    /// Its offers' place in [`SpreadFloor`]'s `live_offers`: (priority a job must exceed,
    /// GPUs), free GPUs at `i64::MIN`, then the GPUs of each preemptible running job at its
    /// priority.
    offers: std::ops::Range<usize>,
    node_type: usize,
    unit: usize,
    rack: usize,
    pod: usize,
    room: NodeResources,
}

/// The nodes with GPUs on offer, in node order, and their offers laid end to end.
fn live_nodes(
    inst: &Instance,
    topo: &Topology,
    offers: &[Vec<(i64, u32)>],
) -> (Vec<LiveNode>, Vec<(i64, u32)>) {
    let mut flat = Vec::new();
    let live = node_resources(inst)
        .into_iter()
        .enumerate()
        .filter(|&(n, _)| offers[n].iter().any(|&(_, g)| g > 0))
        .map(|(n, room)| {
            let start = flat.len();
            flat.extend(offers[n].iter().filter(|&&(_, g)| g > 0));
            LiveNode {
                offers: start..flat.len(),
                node_type: topo.node_type[n],
                unit: topo.unit_of[n],
                rack: inst.nodes[n].rack,
                pod: inst.nodes[n].pod,
                room,
            }
        })
        .collect();
    (live, flat)
}

/// Every node's [`NodeResources`].
fn node_resources(inst: &Instance) -> Vec<NodeResources> {
    let before = ClusterState::new(inst);
    let left = |x: Option<i64>| x.map(|v| v.max(0) as u64);
    let mut room: Vec<NodeResources> = (0..inst.nodes.len())
        .map(|n| NodeResources {
            cpu: left(before.cpu_free[n]),
            mem: left(before.mem_free[n]),
        })
        .collect();
    for r in inst
        .running
        .iter()
        .filter(|r| r.preemptible && inst.policy.preemption)
    {
        let total = r.gpu_count();
        for (n, idx) in &r.gpus {
            let share = |t: u64| resource_share(t, idx.len() as u32, total);
            let room = &mut room[*n];
            room.cpu = room.cpu.map(|c| c + share(r.cpu_milli));
            room.mem = room.mem.map(|m| m + share(r.memory_mib));
        }
    }
    room
}

impl<'a> SpreadFloor<'a> {
    /// Floors over the GPUs each node offers (`offers`, indexed by node).
    pub fn new(
        inst: &'a Instance,
        topo: &'a Topology,
        offers: &'a [Vec<(i64, u32)>],
        per_gpu: Levels,
        victims: &'a VictimPriorities,
    ) -> Self {
        let (live, live_offers) = live_nodes(inst, topo, offers);
        let unit_rack = rack_of_units(inst, topo);
        SpreadFloor {
            inst,
            topo,
            live,
            live_offers,
            most_units_in_a_rack: most_units_in_a_rack(unit_rack.as_deref()),
            unit_rack,
            levels: HashMap::new(),
            per_gpu,
            victims,
        }
    }

    /// Whether job j could start at all: the fewest nodes whose reach holds it are within its
    /// node limit (`max_nodes`, `gpus_per_node`, `within: node`) and, with `within: rack`,
    /// some one rack holds it. Reach counts every GPU the job could ever take (free, or held
    /// by preemptible work below it, capped by CPU and memory), so a job this rejects has no
    /// placement in any plan. (Where node units are not nodes, every job passes.)
    pub fn can_start(&mut self, job: &PendingJob) -> bool {
        if job.gpus == 0 || job.is_sharer() || self.topo.units != self.inst.nodes.len() {
            return true;
        }
        let fewest = self.fewest(job, Reachable::WithVictims);
        let fits_nodes = fewest.units.is_some_and(|u| u <= job.node_limit());
        let fits_rack =
            job.within != Some(crate::instance::Locality::Rack) || fewest.one_rack.is_some();
        fits_nodes && fits_rack
    }

    /// The fewest domains job j's GPUs could cover at each level, worked out once per key
    /// and size.
    fn fewest(&mut self, job: &PendingJob, reachable: Reachable) -> Fewest {
        let g = job.gpus as u64;
        let reach = self.reach(job, reachable);
        if let Some(known) = reach.fewest.get(&g) {
            return *known;
        }
        let f = Fewest {
            units: fewest(&reach.units, g),
            racks: fewest(&reach.racks, g),
            pods: fewest(&reach.pods, g),
            one_rack: reach
                .units_in_rack
                .iter()
                .filter_map(|prefix| fewest(prefix, g))
                .min(),
        };
        reach.fewest.insert(g, f);
        f
    }

    /// The reach of job j's key, computed on first use.
    fn reach(&mut self, job: &PendingJob, reachable: Reachable) -> &mut Reach {
        let g = job.gpus.max(1) as u64;
        let key = (
            self.topo.type_mask(job),
            job.gpus_per_node,
            self.victims.stand_in(job.priority),
            self.per_gpu.of_amount(job.cpu_milli / g),
            self.per_gpu.of_amount(job.memory_mib / g),
            reachable,
        );
        let (inst, topo) = (self.inst, self.topo);
        let live = (self.live.as_slice(), self.live_offers.as_slice());
        let unit_rack = self.unit_rack.as_deref();
        self.levels
            .entry(key)
            .or_insert_with_key(|key| Reach::new(inst, topo, live, unit_rack, key))
    }

    /// The floor of job j's spread penalty, 0 for jobs of one GPU or none.
    pub fn of(&mut self, job: &PendingJob) -> f64 {
        self.of_spanning(job, 0)
    }

    /// Whether some node offers a candidate victim's GPUs: where none does, every floor over
    /// the free GPUs is the floor itself.
    pub fn counts_victims(&self) -> bool {
        self.live_offers.iter().any(|&(p, _)| p != i64::MIN)
    }

    /// The floor of job j's spread penalty over the placements that take no preempted
    /// victim's GPU: at least [`Self::of`].
    pub fn of_free_only(&mut self, job: &PendingJob) -> f64 {
        self.floor(job, 0, Reachable::FreeOnly)
    }

    /// The floor of job j's spread penalty over the placements that cover at least
    /// `at_least_units` node units (0: every placement).
    pub fn of_spanning(&mut self, job: &PendingJob, at_least_units: u32) -> f64 {
        self.floor(job, at_least_units, Reachable::WithVictims)
    }

    /// The floor of job j's spread penalty over the placements that leave one rack (at least
    /// [`Self::of`]).
    pub fn of_leaving_rack(&mut self, job: &PendingJob) -> f64 {
        self.spans(job, 0, Reachable::WithVictims)
            .map_or(0.0, |(spread_out, _)| spread_out)
    }

    /// The floor over the placements on what `reachable` offers that cover at least
    /// `at_least_units` node units.
    fn floor(&mut self, job: &PendingJob, at_least_units: u32, reachable: Reachable) -> f64 {
        self.spans(job, at_least_units, reachable)
            .map_or(0.0, |(spread_out, one_rack)| {
                one_rack.map_or(spread_out, |p| p.min(spread_out))
            })
    }

    /// The floors over the placements of at least `at_least_units` units over several racks
    /// and, where some rack holds the job, inside one rack; `None` where no floor applies (a
    /// job of one GPU, a slowdown below 1, a job that cannot start).
    fn spans(
        &mut self,
        job: &PendingJob,
        at_least_units: u32,
        reachable: Reachable,
    ) -> Option<(f64, Option<f64>)> {
        let s = &job.slowdown;
        if job.gpus <= 1
            || [s.span_nodes, s.span_racks, s.span_pods]
                .iter()
                .any(|&f| f < 1.0)
        {
            return None; // (a slowdown below 1 would make the penalty fall with the span)
        }
        let Fewest {
            units: Some(units),
            racks: Some(racks),
            pods: Some(pods),
            one_rack,
        } = self.fewest(job, reachable)
        else {
            return None; // the job cannot start at all; the capacity rows see to it
        };
        // Over several racks: at least the fewest units, two racks, the fewest pods.
        let spread_out = self.penalty(job, units.max(at_least_units), racks.max(2), pods);
        // In one rack: the fewest units any one rack can do it with, where a rack has that
        // many units.
        let one_rack = one_rack
            .filter(|_| at_least_units <= self.most_units_in_a_rack)
            .map(|u| self.penalty(job, u.max(at_least_units), 1, 1));
        Some((spread_out, one_rack))
    }

    /// The penalty of job j over a span of `units` node units, `racks` racks and `pods` pods.
    fn penalty(&self, job: &PendingJob, units: u32, racks: u32, pods: u32) -> f64 {
        let span = Span {
            nodes: units,
            units,
            racks,
            pods,
            island_splits: 0,
        };
        spread_penalty(
            &span,
            self.topo.min_units(self.inst, job),
            job.gpus,
            &job.slowdown,
            self.inst.policy.weights.spread,
        )
    }

    /// N_j, the fewest GPUs of preempted victims that any placement of job j with a spread
    /// below `free_floor` (its floor over the free GPUs, [`Self::of_free_only`]) takes: at
    /// least one. Such a placement lies in one rack on at most U1 units, or over two racks or
    /// more, in at least the fewest pods, on at most U2 units (the most units whose penalty
    /// stays below the floor); it takes at most the free GPUs of its best U units (of one
    /// rack that could hold it, or of all), each counted within what the job reaches there,
    /// and victims' GPUs for the rest.
    pub fn victim_gpus_below(&mut self, job: &PendingJob, free_floor: f64) -> u64 {
        let g = job.gpus as u64;
        let Fewest {
            pods: Some(pods), ..
        } = self.fewest(job, Reachable::WithVictims)
        else {
            return g;
        };
        let one_rack = self.most_units_below(job, 1, 1, free_floor);
        let spread_out = self.most_units_below(job, 2, pods, free_floor);
        let rack_reach: Vec<u64> = (self.reach(job, Reachable::WithVictims).units_in_rack)
            .iter()
            .map(|prefix| prefix.last().copied().unwrap_or(0))
            .collect();
        let free = self.reach(job, Reachable::FreeWithinReach);
        let mut least = g;
        if let Some(most) = one_rack {
            for (prefix, &all) in free.units_in_rack.iter().zip(&rack_reach) {
                if all >= g {
                    least = least.min(g.saturating_sub(best_units(prefix, most)));
                }
            }
        }
        if let Some(most) = spread_out {
            least = least.min(g.saturating_sub(best_units(&free.units, most)));
        }
        least.max(1)
    }

    /// The most node units a placement of job j over `racks` racks and `pods` pods may cover
    /// with its penalty at most `ceiling` (`u32::MAX`: any number); `None` where even the
    /// fewest do not stay under it.
    fn most_units_below(
        &self,
        job: &PendingJob,
        racks: u32,
        pods: u32,
        ceiling: f64,
    ) -> Option<u32> {
        let least = self.topo.min_units(self.inst, job);
        let base = self.penalty(job, least, racks, pods);
        if base >= ceiling {
            return None;
        }
        let step = self.penalty(job, least + 1, racks, pods) - base;
        if step <= 0.0 {
            return Some(u32::MAX);
        }
        let more = ((ceiling - base) / step)
            .floor()
            .min(f64::from(u32::MAX / 2));
        Some(least.saturating_add(more as u32))
    }
}

/// The GPUs of the best `most` units of a prefix (sums, largest first).
fn best_units(prefix: &[u64], most: u32) -> u64 {
    let take = prefix.len().min(most as usize);
    if take == 0 {
        0
    } else {
        prefix[take - 1]
    }
}

/// Which GPUs a reach counts on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Reachable {
    /// Every GPU the job could ever take: free, or held by preemptible work below it.
    WithVictims,
    /// The free GPUs only.
    FreeOnly,
    /// The free GPUs of what [`Reachable::WithVictims`] counts: those a placement that
    /// takes victims' GPUs too may take without them.
    FreeWithinReach,
}

impl Reachable {
    /// What a node offers (`offers`: free GPUs at `i64::MIN`, then each victim's at its
    /// priority) a job of priority `priority`, its room capped by `cap` (CPU and memory) and
    /// its fixed shape `per_node`.
    fn pot(
        self,
        offers: &[(i64, u32)],
        priority: i64,
        cap: impl Fn(u32) -> u32,
        per_node: Option<u32>,
    ) -> u32 {
        let sum = |below: i64| -> u32 {
            offers
                .iter()
                .filter(|(p, _)| *p < below)
                .map(|(_, g)| g)
                .sum()
        };
        let free = || cap(sum(i64::MIN + 1));
        let all = || fixed_shape_pot(cap(sum(priority)), per_node);
        match self {
            Reachable::WithVictims => all(),
            Reachable::FreeOnly => fixed_shape_pot(free(), per_node),
            Reachable::FreeWithinReach => free().min(all()),
        }
    }
}

/// The fewest domains whose capacities (prefix sums, largest first) reach `g`.
fn fewest(prefix: &[u64], g: u64) -> Option<u32> {
    let i = prefix.partition_point(|&s| s < g);
    (i < prefix.len()).then_some(i as u32 + 1)
}

/// The fewest domains of each level whose reach holds a job's GPUs (`None`: none holds it),
/// and the fewest units of the best single rack.
#[derive(Debug, Clone, Copy)]
struct Fewest {
    units: Option<u32>,
    racks: Option<u32>,
    pods: Option<u32>,
    one_rack: Option<u32>,
}

/// What a job class can reach: prefix sums of capacity by unit, rack and pod, and by unit
/// inside each rack; and the [`Fewest`] of each job size asked so far (a round's jobs of
/// one class ask a few sizes).
struct Reach {
    units: Prefix,
    racks: Prefix,
    pods: Prefix,
    units_in_rack: RackPrefixes,
    fewest: HashMap<u64, Fewest>,
}

impl Reach {
    /// The reach of `key` over every node; `unit_rack`: the rack of each unit, where no unit
    /// spans racks (then a unit's reach is its rack's piece, with no per-node bookkeeping).
    fn new(
        inst: &Instance,
        topo: &Topology,
        (live, offers): (&[LiveNode], &[(i64, u32)]),
        unit_rack: Option<&[(usize, usize)]>,
        key: &ReachKey,
    ) -> Self {
        let (mask, per_node, priority, cpu, mem, reachable) = key;
        let (per_node, priority) = (*per_node, *priority);
        let mut units = vec![0u64; topo.units];
        let mut racks = vec![0u64; inst.racks.len().max(1)];
        let mut pods = vec![0u64; inst.pods.len().max(1)];
        // (rack, unit, GPUs) of each node, kept only where units span racks.
        let mut pieces: Vec<(usize, usize, u64)> = Vec::new();
        for node in live.iter().filter(|node| mask[node.node_type]) {
            let pot = reachable.pot(
                &offers[node.offers.clone()],
                priority,
                |reach| reach.min(node.room.gpu_cap(*cpu, *mem)),
                per_node,
            ) as u64;
            if pot == 0 {
                continue;
            }
            units[node.unit] += pot;
            racks[node.rack] += pot;
            pods[node.pod] += pot;
            if unit_rack.is_none() {
                pieces.push((node.rack, node.unit, pot));
            }
        }
        let units_in_rack = match unit_rack {
            Some(rack_units) => units_by_rack(&units, rack_units, racks.len()),
            None => pieces_by_rack(pieces, racks.len()),
        };
        Reach {
            units: prefix_sums(units),
            racks: prefix_sums(racks),
            pods: prefix_sums(pods),
            units_in_rack,
            fewest: HashMap::new(),
        }
    }
}

/// What a node offers a job of at most `room` GPUs there: with a fixed shape of k GPUs per
/// node, k where the room holds k and nothing where it does not (every node a fixed-shape
/// gang uses hosts exactly k of its GPUs).
fn fixed_shape_pot(room: u32, per_node: Option<u32>) -> u32 {
    match per_node {
        Some(k) if room >= k => k,
        Some(_) => 0,
        None => room,
    }
}

/// Each rack's units' reach as prefix sums, largest first, laid end to end: rack r's are
/// `flat[ends[r - 1]..ends[r]]` (from 0 for rack 0). One list for every rack, where a list
/// per rack cost a few hundred allocations per job class at 100k GPUs.
#[derive(Debug, PartialEq)]
struct RackPrefixes {
    flat: Vec<u64>,
    ends: Vec<usize>,
}

impl RackPrefixes {
    /// From each rack's units' reach in rack order (`(rack, GPUs)`, racks ascending).
    fn from_sorted(racks: usize, reach: impl Iterator<Item = (usize, u64)>) -> Self {
        let mut flat = Vec::new();
        let mut ends = vec![0; racks];
        for (r, pot) in reach {
            flat.push(pot);
            ends[r] = flat.len();
        }
        for r in 1..racks {
            ends[r] = ends[r].max(ends[r - 1]);
        }
        for rack in ranges(&ends) {
            sum_largest_first(&mut flat[rack]);
        }
        RackPrefixes { flat, ends }
    }

    /// Each rack's prefix sums.
    fn iter(&self) -> impl Iterator<Item = &[u64]> {
        ranges(&self.ends).map(|rack| &self.flat[rack])
    }
}

/// The consecutive ranges that end at `ends`, from 0.
fn ranges(ends: &[usize]) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    std::iter::once(0)
        .chain(ends.iter().copied())
        .zip(ends.iter().copied())
        .map(|(s, e)| s..e)
}

/// Each rack's units' reach, where every unit lies in one rack (`rack_units`: the units of
/// each rack, rack after rack).
fn units_by_rack(units: &[u64], rack_units: &[(usize, usize)], racks: usize) -> RackPrefixes {
    let reach = rack_units
        .iter()
        .map(|&(r, u)| (r, units[u]))
        .filter(|&(_, pot)| pot > 0);
    RackPrefixes::from_sorted(racks, reach)
}

/// Each rack's units' reach from (rack, unit, GPUs) pieces, summed per (rack, unit).
fn pieces_by_rack(mut pieces: Vec<(usize, usize, u64)>, racks: usize) -> RackPrefixes {
    pieces.sort_unstable();
    let mut summed: Vec<(usize, usize, u64)> = Vec::with_capacity(pieces.len());
    for (r, u, pot) in pieces {
        match summed.last_mut() {
            Some(last) if (last.0, last.1) == (r, u) => last.2 += pot,
            _ => summed.push((r, u, pot)),
        }
    }
    RackPrefixes::from_sorted(racks, summed.into_iter().map(|(r, _, pot)| (r, pot)))
}

/// Prefix sums of capacities, largest first, zero capacities left out (they reach nothing).
fn prefix_sums(mut caps: Vec<u64>) -> Prefix {
    caps.retain(|&c| c > 0);
    sum_largest_first(&mut caps);
    caps
}

/// Sort capacities largest first and turn them into their prefix sums, in place. Capacities
/// are GPU counts, mostly small: long lists are counted by value rather than compared.
fn sum_largest_first(caps: &mut [u64]) {
    let largest = caps.iter().copied().max().unwrap_or(0);
    if caps.len() > COUNTED_FROM && largest <= COUNTED_UP_TO {
        let mut count = vec![0u32; largest as usize + 1];
        for &c in caps.iter() {
            count[c as usize] += 1;
        }
        let mut at = 0;
        for (c, &n) in count.iter().enumerate().rev() {
            caps[at..at + n as usize].fill(c as u64);
            at += n as usize;
        }
    } else {
        caps.sort_unstable_by(|a, b| b.cmp(a));
    }
    let mut sum = 0u64;
    for c in caps.iter_mut() {
        sum += *c;
        *c = sum;
    }
}

/// Lists of more than this many capacities, none above [`COUNTED_UP_TO`], are sorted by
/// counting ([`sum_largest_first`]); shorter ones (a rack's units) by comparison.
const COUNTED_FROM: usize = 256;
/// See [`COUNTED_FROM`].
const COUNTED_UP_TO: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_racks_units_are_summed_the_same_with_or_without_the_unit_rack_map() {
        // Units 0 and 1 in rack 0 (unit 1 over two nodes), unit 2 in rack 1.
        // (Each rack's prefix sums, largest first.)
        let lists = |p: RackPrefixes| p.iter().map(<[u64]>::to_vec).collect::<Vec<_>>();
        let pieces = vec![(0, 1, 2), (1, 2, 4), (0, 1, 3), (0, 0, 1)];
        assert_eq!(lists(pieces_by_rack(pieces, 2)), vec![vec![5, 6], vec![4]]);
        let rack_units = [(0, 0), (0, 1), (1, 2), (1, 3)];
        assert_eq!(
            lists(units_by_rack(&[1, 5, 4, 0], &rack_units, 2)),
            vec![vec![5, 6], vec![4]]
        );
        // A unit over two racks counts in each; a rack with none reaches nothing.
        assert_eq!(
            lists(pieces_by_rack(vec![(0, 0, 2), (2, 0, 3)], 3)),
            vec![vec![2], vec![], vec![3]]
        );
    }
}
