//! Classes of interchangeable jobs, their counts and values, and what they take of each type.
//!
//! ```text
//! n_c in Z+           jobs of class c that start
//! z_c                 value of the class's best n_c jobs:  z_c <= F_c(k) + v_c,k+1 (n_c - k)
//! x_ct in Z+          jobs of class c on GPU type t:       sum_t x_ct = n_c
//! slots_t,L  += s_c x_ct    for size >= L        (s_c = 1 one-node, g_c / gpus_per_node)
//! digits_t,L += g_c x_ct    for L dividing size
//! ```
//! (v_c,k: the class's job values net of their spread floors, best first; F_c(k) their prefix
//! sums; see [`top_k_value`].) x_ct is integer where a job of the class lands on one type; a
//! multi-node gang accepting several types may mix them, so its x_ct is continuous. CPU-only
//! jobs use no GPU: one class each, counted at full value, a safe relaxation.

use super::compact::{self, CompactGang};
use super::packing::TypeTake;
use super::rack_blocks::{self, RackRows};
use super::resources::{Levels, ResourceUse};
use super::slots::LevelRows;
use super::spread::SpreadFloor;
use super::supply::VictimPriorities;
use super::unit_blocks::{self, UnitRows};
use super::unit_spread;
use super::victim_spread::{self, VictimUsers};
use crate::instance::{Instance, PendingJob};
use crate::model::MipModel;
use crate::objective::job_value;
use crate::topology::Topology;
use crate::units::{gpu_units, TOLERANCE};
use good_lp::{variable, Expression, Variable, VariableDefinition};
use std::collections::BTreeMap;

/// What makes jobs interchangeable for capacity: accepted types, size, share, shape, whether
/// they sit on one node, tenant, priority, and the levels of CPU and memory per GPU
/// ([`super::resources::Levels`]; 0 where no node limits the resource).
type Key = (
    Vec<bool>,
    u32,
    Option<u32>,
    Option<u32>,
    bool,
    usize,
    i64,
    u64,
    u64,
    u64,
);

/// The classes and what they ask of each type.
#[derive(Default)]
pub struct Demand {
    /// Each class's jobs, best first, and its count variable n_c.
    pub classes: Vec<(Vec<usize>, Variable)>,
    /// Per type: (priority, GPUs per job, x_ct) of the classes that may use it.
    pub type_users: Vec<Vec<(i64, f64, Variable)>>,
    /// Per type: what each class's jobs take, for the packing floor.
    pub takes: Vec<Vec<TypeTake>>,
    /// Slots and digits rows per (type, level).
    pub level_rows: LevelRows,
    /// Per tenant: (GPUs per job, n_c) of its GPU classes.
    pub tenant_starts: Vec<Vec<(f64, Variable)>>,
    /// Per type: what each class of whole GPUs asks for the CPU and memory rows.
    pub resource_users: Vec<Vec<ResourceUse>>,
    /// Per pending job: the spread floor its value is taken net of (0 outside every class).
    pub spread_floors: Vec<f64>,
    /// The classes whose spread floors count on victims ([`victim_spread`]).
    pub victim_users: VictimUsers,
    /// The rack rows' left sides ([`rack_blocks`]).
    pub rack_rows: RackRows,
    /// The unit rows' left sides ([`unit_blocks`]).
    pub unit_rows: UnitRows,
    /// Per type: (reservations whose nodes the class's jobs may use, as a bit mask; GPUs per
    /// job; x_ct) of the classes of whole GPUs ([`super::reserved`]).
    pub reserved_users: Vec<Vec<(u64, f64, Variable)>>,
    /// (CPU, memory, n_c) of each CPU-only job's class ([`super::cpu_only`]).
    pub cpu_only: Vec<(u64, u64, Variable)>,
    /// Per type: whether its units hold several nodes ([`unit_blocks::multi_node_types`]).
    multi_node: Vec<bool>,
}

/// The most classes a round's levels may make: past it the levels get coarser.
pub const CLASS_BUDGET: usize = 5_000;

/// What a job's class reads of the round besides the job: whether some node limits CPU,
/// whether some node limits memory, the levels of CPU and memory per GPU, and the victims'
/// priorities.
pub struct KeyRules {
    limited: (bool, bool),
    levels: Levels,
    victims: VictimPriorities,
}

impl KeyRules {
    /// The round's rules at the finest levels, every victim priority told apart.
    pub fn new(inst: &Instance, victims: VictimPriorities) -> Self {
        KeyRules {
            limited: (
                inst.nodes.iter().any(|n| n.cpu_milli.is_some()),
                inst.nodes.iter().any(|n| n.memory_mib.is_some()),
            ),
            levels: Levels::new(Levels::FINEST),
            victims,
        }
    }

