//! The relaxation solve: the smallest change that lets one pending job start.
//!
//! A small MIP places only the job `j` (forced to start) into the state the round left
//! behind, with slack on every family of constraint that could stop it, each slack priced, and
//! minimises the weighted slack:
//!
//! ```text
//! x_n in Z+, u_n in {0,1}    GPUs of j on eligible node n          sum_n x_n = g
//!                            u_n <= x_n <= g u_n  (x_n = k u_n with gpus_per_node k)
//! p_k in {0,1}               running job k stops (preempted or finished)
//! h_i in {0,1}               job i started this round waits instead
//! e_n in Z+                  GPUs added to node n (new hardware)
//! capacity:  x_n <= free_n + sum_k g_kn p_k + sum_i a_in h_i + e_n
//! nodes:     sum_n u_n <= L + s_nodes                 (max_nodes, or within: node)
//! locality:  u_n <= v_d(n),  sum_d v_d <= 1 + s_dom   (within: rack | pod)
//! quota:     held_t - sum_{k of t} eq_k p_k - sum_{i of t} eq_i h_i + g <= q_t + s_q
//! minimise   sum_k c_k p_k + sum_i c_i h_i + C_q s_q + C_add sum_n e_n + C_loc (s_nodes + s_dom)
//! ```
//!
//! Costs per GPU (see docs/explain.md): preempting a running job `j` may preempt 1; holding
//! back a job started this round 1.5; one GPU of quota 2; stopping a running job `j` may not
//! preempt 4; one added GPU 10; each extra node or domain beyond the job's limit 30. Ties
//! break on the objective's own preemption cost and job value (weight 0.001). The relaxation ignores CPU and memory, shared GPUs, NVLink islands and the
//! spread cost: it answers "what must change for the job to fit", and [`super::explain_job`]
//! checks each answer by re-planning.

use super::candidates::{candidates, cheapest_cover, Candidates, HolderPrice};
use crate::assignment::Assignment;
use crate::error::{Error, Result};
use crate::instance::raw::RawInstance;
use crate::instance::{Instance, Locality, PendingJob};
use crate::objective::{job_value, victim_cost};
use crate::plan::reasons::{AfterRound, Holder};
use good_lp::solvers::SolverModel;
use good_lp::{variable, Expression, ProblemVariables, Variable, VariableDefinition};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Seconds of one relaxation solve; a solve stopped by it keeps the cheapest change found.
pub const RELAX_SECONDS: f64 = 10.0;
/// Cost of one GPU of extra quota.
pub const COST_QUOTA: f64 = 2.0;
/// Cost per GPU of stopping a running job the pending job may not preempt (plus its
/// preemption cost).
pub const COST_FORCE: f64 = 4.0;
/// Cost of one added GPU.
pub const COST_ADD: f64 = 10.0;
/// Cost of one more node or locality domain than the job allows.
pub const COST_LOCALITY: f64 = 30.0;
/// Cost per GPU of a job started this round that would wait instead (plus a tie-break on
/// its value).
pub const COST_HOLD: f64 = 1.5;
/// Cost per GPU of preempting a running job the pending job may preempt (plus a tie-break on
/// its preemption cost).
pub const COST_PREEMPT: f64 = 1.0;
/// Weight of the tie-breaks: among changes of equal GPUs, the one the round's objective
/// minds least.
pub const TIE: f64 = 0.001;

/// A family of slack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Preempt running jobs the pending job may preempt.
    Preempt,
    /// Hold back jobs started this round.
    HoldBack,
    /// Raise the tenant's quota.
    Quota,
    /// Stop running jobs the pending job may not preempt.
    Stop,
    /// Add GPUs.
    Hardware,
    /// Relax `within` or `max_nodes`.
    Locality,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum Change {
    /// A running job stops: preempted (if `allowed`) or finished.
    Stop {
        /// Running job id.
        job: String,
        /// GPUs it frees, per node.
        gpus: BTreeMap<String, u32>,
        /// Whether the pending job may preempt it under the rules.
        allowed: bool,
        /// Why not, when not allowed.
        why_not: Option<String>,
    },
    /// A job started this round waits instead.
    HoldBack {
        /// Pending job id.
        job: String,
        /// GPUs it would have taken, per node.
        gpus: BTreeMap<String, u32>,
    },
    /// The tenant's quota rises.
    Quota {
        /// Tenant.
        tenant: String,
        /// Quota now.
        from: u32,
        /// Quota needed.
        to: u32,
    },
    /// GPUs added to a node (hardware).
    AddGpus {
        /// Node.
        node: String,
        /// Its rack.
        rack: String,
        /// GPUs added.
        gpus: u32,
    },
    /// Whole nodes of a shipped hardware model added to a rack (the [`Change::AddGpus`] of a
    /// relaxation in real units, see [`super::hardware`]).
    AddNodes {
        /// Hardware model.
        model: String,
        /// GPUs of each such node.
        gpus_each: u32,
        /// Their GPU type.
        gpu_type: String,
        /// Nodes added.
        count: u32,
        /// The rack they join (empty: the nodes without a rack).
        rack: String,
    },
    /// The job may span more racks or pods (`within`).
    SpanDomains {
        /// rack or pod.
        level: String,
        /// Domains it would span.
        count: u32,
    },
    /// The job may span more nodes (`max_nodes`, or `within: node`).
    MoreNodes {
        /// Limit now.
        from: u32,
        /// Limit needed.
        to: u32,
    },
}

