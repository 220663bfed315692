//! The exact per-node MIP of one round, built with good_lp and solved by HiGHS.
//!
//! Variables (created here; each constraint family lives in its own file with its math):
//!
//! ```text
//! y_j  in {0,1}         pending job j starts                        (gang)
//! u_jn in {0,1}         job j uses node n                            (gang, hard, topology)
//! q_j  in {0,1}         job j is split over several nodes although one node could hold it
//! x_jn in Z+            GPUs of job j on node n (x = k u when the shape fixes k GPUs per node)
//! s_jg in {0,1}         sharer j on shared GPU g / fresh sharing slot g
//! z_ni in {0,1}         fresh GPU i of node n opened for sharers    (capacity)
//! c_jn in {0,1}         CPU-only job j on node n
//! p_k  in {0,1}         running job k is preempted                  (preemption)
//! ```
//!
//! A job has variables only on the nodes it may use ([`Ctx::may_place`]): a type it accepts,
//! and, when the round holds reservations, not on a reserved node unless it is that node's
//! reserved job or its time limit ends it by the reservation's start
//! ([`crate::instance::reservation`]).
//!
//! The objective (maximised) is the function in [`crate::objective`]: value of started jobs
//! ([`value`]) minus spread ([`topology`]), preemption ([`preemption`]), fairness
//! ([`fairness`]), packing ([`packing`]) and, with a task distribution, fragmentation
//! ([`fragmentation`]) costs. Its constant part is kept in
//! [`MipModel::constant`] because HiGHS takes none.

pub mod aggregate;
pub mod capacity;
pub mod fairness;
pub mod fragmentation;
pub mod gang;
pub mod hard;
pub mod holdings;
pub mod outranked;
pub mod packing;
pub mod preemption;
pub mod quota;
pub mod start;
pub mod topology;
pub mod value;

use crate::instance::{Instance, NodeIx};
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use crate::units::{MILLI_PER_GPU, TOLERANCE};
use good_lp::{variable, Constraint, Expression, ProblemVariables, Variable};

/// How many GPUs a (job, node) cell holds.
#[derive(Debug, Clone, Copy)]
pub enum CellCount {
    /// Exactly `k` GPUs when used (`x = k u`): single-node jobs and fixed `gpus_per_node`.
    Fixed(u32),
    /// An integer variable `x` with `1 <= x <= cap` when used.
    Free(Variable, u32),
}

/// Job j on node n.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    /// The node.
    pub node: NodeIx,
    /// Node-used binary.
    pub used: Variable,
    /// GPU count.
    pub count: CellCount,
    /// A piece of a split gang (the job also has whole-on-one-node cells).
    pub split: bool,
}

impl Cell {
    /// The GPU count as an expression.
    pub fn count_expr(&self) -> Expression {
        match self.count {
            CellCount::Fixed(k) => k as f64 * self.used,
            CellCount::Free(x, _) => Expression::from(x),
        }
    }
}

/// A place a sharer can go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ShareSlot {
    /// An already shared GPU.
    Existing(NodeIx, u32),
    /// The i-th fresh GPU of a node opened for sharing.
    Fresh(NodeIx, usize),
}