    /// The levels of CPU and memory per GPU that key the classes.
    pub fn levels(&self) -> Levels {
        self.levels
    }

    /// The victims' priorities whose stand-ins key the classes.
    pub fn victims(&self) -> &VictimPriorities {
        &self.victims
    }

    /// The same rules at other levels and victims' priorities.
    fn with(&self, levels: Levels, victims: &VictimPriorities) -> Self {
        KeyRules {
            limited: self.limited,
            levels,
            victims: victims.clone(),
        }
    }
}

/// The class of a GPU job under these rules: its priority is the one standing for it
/// ([`VictimPriorities::stand_in`]).
fn key(inst: &Instance, topo: &Topology, job: &PendingJob, rules: &KeyRules) -> Key {
    let per_gpu = |limited: bool, total: u64| {
        if limited {
            rules.levels.of_amount(total / job.gpus.max(1) as u64)
        } else {
            0
        }
    };
    (
        topo.type_mask(job),
        job.gpus,
        job.gpu_milli,
        job.gpus_per_node,
        job.node_limit() == 1,
        job.tenant,
        rules.victims.stand_in(job.priority),
        per_gpu(rules.limited.0, job.cpu_milli),
        per_gpu(rules.limited.1, job.memory_mib),
        inst.reserved_nodes_open_to(job),
    )
}

/// How many of the victims' priorities classes may tell apart, tried in turn after every
/// victim priority when the classes pass [`CLASS_BUDGET`] at every level.
const PRIORITY_BANDS: [usize; 4] = [64, 16, 4, 1];

/// The rules at the finest levels ([`Levels`]: 16, 8, 4 or 2 an octave) at which the round's
/// pending GPU jobs make at most [`CLASS_BUDGET`] classes; where even two levels an octave
/// make more, the same with the victims' priorities in fewer bands ([`PRIORITY_BANDS`],
/// [`VictimPriorities::banded`]); one level an octave and one band when none fits. Where
/// requests are diverse, finer levels make more classes than a round's time solves: 20,000
/// jobs asking 1-16 CPUs and 8-190 GiB per GPU at random make 11,300 classes at 16 levels an
/// octave (a 1.7 s build, the LP not solved within a 3 s round) and 4,300 at two (0.25 s,
/// solved in 1.1 s). Every level is at most the job's amount and every band's priority at
/// least the job's stand-in, so the rows hold at any step.
pub fn granularity(inst: &Instance, topo: &Topology, rules: KeyRules) -> KeyRules {
    let jobs: Vec<&PendingJob> = inst.pending.iter().filter(|j| j.gpus > 0).collect();
    let fits = |rules: &KeyRules| {
        let classes: std::collections::HashSet<Key> =
            jobs.iter().map(|j| key(inst, topo, j, rules)).collect();
        classes.len() <= CLASS_BUDGET
    };
    let mut tried: Option<VictimPriorities> = None;
    let bands = PRIORITY_BANDS.iter().map(|&b| rules.victims.banded(b));
    for victims in std::iter::once(rules.victims.clone()).chain(bands) {
        // Fewer victim priorities than bands leave them as they were: tried already.
        if tried.as_ref() == Some(&victims) {
            continue;
        }
        for bits in (1..=Levels::FINEST).rev() {
            let candidate = rules.with(Levels::new(bits), &victims);
            if fits(&candidate) {
                return candidate;
            }
        }
        tried = Some(victims);
    }
    rules.with(Levels::new(0), &rules.victims.banded(1))
}

/// Group the jobs into classes and add their variables and value rows.
pub fn build(
    inst: &Instance,
    topo: &Topology,
    integer: bool,
    rules: &KeyRules,
    spread_floor: &mut SpreadFloor,
    m: &mut MipModel,
) -> Demand {
    let ntypes = topo.type_names.len();
    let mut class_of: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (j, job) in inst.pending.iter().enumerate() {
        if job.gpus == 0 {
            continue; // CPU-only jobs use no GPU: counted below at full value, a safe relaxation
        }
        if inst.tenants[job.tenant]
            .quota
            .is_some_and(|q| job.gpu_equivalent() > q + TOLERANCE)
        {
            continue;
        }
        if !spread_floor.can_start(job) {
            continue; // no placement of the job exists in any plan
        }
        class_of
            .entry(key(inst, topo, job, rules))
            .or_default()
            .push(j);
    }
    let mut demand = Demand {
        type_users: vec![Vec::new(); ntypes],
        takes: (0..ntypes).map(|_| Vec::new()).collect(),
        tenant_starts: vec![Vec::new(); inst.tenants.len()],
        resource_users: vec![Vec::new(); ntypes],
        reserved_users: vec![Vec::new(); ntypes],
        spread_floors: vec![0.0; inst.pending.len()],
        multi_node: unit_blocks::multi_node_types(topo),
        ..Demand::default()
    };
    for (key, members) in &class_of {
        gpu_class(
            inst,
            topo,
            integer,
            spread_floor,
            key,
            members,
            &mut demand,
            m,
        );
    }
    let int = |v: VariableDefinition| if integer { v.integer() } else { v };
    // CPU-only jobs: one class each, their CPU and memory in the rows of [`super::cpu_only`];
    // a job no node could ever hold has no class.
    for (j, job) in inst.pending.iter().enumerate().filter(|(_, j)| j.gpus == 0) {
        if !inst
            .nodes
            .iter()
            .any(|n| n.sizes_hold(job.cpu_milli, job.memory_mib))
        {
            continue;
        }
        let n_c = m.problem.add(int(variable().min(0).max(1)));
        demand.cpu_only.push((job.cpu_milli, job.memory_mib, n_c));
        let ranked = top_k_value(inst, spread_floor, &[j], n_c, &mut demand.spread_floors, m);
        demand.classes.push((ranked, n_c));
    }
    demand
}