impl Change {
    /// The family of slack the change belongs to.
    pub fn family(&self) -> Family {
        match self {
            Change::Stop { allowed: true, .. } => Family::Preempt,
            Change::Stop { .. } => Family::Stop,
            Change::HoldBack { .. } => Family::HoldBack,
            Change::Quota { .. } => Family::Quota,
            Change::AddGpus { .. } | Change::AddNodes { .. } => Family::Hardware,
            Change::SpanDomains { .. } | Change::MoreNodes { .. } => Family::Locality,
        }
    }

    /// The change in words.
    pub fn text(&self) -> String {
        let on = |g: &BTreeMap<String, u32>| {
            g.iter()
                .map(|(n, k)| format!("{} on {n}", crate::plan::output::gpus_phrase(*k)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Change::Stop {
                job,
                gpus,
                allowed: true,
                ..
            } => format!("{job} ({}) is preempted", on(gpus)),
            Change::Stop {
                job, gpus, why_not, ..
            } => format!(
                "{job} ({}) finishes or is stopped ({})",
                on(gpus),
                why_not.as_deref().unwrap_or("it may not be preempted")
            ),
            Change::HoldBack { job, gpus } if gpus.is_empty() => {
                format!("{job} (started this round on a shared GPU) waits instead")
            }
            Change::HoldBack { job, gpus } => {
                format!("{job} (started this round on {}) waits instead", on(gpus))
            }
            Change::Quota { tenant, from, to } => {
                format!("tenant {tenant}'s quota rises from {from} to {to}")
            }
            Change::AddGpus { node, rack, gpus } => {
                if rack.is_empty() {
                    format!("{gpus} more free GPUs on {node}")
                } else {
                    format!("{gpus} more free GPUs in rack {rack} (on {node})")
                }
            }
            Change::AddNodes {
                model,
                gpus_each,
                gpu_type,
                count,
                rack,
            } => {
                let nodes = if *count == 1 { "node" } else { "nodes" };
                let each = if *count == 1 { "" } else { " each" };
                let place = if rack.is_empty() {
                    String::new()
                } else {
                    format!(" in rack {rack}")
                };
                format!(
                    "{count} more {model} {nodes} ({gpus_each} {gpu_type} GPUs{each}){place} (new hardware)"
                )
            }
            Change::SpanDomains { level, count } => {
                format!("the job may span {count} {level}s (within: {level} relaxed)")
            }
            Change::MoreNodes { from, to } => {
                format!("the job may span {to} nodes instead of {from}")
            }
        }
    }
}

/// A set of changes that lets the job start.
#[derive(Debug, Clone, Serialize)]
pub struct Relaxation {
    /// The changes.
    pub changes: Vec<Change>,
    /// Their weighted cost in the relaxation.
    pub cost: f64,
    /// One sentence: "starts if ...".
    pub summary: String,
}

/// Families forbidden in a relaxation solve.
pub type Forbidden = BTreeSet<Family>;

/// Up to `max` relaxations, cheapest first, each using none of the families of the earlier
/// ones; plus notes on what the relaxation leaves out for this job (`resources_bind`: the
/// job's reason says the CPU and memory beside the free GPUs do not hold it).
pub fn relax_alternatives(
    inst: &Instance,
    a: &Assignment,
    after: &AfterRound,
    j: usize,
    max: usize,
    resources_bind: bool,
) -> Result<(Vec<Relaxation>, Vec<String>)> {
    let job = &inst.pending[j];
    let mut notes = Vec::new();
    if job.gpus == 0 || job.is_sharer() {
        notes.push(
            "the relaxation covers whole-GPU gangs; CPU-only jobs and GPU sharers get the reason only"
                .into(),
        );
        return Ok((Vec::new(), notes));
    }
    if !inst.nodes.iter().any(|n| job.accepts_type(&n.gpu_type)) {
        notes.push("no node has an accepted GPU type; only new nodes of that type can help (try `gangplan whatif --add-nodes`)".into());
        return Ok((Vec::new(), notes));
    }
    if job.cpu_milli > 0 || job.memory_mib > 0 {
        notes.push("approximate: the relaxation does not model CPU or memory".into());
    }
    if after.holders.iter().flatten().any(|h| *h == Holder::Shared) {
        notes.push("approximate: GPUs shared by sharers are not counted as freeable".into());
    }
    let mut out = Vec::new();
    let mut forbidden = Forbidden::new();
    // What the first solve looked at (the later ones look at as much), and whether any
    // solve's time limit stopped it.
    let mut searched: Option<Candidates> = None;
    let mut unproven = false;
    while out.len() < max {
        let (r, scope) = relax(inst, a, after, j, &forbidden)?;
        unproven |= scope.unproven;
        searched.get_or_insert(scope);
        let Some(r) = r else {
            break;
        };
        let fams: BTreeSet<Family> = r.changes.iter().map(|c| c.family()).collect();
        if fams.is_empty() {
            // The job's GPUs fit without any change: the objective decided, or the CPU and
            // memory, which the relaxation leaves out.
            notes.push(if resources_bind {
                "the job's GPUs fit those left free without any change, but the CPU and memory left beside them do not (the reason's numbers): CPU and memory freed on those nodes (their jobs ending or preempted) or nodes with more would help".into()
            } else {
                "the job fits the GPUs left free without any change: the round's objective preferred other work; raising its priority or waiting (aging) would help".into()
            });
            break;
        }
        forbidden.extend(fams);
        out.push(r);
    }
    notes.extend(searched.iter().flat_map(|scope| scope.notes()));
    if unproven {
        notes.push(format!(
            "approximate: a relaxation solve reached its {RELAX_SECONDS} s limit; its change is the cheapest it found, not proven the cheapest"
        ));
    }
    Ok((out, notes))
}

struct Cols {
    vars: ProblemVariables,
    n: usize,
}

impl Cols {
    fn add(&mut self, def: VariableDefinition) -> (Variable, usize) {
        let v = self.vars.add(def);
        self.n += 1;
        (v, self.n - 1)
    }
}

/// One relaxation solve (`None` when no change of the allowed families lets the job start),
/// and the nodes it looked at.
pub fn relax(
    inst: &Instance,
    a: &Assignment,
    after: &AfterRound,
    j: usize,
    forbidden: &Forbidden,
) -> Result<(Option<Relaxation>, Candidates)> {
    let mut m = RelaxModel::new(inst, after, j, forbidden);
    let mut searched = m.narrow(after);
    m.add_placement();
    searched.quota_jobs = m.add_stops_and_hold_backs(a);
    m.add_hardware();
    m.add_capacity(after);
    m.add_node_count();
    m.add_domains();
    m.add_quota(after);
    let Some((val, total, proven)) = m.solve()? else {
        return Ok((None, searched));
    };
    searched.unproven = !proven;
    let changes = m.changes(&val);
    let summary = summary(&changes);
    let relaxation = Relaxation {
        changes,
        cost: total,
        summary,
    };
    Ok((Some(relaxation), searched))
}

/// Where the tenant's quota lacks room for the job, a job of the tenant that frees GPUs frees
/// quota too, and ranks its node as if at half its price.
impl HolderPrice for RelaxModel<'_> {
    fn price(&self, holder: Holder) -> Option<f64> {
        let (price, tenant) = match holder {
            Holder::Running(k) => (self.stop_price(k), self.inst.running[k].tenant),
            Holder::Placed(i) => (
                self.allows(Family::HoldBack).then(|| self.hold_price(i)),
                self.inst.pending[i].tenant,
            ),
            _ => return None,
        };
        let frees_quota = self.lacks_quota > 0.0 && tenant == self.job.tenant;
        price.map(|c| if frees_quota { c / 2.0 } else { c })
    }

    fn added_gpu(&self) -> Option<f64> {
        self.allows(Family::Hardware).then_some(COST_ADD)
    }
}

/// Whole GPUs each job keeps, per node (job index to node to GPUs).
type KeptOn = BTreeMap<usize, BTreeMap<usize, u32>>;

/// A change's binary or integer column: (the job or node it changes, variable, column).
type ChangeCol = (usize, Variable, usize);

/// The relaxation of one waiting job as it is built: its columns, rows and cost, and the
/// columns each family of change reads back from.
struct RelaxModel<'a> {
    inst: &'a Instance,
    job: &'a PendingJob,
    forbidden: &'a Forbidden,
    /// Nodes of a type the job accepts.
    eligible: Vec<usize>,
    cols: Cols,
    rows: Vec<good_lp::Constraint>,
    cost: Expression,
    /// Per eligible node: whether the job uses it, and its GPUs there.
    x: BTreeMap<usize, (Variable, Variable)>,
    /// Whole GPUs running jobs keep after the round, per node.
    run_on: KeptOn,
    /// Whole GPUs the round's placed jobs take, per node.
    placed_on: KeptOn,
    /// Running jobs stopped (preempted, or stopped though the rules forbid it).
    p: Vec<ChangeCol>,
    /// Placed jobs held back.
    h: Vec<ChangeCol>,
    /// GPUs added per eligible node.
    e: BTreeMap<usize, (Variable, usize)>,
    /// Nodes past the job's node limit.
    s_nodes: Option<usize>,
    /// Domains past one, of the job's `within` level.
    s_dom: Option<(Locality, usize)>,
    /// GPUs of quota past the tenant's.
    s_q: Option<usize>,
    /// GPUs of quota the job's tenant lacks for it after the round ([`Self::quota_need`],
    /// taken by [`Self::narrow`]).
    lacks_quota: f64,
}