/// Every variable of the model.
#[derive(Debug, Default)]
pub struct Vars {
    /// y_j (None: the job has nowhere to go and stays pending).
    pub start: Vec<Option<Variable>>,
    /// Cells of whole-GPU jobs.
    pub cells: Vec<Vec<Cell>>,
    /// s_jg of sharers.
    pub share: Vec<Vec<(ShareSlot, Variable)>>,
    /// z_ni: fresh sharing slots per node.
    pub fresh: Vec<Vec<Variable>>,
    /// Split binary of jobs that can sit whole on one node or split over several.
    pub split: Vec<Option<Variable>>,
    /// c_jn of CPU-only jobs.
    pub cpu_only: Vec<Vec<(NodeIx, Variable)>>,
    /// p_k of preemptible running jobs that some pending job outranks.
    pub preempt: Vec<Option<Variable>>,
    /// Locality-domain binaries of multi-node jobs (created by [`topology`]).
    pub domains: Vec<Option<topology::DomainVars>>,
    /// Island-split binaries t_jn of free cells: (job, cell index, variable, L_n).
    pub island_splits: Vec<(usize, usize, Variable, u32)>,
    /// o_n of nodes empty before the round (created by [`packing`]).
    pub open: Vec<Option<Variable>>,
    /// Fairness shortfall per tenant (created by [`fairness`]).
    pub shortfall: Vec<Option<Variable>>,
    /// Column index of every variable (good_lp keeps it private).
    pub columns: std::collections::HashMap<Variable, usize>,
    /// Per node, the placement variables on it ([`OnNode`]).
    pub on_node: Vec<OnNode>,
}

/// What one node's rows read: the placement variables of every job on the node, as indices
/// into [`Vars::cells`], [`Vars::share`] and [`Vars::cpu_only`], in job order. Built once the
/// variables are, so that a node's rows need not scan every job's variables (at 1,250 nodes
/// and 4,000 pending jobs the scan took minutes).
#[derive(Debug, Default, Clone)]
pub struct OnNode {
    /// (job, index into its cells).
    pub cells: Vec<(usize, usize)>,
    /// (job, index into its sharing slots).
    pub shares: Vec<(usize, usize)>,
    /// (job, index into its CPU-only nodes).
    pub cpu_only: Vec<(usize, usize)>,
}

impl OnNode {
    /// The index of every node (`nodes` of them) over `vars`' placement variables.
    fn index(vars: &Vars, nodes: usize) -> Vec<OnNode> {
        let mut out = vec![OnNode::default(); nodes];
        for (j, cells) in vars.cells.iter().enumerate() {
            for (i, c) in cells.iter().enumerate() {
                out[c.node].cells.push((j, i));
            }
        }
        for (j, share) in vars.share.iter().enumerate() {
            for (i, (slot, _)) in share.iter().enumerate() {
                let (ShareSlot::Existing(n, _) | ShareSlot::Fresh(n, _)) = *slot;
                out[n].shares.push((j, i));
            }
        }
        for (j, nodes) in vars.cpu_only.iter().enumerate() {
            for (i, &(n, _)) in nodes.iter().enumerate() {
                out[n].cpu_only.push((j, i));
            }
        }
        out
    }

    /// Per job with a placement variable on the node (ascending), the indices of its cells,
    /// sharing slots and CPU-only nodes there.
    pub fn by_job(&self) -> std::collections::BTreeMap<usize, JobOnNode> {
        let mut out: std::collections::BTreeMap<usize, JobOnNode> = Default::default();
        for &(j, i) in &self.cells {
            out.entry(j).or_default().cells.push(i);
        }
        for &(j, i) in &self.shares {
            out.entry(j).or_default().shares.push(i);
        }
        for &(j, i) in &self.cpu_only {
            out.entry(j).or_default().cpu_only.push(i);
        }
        out
    }
}

/// One job's placement variables on one node ([`OnNode::by_job`]), as indices.
#[derive(Debug, Default, Clone)]
pub struct JobOnNode {
    /// Into [`Vars::cells`] of the job.
    pub cells: Vec<usize>,
    /// Into [`Vars::share`] of the job.
    pub shares: Vec<usize>,
    /// Into [`Vars::cpu_only`] of the job.
    pub cpu_only: Vec<usize>,
}

impl Vars {
    /// Column of a variable in the solver's arrays.
    pub fn col(&self, v: Variable) -> usize {
        self.columns[&v]
    }
}

/// A model ready to hand to a solver.
pub struct MipModel {
    /// Variables.
    pub problem: ProblemVariables,
    /// Variable handles.
    pub vars: Vars,
    /// Linear objective (maximised).
    pub objective: Expression,
    /// Constant part of the objective.
    pub constant: f64,
    /// Rows.
    pub constraints: Vec<Constraint>,
}