/// One class of GPU jobs: n_c, z_c, and x_ct (with y_ct for a compact gang) per type.
#[allow(clippy::too_many_arguments)]
fn gpu_class(
    inst: &Instance,
    topo: &Topology,
    integer: bool,
    spread_floor: &mut SpreadFloor,
    key: &Key,
    members: &[usize],
    demand: &mut Demand,
    m: &mut MipModel,
) {
    let int = |v: VariableDefinition| if integer { v.integer() } else { v };
    let (mask, gpus, milli, gpn, one_node, _, prio, ..) = key;
    let n_c = m
        .problem
        .add(int(variable().min(0).max(members.len() as f64)));
    let ranked = top_k_value(
        inst,
        spread_floor,
        members,
        n_c,
        &mut demand.spread_floors,
        m,
    );
    let units_are_nodes = topo.units_are_nodes_on(mask);
    let compact = (!*one_node && gpn.is_none() && milli.is_none() && units_are_nodes)
        .then(|| CompactGang::of(inst, topo, spread_floor, members));
    let discount = milli
        .is_none()
        .then(|| victim_spread::discount(inst, spread_floor, members, &demand.spread_floors))
        .flatten();
    // What the class's jobs off their fewest nodes (off one unit) pay beyond their floors.
    let mut off_fewest = Expression::from(0.0);
    let mut off_unit = Expression::from(0.0);
    let ntypes = topo.type_names.len();
    let in_units: Vec<bool> = (0..ntypes)
        .map(|t| {
            mask[t]
                && milli.is_none()
                && unit_blocks::holds(inst, topo, &demand.multi_node, t, *gpus, *gpn)
        })
        .collect();
    // delta_c: what the class's gangs off one unit pay beyond their floors (none for one-node
    // jobs, always inside one).
    let beyond_unit = (!*one_node && in_units.contains(&true))
        .then(|| compact::least_extra(inst, members, spread_floor, |f, job| f.of_spanning(job, 2)));
    let eq = inst.pending[members[0]].gpu_equivalent();
    demand.tenant_starts[inst.pending[members[0]].tenant].push((eq, n_c));
    let mut sum_x = Expression::from(0.0);
    let mut on_fewest = Expression::from(0.0);
    let mut xs = Vec::new();
    let one_type = mask.iter().filter(|&&m| m).count() == 1;
    for t in (0..ntypes).filter(|&t| mask[t]) {
        let def = variable().min(0).max(members.len() as f64);
        let x_integer = *one_node || one_type;
        let x = m.problem.add(if x_integer { int(def) } else { def });
        sum_x += x;
        xs.push((t, x));
        record_uses(key, t, x, demand);
        if let Some(gang) = &compact {
            // y_ct: the jobs placed on the fewest nodes; the rest pay an extra node.
            let y = m.problem.add(if x_integer {
                int(variable().min(0))
            } else {
                variable().min(0)
            });
            m.constraints.push((y - x).leq(0.0));
            off_fewest += gang.extra_node * (x - y);
            on_fewest += y;
            let mut level = 2;
            while level <= gang.least_per_node {
                level_entry(&mut demand.level_rows, t, level)
                    .0
                    .add_mul((gang.nodes * (gang.least_per_node / level)) as f64, y);
                level *= 2;
            }
        }
        if in_units[t] {
            let on = unit_blocks::OnType {
                t,
                gpus: *gpus,
                one_node: *one_node,
                x,
                integer: x_integer && integer,
            };
            let delta = beyond_unit.unwrap_or(0.0);
            off_unit += unit_blocks::add_on_type(on, delta, &mut demand.unit_rows, m);
        }
        add_slot_entries(key, t, x, &mut demand.level_rows);
    }
    m.constraints.push((sum_x - n_c).eq(0.0));
    if let Some(gang) = &compact {
        off_fewest += rack_blocks::add_user(gang, on_fewest, &mut demand.rack_rows, m);
    }
    let units = milli
        .is_none()
        .then(|| unit_spread::charge(inst, topo, members, &demand.spread_floors, &xs))
        .flatten();
    let below_victims =
        discount.map(|d| victim_spread::add_user(m, &mut demand.victim_users, *prio, &d, n_c));
    let off_unit = beyond_unit.map(|_| off_unit);
    let charges = below_victims
        .into_iter()
        .chain([off_fewest])
        .chain(units)
        .chain(off_unit);
    charge_the_largest(m, charges.collect());
    demand.classes.push((ranked, n_c));
}