impl<'a> RelaxModel<'a> {
    /// An empty model of pending job j, with what the round leaves on each node.
    fn new(inst: &'a Instance, after: &AfterRound, j: usize, forbidden: &'a Forbidden) -> Self {
        let job = &inst.pending[j];
        let eligible = (0..inst.nodes.len())
            .filter(|&n| job.accepts_type(&inst.nodes[n].gpu_type))
            .collect();
        let (mut run_on, mut placed_on) = (KeptOn::new(), KeptOn::new());
        for (n, node) in after.holders.iter().enumerate() {
            for h in node {
                match h {
                    Holder::Running(k) => *run_on.entry(*k).or_default().entry(n).or_default() += 1,
                    Holder::Placed(i) => {
                        *placed_on.entry(*i).or_default().entry(n).or_default() += 1
                    }
                    _ => {}
                }
            }
        }
        RelaxModel {
            inst,
            job,
            forbidden,
            eligible,
            cols: Cols {
                vars: ProblemVariables::new(),
                n: 0,
            },
            rows: Vec::new(),
            cost: Expression::from(0.0),
            x: BTreeMap::new(),
            run_on,
            placed_on,
            p: Vec::new(),
            h: Vec::new(),
            e: BTreeMap::new(),
            s_nodes: None,
            s_dom: None,
            s_q: None,
            lacks_quota: 0.0,
        }
    }