impl MipModel {
    /// A model with nothing in it.
    pub fn empty() -> Self {
        MipModel {
            problem: ProblemVariables::new(),
            vars: Vars::default(),
            objective: Expression::from(0.0),
            constant: 0.0,
            constraints: Vec::new(),
        }
    }

    /// The model as a quiet HiGHS model: good_lp builds it, and the `highs` crate's model gives
    /// the options and readings good_lp hides. The variables and the objective's constant come
    /// back alongside.
    pub fn into_highs(self) -> crate::Result<(highs::Model, Vars, f64)> {
        use good_lp::solvers::SolverModel;
        let MipModel {
            problem,
            objective,
            constraints,
            vars,
            constant,
        } = self;
        let mut lp = problem.maximise(objective).using(good_lp::highs);
        for c in constraints {
            lp.add_constraint(c);
        }
        let mut hm = lp
            .try_into_inner()
            .map_err(|e| crate::Error::Solver(e.to_string()))?;
        hm.make_quiet();
        Ok((hm, vars, constant))
    }

    /// Number of columns.
    pub fn columns(&self) -> usize {
        self.problem.len()
    }
}

/// Shared context of the builders.
pub struct Ctx<'a> {
    /// The instance.
    pub inst: &'a Instance,
    /// Its topology.
    pub topo: &'a Topology,
    /// Occupancy before the round.
    pub before: ClusterState,
}

impl<'a> Ctx<'a> {
    /// Whole GPUs job j could get on node n: free, plus those of preemptible running jobs of
    /// strictly lower priority (when preemption is on).
    pub fn potential(&self, j: usize, n: NodeIx) -> u32 {
        let prio = self.inst.pending[j].priority;
        self.before.gpus[n]
            .iter()
            .filter(|u| match u {
                GpuUse::Free => true,
                GpuUse::Whole(k) => {
                    let r = &self.inst.running[*k];
                    self.inst.policy.preemption && r.preemptible && r.priority < prio
                }
                _ => false,
            })
            .count() as u32
    }

    /// Whether job `job` may have cells on node n: a GPU type it accepts, and the round's
    /// reservations admit it there ([`Instance::may_use_node`]); a job has no variables on
    /// the nodes it may not use.
    pub fn may_place(&self, job: &crate::instance::PendingJob, n: NodeIx) -> bool {
        job.accepts_type(&self.inst.nodes[n].gpu_type) && self.inst.may_use_node(job, n)
    }

    /// Whether running job k may be preempted at all this round.
    pub fn preemptible(&self, k: usize) -> bool {
        let r = &self.inst.running[k];
        self.inst.policy.preemption
            && r.preemptible
            && self.inst.pending.iter().any(|j| j.priority > r.priority)
    }
}

/// Build the model of a round.
pub fn build(inst: &Instance, topo: &Topology) -> MipModel {
    let ctx = Ctx {
        inst,
        topo,
        before: ClusterState::new(inst),
    };
    let mut m = MipModel {
        problem: ProblemVariables::new(),
        vars: Vars::default(),
        objective: Expression::from(0.0),
        constant: 0.0,
        constraints: Vec::new(),
    };
    create_variables(&ctx, &mut m);
    gang::add(&ctx, &mut m);
    topology::add(&ctx, &mut m);
    hard::add(&ctx, &mut m);
    capacity::add(&ctx, &mut m);
    preemption::add(&ctx, &mut m);
    add_outranked(&ctx, &mut m);
    quota::add(&ctx, &mut m);
    value::add(&ctx, &mut m);
    fairness::add(&ctx, &mut m);
    packing::add(&ctx, &mut m);
    fragmentation::add(&ctx, &mut m);
    m.vars.columns = m
        .problem
        .iter_variables_with_def()
        .enumerate()
        .map(|(i, (v, _))| (v, i))
        .collect();
    m
}