/// What the class of `key` on type t (x_ct) asks of the GPU rows, the CPU and memory rows
/// and the packing floor.
fn record_uses(key: &Key, t: usize, x: Variable, demand: &mut Demand) {
    let (_, gpus, milli, gpn, one_node, _, prio, cpu, mem, open) = key;
    let per_job = milli.map_or(*gpus as f64, gpu_units);
    demand.type_users[t].push((*prio, per_job, x));
    if milli.is_none() {
        demand.reserved_users[t].push((*open, *gpus as f64, x));
        let (piece, pieces) = match (gpn, one_node) {
            (_, true) => (*gpus, 1),
            (Some(k), false) => (*k, *gpus / k.max(&1)),
            _ => (0, 0),
        };
        demand.resource_users[t].push(ResourceUse {
            cpu: *cpu,
            mem: *mem,
            gpus: *gpus,
            piece,
            pieces,
            x,
        });
    }
    demand.takes[t].push(TypeTake {
        least: if milli.is_some() { 0.0 } else { *gpus as f64 },
        most: *gpus as f64,
        count: x,
    });
}

/// The slots and digits entries of one-node and fixed-shape jobs of the class of `key` on
/// type t (x_ct).
fn add_slot_entries(key: &Key, t: usize, x: Variable, rows: &mut LevelRows) {
    let (_, gpus, milli, gpn, one_node, ..) = key;
    let (slots_per_job, piece) = match (gpn, one_node) {
        (_, true) => (1.0, *gpus),
        (Some(k), false) => ((*gpus / k) as f64, *k),
        _ => (0.0, 0),
    };
    if slots_per_job <= 0.0 || milli.is_some() {
        return;
    }
    let mut level = 2;
    while level <= piece {
        let e = level_entry(rows, t, level);
        e.0.add_mul(slots_per_job, x);
        if piece % level == 0 {
            e.1.add_mul(*gpus as f64, x);
        }
        level *= 2;
    }
}

/// Charge the largest of a class's `charges` beyond its floors (each holds alone): the one
/// itself where it is the only one (it is never negative), else a variable above each and 0.
fn charge_the_largest(m: &mut MipModel, mut charges: Vec<Expression>) {
    if charges.len() == 1 {
        m.objective -= charges.remove(0);
        return;
    }
    let largest = m.problem.add(variable().min(0));
    for c in charges {
        m.constraints.push((largest - c).geq(0.0));
    }
    m.objective -= largest;
}

/// The slots and digits rows of (type t, level), empty on first use.
fn level_entry(rows: &mut LevelRows, t: usize, level: u32) -> &mut (Expression, Expression) {
    rows.entry((t, level))
        .or_insert_with(|| (Expression::from(0.0), Expression::from(0.0)))
}

/// The value of the best n_c jobs of a class, as an epigraph: with v_1 >= v_2 >= ... the
/// members' values net of their spread floors and F(k) = v_1 + ... + v_k (concave in k),
///
/// ```text
/// z_c <= F(k) + v_{k+1} (n_c - k)      k = 0 .. K-1
/// ```
///
/// so z_c = F(n_c) at every integer n_c: two non-zeros a row, no per-job variable. Returns the
/// members best first (index on ties), the order in which a solution's n_c picks them; each
/// member's spread floor goes into `floors`.
fn top_k_value(
    inst: &Instance,
    spread_floor: &mut SpreadFloor,
    members: &[usize],
    n_c: Variable,
    floors: &mut [f64],
    m: &mut MipModel,
) -> Vec<usize> {
    let mut ranked: Vec<(f64, usize)> = members
        .iter()
        .map(|&j| {
            let job = &inst.pending[j];
            floors[j] = spread_floor.of(job);
            (job_value(inst, job) - floors[j], j)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let z = m.problem.add(variable());
    m.objective += z;
    let mut prefix = 0.0;
    for (k, &(v, _)) in ranked.iter().enumerate() {
        m.constraints.push((z - v * n_c).leq(prefix - v * k as f64));
        prefix += v;
    }
    ranked.into_iter().map(|(_, j)| j).collect()
}