    fn allows(&self, f: Family) -> bool {
        !self.forbidden.contains(&f)
    }

    /// Keep the candidate nodes of a large round ([`candidates`]) as the eligible ones.
    fn narrow(&mut self, after: &AfterRound) -> Candidates {
        self.lacks_quota = self.quota_need(after);
        let eligible = std::mem::take(&mut self.eligible);
        let found = candidates(self.inst, after, self.job, eligible, self);
        self.eligible = found.nodes.clone();
        found
    }

    /// The price of stopping running job k (its GPUs' worth at its family's price per GPU,
    /// and the tie-break), `None` where the family is not allowed.
    fn stop_price(&self, k: usize) -> Option<f64> {
        let r = &self.inst.running[k];
        let fam = if self.may_preempt(k) {
            Family::Preempt
        } else {
            Family::Stop
        };
        let per_gpu = if fam == Family::Stop {
            COST_FORCE
        } else {
            COST_PREEMPT
        };
        let c = per_gpu * r.gpu_equivalent().max(0.001) + TIE * victim_cost(self.inst, r);
        self.allows(fam).then_some(c)
    }

    /// The price of holding back placed job i.
    fn hold_price(&self, i: usize) -> f64 {
        let pi = &self.inst.pending[i];
        COST_HOLD * pi.gpu_equivalent().max(0.001) + TIE * job_value(self.inst, pi)
    }

    fn quota(&self) -> Option<f64> {
        self.inst.tenants[self.job.tenant].quota
    }

    /// Whether the rules let the job preempt running job k.
    fn may_preempt(&self, k: usize) -> bool {
        let r = &self.inst.running[k];
        self.inst.policy.preemption && r.preemptible && r.priority < self.job.priority
    }

    /// Whether a job kept on `on` sits on a node the job may use.
    fn on_candidates(&self, on: Option<&BTreeMap<usize, u32>>) -> bool {
        on.is_some_and(|on| on.keys().any(|n| self.x.contains_key(n)))
    }

