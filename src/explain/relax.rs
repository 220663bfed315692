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

use crate::assignment::Assignment;
use crate::error::{Error, Result};
use crate::instance::raw::RawInstance;
use crate::instance::{Instance, Locality};
use crate::objective::{job_value, victim_cost};
use crate::plan::reasons::{AfterRound, Holder};
use good_lp::solvers::SolverModel;
use good_lp::{variable, Expression, ProblemVariables, Variable, VariableDefinition};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

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
/// ones; plus notes on what the relaxation leaves out for this job.
pub fn relax_alternatives(
    inst: &Instance,
    a: &Assignment,
    after: &AfterRound,
    j: usize,
    max: usize,
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
    while out.len() < max {
        let Some(r) = relax(inst, a, after, j, &forbidden)? else {
            break;
        };
        let fams: BTreeSet<Family> = r.changes.iter().map(|c| c.family()).collect();
        if fams.is_empty() {
            // The job fits without any change: the objective decided.
            notes.push("the job fits the GPUs left free without any change: the round's objective preferred other work; raising its priority or waiting (aging) would help".into());
            break;
        }
        forbidden.extend(fams);
        out.push(r);
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

/// One relaxation solve; `None` when no change of the allowed families lets the job start.
pub fn relax(
    inst: &Instance,
    a: &Assignment,
    after: &AfterRound,
    j: usize,
    forbidden: &Forbidden,
) -> Result<Option<Relaxation>> {
    let job = &inst.pending[j];
    let g = job.gpus as f64;
    let allow = |f: Family| !forbidden.contains(&f);
    let eligible: Vec<usize> = (0..inst.nodes.len())
        .filter(|&n| job.accepts_type(&inst.nodes[n].gpu_type))
        .collect();
    let tenant = job.tenant;
    let quota = inst.tenants[tenant].quota;
    let mut cols = Cols {
        vars: ProblemVariables::new(),
        n: 0,
    };
    let mut rows: Vec<good_lp::Constraint> = Vec::new();
    let mut cost = Expression::from(0.0);
    // Placement.
    let mut x: BTreeMap<usize, (Variable, Variable)> = BTreeMap::new();
    for &n in &eligible {
        let (u, _) = cols.add(variable().binary());
        let (xv, _) = cols.add(variable().integer().min(0.0).max(g));
        match job.gpus_per_node {
            Some(k) => rows.push((xv - k as f64 * u).eq(0.0)),
            None => {
                rows.push((xv - g * u).leq(0.0));
                rows.push((u - xv).leq(0.0));
            }
        }
        x.insert(n, (u, xv));
    }
    rows.push(x.values().map(|(_, xv)| *xv).sum::<Expression>().eq(g));
    // Running jobs that keep whole GPUs, per node; and same-tenant ones for the quota.
    let mut run_on: BTreeMap<usize, BTreeMap<usize, u32>> = BTreeMap::new();
    let mut placed_on: BTreeMap<usize, BTreeMap<usize, u32>> = BTreeMap::new();
    for (n, node) in after.holders.iter().enumerate() {
        for h in node {
            match h {
                Holder::Running(k) => *run_on.entry(*k).or_default().entry(n).or_default() += 1,
                Holder::Placed(i) => *placed_on.entry(*i).or_default().entry(n).or_default() += 1,
                _ => {}
            }
        }
    }
    let may = |k: usize| {
        let r = &inst.running[k];
        inst.policy.preemption && r.preemptible && r.priority < job.priority
    };
    let relevant = |on: &BTreeMap<usize, u32>, t: usize| {
        on.keys().any(|n| x.contains_key(n)) || (quota.is_some() && t == tenant)
    };
    let mut p: Vec<(usize, Variable, usize)> = Vec::new();
    for (k, r) in inst.running.iter().enumerate() {
        let on = run_on.get(&k).cloned().unwrap_or_default();
        if a.preempted.contains(&k) || on.is_empty() && !(quota.is_some() && r.tenant == tenant) {
            continue;
        }
        if !relevant(&on, r.tenant) {
            continue;
        }
        let fam = if may(k) {
            Family::Preempt
        } else {
            Family::Stop
        };
        if !allow(fam) {
            continue;
        }
        let (v, col) = cols.add(variable().binary());
        let per_gpu = if fam == Family::Stop {
            COST_FORCE
        } else {
            COST_PREEMPT
        };
        let c = per_gpu * r.gpu_equivalent().max(0.001) + TIE * victim_cost(inst, r);
        cost.add_mul(c, v);
        p.push((k, v, col));
    }
    let mut h: Vec<(usize, Variable, usize)> = Vec::new();
    if allow(Family::HoldBack) {
        for &i in a.placed.keys() {
            let on = placed_on.get(&i).cloned().unwrap_or_default();
            if !relevant(&on, inst.pending[i].tenant) {
                continue;
            }
            let (v, col) = cols.add(variable().binary());
            let pi = &inst.pending[i];
            cost.add_mul(
                COST_HOLD * pi.gpu_equivalent().max(0.001) + TIE * job_value(inst, pi),
                v,
            );
            h.push((i, v, col));
        }
    }
    let mut e: BTreeMap<usize, (Variable, usize)> = BTreeMap::new();
    if allow(Family::Hardware) {
        for &n in &eligible {
            let (v, col) = cols.add(variable().integer().min(0.0).max(g));
            cost.add_mul(COST_ADD, v);
            e.insert(n, (v, col));
        }
    }
    // Capacity.
    for (&n, &(_, xv)) in &x {
        let mut lhs = Expression::from(xv);
        for &(k, v, _) in &p {
            if let Some(&c) = run_on.get(&k).and_then(|m| m.get(&n)) {
                lhs.add_mul(-(c as f64), v);
            }
        }
        for &(i, v, _) in &h {
            if let Some(&c) = placed_on.get(&i).and_then(|m| m.get(&n)) {
                lhs.add_mul(-(c as f64), v);
            }
        }
        if let Some(&(v, _)) = e.get(&n) {
            lhs.add_mul(-1.0, v);
        }
        rows.push(lhs.leq(after.free[n] as f64));
    }
    // Node count.
    let limit = job.node_limit();
    let mut s_nodes = None;
    if job.gpus_per_node.is_none() && (limit as usize) < eligible.len() {
        let used: Expression = x.values().map(|(u, _)| *u).sum();
        if allow(Family::Locality) {
            let (s, col) = cols.add(variable().integer().min(0.0).max(g));
            cost.add_mul(COST_LOCALITY, s);
            rows.push((used - s).leq(limit as f64));
            s_nodes = Some(col);
        } else {
            rows.push(used.leq(limit as f64));
        }
    }
    // Locality domains.
    let mut s_dom = None;
    if let Some(level @ (Locality::Rack | Locality::Pod)) = job.within {
        let mut doms: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &n in &eligible {
            let d = match level {
                Locality::Rack => inst.nodes[n].rack,
                _ => inst.nodes[n].pod,
            };
            doms.entry(d).or_default().push(n);
        }
        if doms.len() > 1 {
            let mut sum = Expression::from(0.0);
            for nodes in doms.values() {
                let (v, _) = cols.add(variable().binary());
                for n in nodes {
                    rows.push((x[n].0 - v).leq(0.0));
                }
                sum += v;
            }
            if allow(Family::Locality) {
                let (s, col) = cols.add(variable().integer().min(0.0).max(doms.len() as f64));
                cost.add_mul(COST_LOCALITY, s);
                rows.push((sum - s).leq(1.0));
                s_dom = Some((level, col));
            } else {
                rows.push(sum.leq(1.0));
            }
        }
    }
    // Quota.
    let mut s_q = None;
    if let Some(q) = quota {
        let mut lhs = Expression::from(0.0);
        for &(k, v, _) in &p {
            if inst.running[k].tenant == tenant {
                lhs.add_mul(-inst.running[k].gpu_equivalent(), v);
            }
        }
        for &(i, v, _) in &h {
            if inst.pending[i].tenant == tenant {
                lhs.add_mul(-inst.pending[i].gpu_equivalent(), v);
            }
        }
        if allow(Family::Quota) {
            let (s, col) = cols.add(variable().min(0.0));
            cost.add_mul(COST_QUOTA, s);
            lhs.add_mul(-1.0, s);
            s_q = Some(col);
        }
        rows.push(lhs.leq(q - after.held[tenant] - job.gpu_equivalent()));
    }
    // Solve.
    let mut model = cols.vars.minimise(cost).using(good_lp::highs);
    for r in rows {
        model.add_constraint(r);
    }
    let mut hm = model
        .try_into_inner()
        .map_err(|e| Error::Solver(e.to_string()))?;
    hm.make_quiet();
    let _ = hm.try_set_option("time_limit", 10.0);
    let solved = hm
        .try_solve()
        .map_err(|e| Error::Solver(format!("HiGHS run failed: {e:?}")))?;
    use highs::HighsModelStatus as S;
    match solved.status() {
        S::Optimal => {}
        S::Infeasible | S::UnboundedOrInfeasible => return Ok(None),
        other => {
            return Err(Error::Solver(format!(
                "the relaxation ended with status {other:?}"
            )))
        }
    }
    let val = solved.get_solution().columns().to_vec();
    let on = |m: Option<&BTreeMap<usize, u32>>| -> BTreeMap<String, u32> {
        m.map(|m| {
            m.iter()
                .map(|(&n, &c)| (inst.nodes[n].name.clone(), c))
                .collect()
        })
        .unwrap_or_default()
    };
    let mut changes = Vec::new();
    for &(k, _, col) in &p {
        if val[col] > 0.5 {
            let r = &inst.running[k];
            let allowed = may(k);
            let why_not = (!allowed).then(|| {
                if !r.preemptible {
                    "not preemptible".to_string()
                } else if !inst.policy.preemption {
                    "policy.preemption is off".to_string()
                } else {
                    format!("priority {} is not below {}", r.priority, job.priority)
                }
            });
            changes.push(Change::Stop {
                job: r.id.clone(),
                gpus: on(run_on.get(&k)),
                allowed,
                why_not,
            });
        }
    }
    for &(i, _, col) in &h {
        if val[col] > 0.5 {
            changes.push(Change::HoldBack {
                job: inst.pending[i].id.clone(),
                gpus: on(placed_on.get(&i)),
            });
        }
    }
    if let (Some(col), Some(q)) = (s_q, quota) {
        if val[col] > 1e-6 {
            changes.push(Change::Quota {
                tenant: inst.tenants[tenant].name.clone(),
                from: q as u32,
                to: (q + val[col] - 1e-6).ceil() as u32,
            });
        }
    }
    for (&n, &(_, col)) in &e {
        let k = val[col].round() as u32;
        if k > 0 {
            changes.push(Change::AddGpus {
                node: inst.nodes[n].name.clone(),
                rack: inst.racks[inst.nodes[n].rack].clone(),
                gpus: k,
            });
        }
    }
    if let Some(col) = s_nodes {
        let k = val[col].round() as u32;
        if k > 0 {
            changes.push(Change::MoreNodes {
                from: limit,
                to: limit + k,
            });
        }
    }
    if let Some((level, col)) = s_dom {
        let k = val[col].round() as u32;
        if k > 0 {
            changes.push(Change::SpanDomains {
                level: level.as_str().to_string(),
                count: 1 + k,
            });
        }
    }
    let total = solved.objective_value();
    let summary = summary(&changes);
    Ok(Some(Relaxation {
        changes,
        cost: total,
        summary,
    }))
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
    let g = crate::plan::output::gpus_phrase(gpus);
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