/// The per-node model's outranking rows ([`outranked`]): y_j of every job that can start.
fn add_outranked(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let starts: Vec<(i64, good_lp::Variable)> = (inst.pending.iter().zip(&m.vars.start))
        .filter_map(|(j, y)| y.map(|y| (j.priority, y)))
        .collect();
    let preempt = m.vars.preempt.clone();
    outranked::add(inst, &starts, &preempt, m);
}

/// The variables of every family: victims, fresh sharing slots, then each job's cells,
/// sharing slots or CPU-only nodes, split binary and start binary.
fn create_variables(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let p = &mut m.problem;
    m.vars.preempt = (0..inst.running.len())
        .map(|k| ctx.preemptible(k).then(|| p.add(variable().binary())))
        .collect();
    // Fresh sharing slots: per node, as many as sharers could use (at most the free GPUs).
    let sharers: Vec<usize> = (0..inst.pending.len())
        .filter(|&j| inst.pending[j].is_sharer())
        .collect();
    m.vars.fresh = (0..inst.nodes.len())
        .map(|n| {
            let eligible = sharers
                .iter()
                .filter(|&&j| inst.pending[j].accepts_type(&inst.nodes[n].gpu_type))
                .count();
            let slots = eligible.min(ctx.before.free_count(n) as usize);
            (0..slots).map(|_| p.add(variable().binary())).collect()
        })
        .collect();
    for (j, job) in inst.pending.iter().enumerate() {
        let mut cells = Vec::new();
        let mut share = Vec::new();
        let mut cpu_only = Vec::new();
        let mut split = None;
        let quota_blocked = inst.tenants[job.tenant]
            .quota
            .is_some_and(|q| job.gpu_equivalent() > q + TOLERANCE);
        if !quota_blocked {
            if job.gpus == 0 {
                for n in (0..inst.nodes.len()).filter(|&n| inst.may_use_node(job, n)) {
                    cpu_only.push((n, p.add(variable().binary())));
                }
            } else if let Some(mj) = job.gpu_milli {
                share = sharer_slots(ctx, &m.vars, p, j, mj);
            } else {
                (cells, split) = whole_cells(ctx, p, j);
            }
        }
        let reachable = !cells.is_empty() || !share.is_empty() || !cpu_only.is_empty();
        m.vars.split.push(split);
        m.vars
            .start
            .push(reachable.then(|| p.add(variable().binary())));
        m.vars.cells.push(cells);
        m.vars.share.push(share);
        m.vars.cpu_only.push(cpu_only);
    }
    m.vars.on_node = OnNode::index(&m.vars, inst.nodes.len());
}

/// s_jg of sharer j (asking `mj` thousandths): the shared GPUs with room for it once its
/// lower-priority victims there are gone, and every fresh slot of the nodes it accepts.
fn sharer_slots(
    ctx: &Ctx,
    vars: &Vars,
    p: &mut ProblemVariables,
    j: usize,
    mj: u32,
) -> Vec<(ShareSlot, Variable)> {
    let inst = ctx.inst;
    let job = &inst.pending[j];
    let mut share = Vec::new();
    for n in (0..inst.nodes.len()).filter(|&n| ctx.may_place(job, n)) {
        for (g, u) in ctx.before.gpus[n].iter().enumerate() {
            if let GpuUse::Shared { jobs, milli } = u {
                let freeable: u32 = jobs
                    .iter()
                    .filter(|&&k| {
                        vars.preempt[k].is_some() && inst.running[k].priority < job.priority
                    })
                    .map(|&k| inst.running[k].gpu_milli.unwrap_or(0))
                    .sum();
                if MILLI_PER_GPU - milli.min(&MILLI_PER_GPU) + freeable >= mj {
                    share.push((ShareSlot::Existing(n, g as u32), p.add(variable().binary())));
                }
            }
        }
        for i in 0..vars.fresh[n].len() {
            share.push((ShareSlot::Fresh(n, i), p.add(variable().binary())));
        }
    }
    share
}