    /// The GPUs of quota the job's tenant lacks for it after the round (0 without a quota or
    /// where it holds the job).
    fn quota_need(&self, after: &AfterRound) -> f64 {
        self.quota().map_or(0.0, |q| {
            (after.held[self.job.tenant] + self.job.gpu_equivalent() - q).max(0.0)
        })
    }

    /// Placement: on each eligible node the job uses (u) some of its GPUs (x), all of them in
    /// all, `gpus_per_node` on each node used where it asks for it.
    fn add_placement(&mut self) {
        let g = self.job.gpus as f64;
        for &n in &self.eligible {
            let (u, _) = self.cols.add(variable().binary());
            let (xv, _) = self.cols.add(variable().integer().min(0.0).max(g));
            match self.job.gpus_per_node {
                Some(k) => self.rows.push((xv - k as f64 * u).eq(0.0)),
                None => {
                    self.rows.push((xv - g * u).leq(0.0));
                    self.rows.push((u - xv).leq(0.0));
                }
            }
            self.x.insert(n, (u, xv));
        }
        let total: Expression = self.x.values().map(|(_, xv)| *xv).sum();
        self.rows.push(total.eq(g));
    }

    /// Stops of running jobs that keep GPUs the job could use (preemptions where the rules
    /// allow them, forced stops, dearer, where not) and hold-backs of the round's placed jobs
    /// that take such GPUs; and, where the tenant's quota lacks room for the job, the jobs of
    /// the tenant whose stop or hold-back would free quota, the cheapest per GPU
    /// ([`cheapest_cover`]). Returns how many of the latter there were and how many are
    /// modelled.
    fn add_stops_and_hold_backs(&mut self, a: &Assignment) -> (usize, usize) {
        let tenant = self.job.tenant;
        let need = self.lacks_quota;
        // (cost, GPUs of quota, running job or placed job).
        let mut quota_only: Vec<(f64, f64, Holder)> = Vec::new();
        for (k, r) in self.inst.running.iter().enumerate() {
            if a.preempted.contains(&k) {
                continue;
            }
            let near = self.on_candidates(self.run_on.get(&k));
            if !near && (need <= 0.0 || r.tenant != tenant) {
                continue;
            }
            let Some(c) = self.stop_price(k) else {
                continue;
            };
            if near {
                self.add_stop(k, c);
            } else {
                quota_only.push((c, r.gpu_equivalent(), Holder::Running(k)));
            }
        }
        if self.allows(Family::HoldBack) {
            for &i in a.placed.keys() {
                let pi = &self.inst.pending[i];
                let near = self.on_candidates(self.placed_on.get(&i));
                if !near && (need <= 0.0 || pi.tenant != tenant) {
                    continue;
                }
                let c = self.hold_price(i);
                if near {
                    self.add_hold_back(i, c);
                } else {
                    quota_only.push((c, pi.gpu_equivalent(), Holder::Placed(i)));
                }
            }
        }
        let offered = quota_only.len();
        let kept = cheapest_cover(quota_only, need);
        let modelled = kept.len();
        for (c, holder) in kept {
            match holder {
                Holder::Running(k) => self.add_stop(k, c),
                Holder::Placed(i) => self.add_hold_back(i, c),
                _ => {}
            }
        }
        (offered, modelled)
    }

    /// Running job k's stop, at price c.
    fn add_stop(&mut self, k: usize, c: f64) {
        let (v, col) = self.cols.add(variable().binary());
        self.cost.add_mul(c, v);
        self.p.push((k, v, col));
    }

    /// Placed job i's hold-back, at price c.
    fn add_hold_back(&mut self, i: usize, c: f64) {
        let (v, col) = self.cols.add(variable().binary());
        self.cost.add_mul(c, v);
        self.h.push((i, v, col));
    }

    /// GPUs added to each eligible node.
    fn add_hardware(&mut self) {
        if !self.allows(Family::Hardware) {
            return;
        }
        let g = self.job.gpus as f64;
        for &n in &self.eligible {
            let (v, col) = self.cols.add(variable().integer().min(0.0).max(g));
            self.cost.add_mul(COST_ADD, v);
            self.e.insert(n, (v, col));
        }
    }

    /// Capacity: on each node, the job's GPUs fit in what is free after the round plus what
    /// the stops, hold-backs and added GPUs give.
    fn add_capacity(&mut self, after: &AfterRound) {
        for (&n, &(_, xv)) in &self.x {
            let mut lhs = Expression::from(xv);
            for &(k, v, _) in &self.p {
                if let Some(&c) = self.run_on.get(&k).and_then(|m| m.get(&n)) {
                    lhs.add_mul(-(c as f64), v);
                }
            }
            for &(i, v, _) in &self.h {
                if let Some(&c) = self.placed_on.get(&i).and_then(|m| m.get(&n)) {
                    lhs.add_mul(-(c as f64), v);
                }
            }
            if let Some(&(v, _)) = self.e.get(&n) {
                lhs.add_mul(-1.0, v);
            }
            self.rows.push(lhs.leq(after.free[n] as f64));
        }
    }

    /// Node count: at most the job's node limit, or past it at a price.
    fn add_node_count(&mut self) {
        let limit = self.job.node_limit();
        if self.job.gpus_per_node.is_some() || limit as usize >= self.eligible.len() {
            return;
        }
        let used: Expression = self.x.values().map(|(u, _)| *u).sum();
        if self.allows(Family::Locality) {
            let g = self.job.gpus as f64;
            let (s, col) = self.cols.add(variable().integer().min(0.0).max(g));
            self.cost.add_mul(COST_LOCALITY, s);
            self.rows.push((used - s).leq(limit as f64));
            self.s_nodes = Some(col);
        } else {
            self.rows.push(used.leq(limit as f64));
        }
    }

    /// Locality domains: the job's nodes in one rack or pod (its `within`), or in more at a
    /// price.
    fn add_domains(&mut self) {
        let Some(level @ (Locality::Rack | Locality::Pod)) = self.job.within else {
            return;
        };
        let mut doms: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &n in &self.eligible {
            let d = match level {
                Locality::Rack => self.inst.nodes[n].rack,
                _ => self.inst.nodes[n].pod,
            };
            doms.entry(d).or_default().push(n);
        }
        if doms.len() <= 1 {
            return;
        }
        let mut sum = Expression::from(0.0);
        for nodes in doms.values() {
            let (v, _) = self.cols.add(variable().binary());
            for n in nodes {
                self.rows.push((self.x[n].0 - v).leq(0.0));
            }
            sum += v;
        }
        if self.allows(Family::Locality) {
            let most = doms.len() as f64;
            let (s, col) = self.cols.add(variable().integer().min(0.0).max(most));
            self.cost.add_mul(COST_LOCALITY, s);
            self.rows.push((sum - s).leq(1.0));
            self.s_dom = Some((level, col));
        } else {
            self.rows.push(sum.leq(1.0));
        }
    }

    /// Quota: the tenant's GPUs after the round, less what its stops and hold-backs free, plus
    /// the job's, within its quota or past it at a price.
    fn add_quota(&mut self, after: &AfterRound) {
        let Some(q) = self.quota() else {
            return;
        };
        let (inst, tenant) = (self.inst, self.job.tenant);
        let mut lhs = Expression::from(0.0);
        for &(k, v, _) in &self.p {
            if inst.running[k].tenant == tenant {
                lhs.add_mul(-inst.running[k].gpu_equivalent(), v);
            }
        }
        for &(i, v, _) in &self.h {
            if inst.pending[i].tenant == tenant {
                lhs.add_mul(-inst.pending[i].gpu_equivalent(), v);
            }
        }
        if self.allows(Family::Quota) {
            let (s, col) = self.cols.add(variable().min(0.0));
            self.cost.add_mul(COST_QUOTA, s);
            lhs.add_mul(-1.0, s);
            self.s_q = Some(col);
        }
        self.rows
            .push(lhs.leq(q - after.held[tenant] - self.job.gpu_equivalent()));
    }

    /// Solve the model (its columns, rows and cost are taken): the columns' values, the cost
    /// and whether it is proven the least (false where the time limit stopped the solve after
    /// it found a change), or `None` where no allowed change lets the job start.
    fn solve(&mut self) -> Result<Option<(Vec<f64>, f64, bool)>> {
        let vars = std::mem::replace(&mut self.cols.vars, ProblemVariables::new());
        let cost = std::mem::replace(&mut self.cost, Expression::from(0.0));
        let mut model = vars.minimise(cost).using(good_lp::highs);
        for r in std::mem::take(&mut self.rows) {
            model.add_constraint(r);
        }
        let mut hm = model
            .try_into_inner()
            .map_err(|e| Error::Solver(e.to_string()))?;
        hm.make_quiet();
        let _ = hm.try_set_option("time_limit", RELAX_SECONDS);
        let solved = super::lp::solve(hm)?;
        use highs::{HighsModelStatus as S, HighsSolutionStatus};
        let proven = match solved.status() {
            S::Optimal => true,
            // After a second solve without presolve "unbounded or infeasible" stands only
            // where the program is infeasible (it is bounded: every change costs at least 0).
            S::Infeasible | S::UnboundedOrInfeasible => return Ok(None),
            S::ReachedTimeLimit
                if solved.primal_solution_status() == HighsSolutionStatus::Feasible =>
            {
                false
            }
            S::ReachedTimeLimit => {
                return Err(Error::TimeLimit(format!(
                    "the relaxation that explains the job found no change within its \
                     {RELAX_SECONDS} s"
                )))
            }
            other => {
                return Err(Error::Solver(format!(
                    "the relaxation ended with status {other:?}"
                )))
            }
        };
        let val = solved.get_solution().columns().to_vec();
        Ok(Some((val, solved.objective_value(), proven)))
    }