/// The cells of whole-GPU job j, and its split binary when it may sit whole on one node or
/// split over several.
fn whole_cells(ctx: &Ctx, p: &mut ProblemVariables, j: usize) -> (Vec<Cell>, Option<Variable>) {
    let inst = ctx.inst;
    let job = &inst.pending[j];
    let mut cells = Vec::new();
    let limit = job.node_limit();
    let nodes: Vec<usize> = (0..inst.nodes.len())
        .filter(|&n| ctx.may_place(job, n))
        .collect();
    let pots: Vec<u32> = nodes.iter().map(|&n| ctx.potential(j, n)).collect();
    if limit == 1 || job.gpus_per_node.is_some() {
        let k = if limit == 1 {
            job.gpus
        } else {
            job.gpus_per_node.unwrap_or(1)
        };
        for (&n, &pot) in nodes.iter().zip(&pots) {
            if pot >= k && !(limit == 1 && job.gpus_per_node.is_some_and(|g| g != job.gpus)) {
                cells.push(Cell {
                    node: n,
                    used: p.add(variable().binary()),
                    count: CellCount::Fixed(k),
                    split: false,
                });
            }
        }
        return (cells, None);
    }
    // Whole on one node (fixed cells), or split over several (free cells, each piece smaller
    // than the gang when a whole placement exists).
    let single = pots.iter().any(|&pot| pot >= job.gpus);
    for (&n, &pot) in nodes.iter().zip(&pots) {
        if pot >= job.gpus {
            cells.push(Cell {
                node: n,
                used: p.add(variable().binary()),
                count: CellCount::Fixed(job.gpus),
                split: false,
            });
        }
    }
    let piece = if single { job.gpus - 1 } else { job.gpus };
    for (&n, &pot) in nodes.iter().zip(&pots) {
        let cap = pot.min(piece);
        if cap >= 1 {
            let used = p.add(variable().binary());
            let x = p.add(variable().integer().min(0).max(cap));
            cells.push(Cell {
                node: n,
                used,
                count: CellCount::Free(x, cap),
                split: single,
            });
        }
    }
    let split = (single && cells.iter().any(|c| c.split)).then(|| p.add(variable().binary()));
    (cells, split)
}

/// Column values seen through good_lp's [`good_lp::Solution`] trait.
pub struct ColumnValues<'a> {
    /// The model's variables.
    pub vars: &'a Vars,
    /// Values by column.
    pub columns: &'a [f64],
}

impl good_lp::Solution for ColumnValues<'_> {
    fn status(&self) -> good_lp::SolutionStatus {
        good_lp::SolutionStatus::Optimal
    }
    fn value(&self, v: Variable) -> f64 {
        self.columns[self.vars.col(v)]
    }
}

impl MipModel {
    /// Rows (and bounds of integer variables) that `columns` violate, in words; the linear
    /// objective's value at `columns` plus the constant. Used to check that a MIP start is
    /// feasible and that the model prices an assignment like [`crate::objective::evaluate`].
    pub fn check(&self, columns: &[f64]) -> (Vec<String>, f64) {
        let sol = ColumnValues {
            vars: &self.vars,
            columns,
        };
        let mut bad = Vec::new();
        for (i, c) in self.constraints.iter().enumerate() {
            let lhs = c.expression().eval_with(&sol);
            let ok = if c.is_equality() {
                lhs.abs() <= 1e-6
            } else {
                lhs <= 1e-6
            };
            if !ok {
                bad.push(format!(
                    "row {i}: {lhs} {} 0",
                    if c.is_equality() { "!=" } else { ">" }
                ));
            }
        }
        (bad, self.objective.eval_with(&sol) + self.constant)
    }
}