    /// The changes the solution `val` makes.
    fn changes(&self, val: &[f64]) -> Vec<Change> {
        let inst = self.inst;
        let on = |m: Option<&BTreeMap<usize, u32>>| -> BTreeMap<String, u32> {
            m.map(|m| {
                m.iter()
                    .map(|(&n, &c)| (inst.nodes[n].name.clone(), c))
                    .collect()
            })
            .unwrap_or_default()
        };
        let mut changes = Vec::new();
        for &(k, _, col) in &self.p {
            if val[col] > 0.5 {
                changes.push(Change::Stop {
                    job: inst.running[k].id.clone(),
                    gpus: on(self.run_on.get(&k)),
                    allowed: self.may_preempt(k),
                    why_not: self.why_not_preempted(k),
                });
            }
        }
        for &(i, _, col) in &self.h {
            if val[col] > 0.5 {
                changes.push(Change::HoldBack {
                    job: inst.pending[i].id.clone(),
                    gpus: on(self.placed_on.get(&i)),
                });
            }
        }
        changes.extend(self.counted_changes(val));
        changes
    }

    /// Why the rules forbid preempting running job k; `None` where they allow it.
    fn why_not_preempted(&self, k: usize) -> Option<String> {
        let r = &self.inst.running[k];
        (!self.may_preempt(k)).then(|| {
            if !r.preemptible {
                "not preemptible".to_string()
            } else if !self.inst.policy.preemption {
                "policy.preemption is off".to_string()
            } else {
                format!("priority {} is not below {}", r.priority, self.job.priority)
            }
        })
    }

    /// The changes of counted columns in `val`: quota, GPUs added, nodes and domains past the
    /// job's limits.
    fn counted_changes(&self, val: &[f64]) -> Vec<Change> {
        let inst = self.inst;
        let mut changes = Vec::new();
        if let (Some(col), Some(q)) = (self.s_q, self.quota()) {
            if val[col] > 1e-6 {
                changes.push(Change::Quota {
                    tenant: inst.tenants[self.job.tenant].name.clone(),
                    from: q as u32,
                    to: (q + val[col] - 1e-6).ceil() as u32,
                });
            }
        }
        for (&n, &(_, col)) in &self.e {
            let k = val[col].round() as u32;
            if k > 0 {
                changes.push(Change::AddGpus {
                    node: inst.nodes[n].name.clone(),
                    rack: inst.racks[inst.nodes[n].rack].clone(),
                    gpus: k,
                });
            }
        }
        if let Some(col) = self.s_nodes {
            let (limit, k) = (self.job.node_limit(), val[col].round() as u32);
            if k > 0 {
                changes.push(Change::MoreNodes {
                    from: limit,
                    to: limit + k,
                });
            }
        }
        if let Some((level, col)) = self.s_dom {
            let k = val[col].round() as u32;
            if k > 0 {
                changes.push(Change::SpanDomains {
                    level: level.as_str().to_string(),
                    count: 1 + k,
                });
            }
        }
        changes
    }
}

/// Jobs a summary names one by one; past this many of one kind they are grouped into one
/// clause naming the first few ("preempting 6 running jobs (40 GPUs): a, b, c and 3 more").
/// `explain --verbose` lists every change.
pub const LISTED_JOBS: usize = 3;

/// The kind of a job-level change, for grouping: preempted, stopped though not preemptible,
/// held back.
fn job_group(c: &Change) -> Option<(u8, &str, u32)> {
    match c {
        Change::Stop {
            job, gpus, allowed, ..
        } => Some((
            if *allowed { 0 } else { 1 },
            job.as_str(),
            gpus.values().sum(),
        )),
        Change::HoldBack { job, gpus } => Some((2, job.as_str(), gpus.values().sum())),
        _ => None,
    }
}

/// One clause for `jobs` changes of one kind: the count, their GPUs and the first few names.
fn grouped_clause(kind: u8, jobs: &[(&str, u32)]) -> String {
    let gpus: u32 = jobs.iter().map(|j| j.1).sum();
    let names: Vec<&str> = jobs.iter().take(LISTED_JOBS).map(|j| j.0).collect();
    let more = jobs.len().saturating_sub(LISTED_JOBS);
    let list = format!(
        "{}{}",
        names.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
    let n = jobs.len();
    let g = if gpus == 0 {
        "on shared GPUs".to_string()
    } else {
        crate::plan::output::gpus_phrase(gpus)
    };
    match kind {
        0 => format!("{n} running jobs ({g}) are preempted: {list}"),
        1 => format!(
            "{n} running jobs ({g}) that may not be preempted finish or are stopped: {list}"
        ),
        _ => format!("{n} jobs started this round ({g}) wait instead: {list}"),
    }
}

/// "starts if ...": the changes in words, added GPUs summed per rack, and more than
/// [`LISTED_JOBS`] job changes of one kind grouped into one clause.
pub fn summary(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "fits without any change".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut hardware: Vec<String> = Vec::new();
    let mut per_rack: BTreeMap<&str, (u32, Vec<String>)> = BTreeMap::new();
    let mut groups: BTreeMap<u8, Vec<(&str, u32)>> = BTreeMap::new();
    for c in changes {
        if let Some((kind, job, gpus)) = job_group(c) {
            groups.entry(kind).or_default().push((job, gpus));
        }
    }
    for (kind, jobs) in &groups {
        if jobs.len() > LISTED_JOBS {
            parts.push(grouped_clause(*kind, jobs));
        }
    }
    for c in changes {
        if let Some((kind, _, _)) = job_group(c) {
            if groups[&kind].len() > LISTED_JOBS {
                continue;
            }
        }
        match c {
            Change::AddGpus { node, rack, gpus } => {
                let e = per_rack.entry(rack.as_str()).or_default();
                e.0 += gpus;
                e.1.push(format!("{gpus} on {node}"));
            }
            Change::AddNodes { .. } => hardware.push(c.text()),
            _ => parts.push(c.text()),
        }
    }
    let only_hardware = parts.is_empty();
    parts.extend(hardware);
    for (rack, (gpus, on)) in per_rack {
        let place = if rack.is_empty() {
            String::new()
        } else {
            format!(" in rack {rack}")
        };
        parts.push(format!(
            "{gpus} more free GPUs{place} ({}; new hardware)",
            on.join(", ")
        ));
    }
    let text = parts.join("; and ");
    if only_hardware {
        format!("starts with {text}")
    } else {
        format!("starts if {text}")
    }
}

/// The instance with a relaxation's changes written in, or `None` when a change adds GPUs
/// (hardware cannot be written into an existing node faithfully). A stopped running job is
/// removed (as if it finished); a held-back job is removed from the pending list.
pub fn apply(raw: &RawInstance, job_id: &str, rel: &Relaxation) -> Option<RawInstance> {
    let mut raw = raw.clone();
    for c in &rel.changes {
        match c {
            Change::Stop { job, .. } => raw.running.retain(|r| &r.id != job),
            Change::HoldBack { job, .. } => raw.pending.retain(|p| &p.id != job),
            Change::Quota { tenant, to, .. } => {
                if let Some(t) = raw
                    .tenants
                    .as_mut()
                    .and_then(|ts| ts.iter_mut().find(|t| &t.name == tenant))
                {
                    t.quota = Some(*to as u64);
                }
            }
            Change::AddGpus { .. } | Change::AddNodes { .. } => return None,
            Change::SpanDomains { level, .. } => {
                if let Some(p) = raw.pending.iter_mut().find(|p| p.id == job_id) {
                    p.within = (level == "rack").then(|| "pod".to_string());
                }
            }
            Change::MoreNodes { to, .. } => {
                if let Some(p) = raw.pending.iter_mut().find(|p| p.id == job_id) {
                    p.max_nodes = Some(*to as u64);
                    if p.within.as_deref() == Some("node") {
                        p.within = None;
                    }
                }
            }
        }
    }
    Some(raw)
}

#[cfg(test)]
mod tests {
    use super::{summary, Change};
    use std::collections::BTreeMap;

    #[test]
    fn a_sharer_held_back_is_said_to_be_on_a_shared_gpu() {
        let held = |job: &str| Change::HoldBack {
            job: job.into(),
            gpus: BTreeMap::new(),
        };
        assert_eq!(
            summary(&[held("s1")]),
            "starts if s1 (started this round on a shared GPU) waits instead"
        );
        let many: Vec<Change> = (0..5).map(|i| held(&format!("s{i}"))).collect();
        assert!(
            summary(&many).contains("5 jobs started this round (on shared GPUs) wait instead"),
            "{}",
            summary(&many)
        );
    }
}
