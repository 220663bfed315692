//! Raw instance -> validated [`Instance`]: every rule of SPEC.md, each failure an issue that
//! names the field path, the bad value and what would be right. All issues are collected, not
//! just the first.

use super::load::shorten;
use super::policy::{Policy, Weights};
use super::raw::{RawInstance, RawTaskType};
use super::task_dist::{TaskDist, TaskType};
use super::{Instance, Locality, Node, PendingJob, RunningJob, Tenant};
use crate::error::InputIssue;
use crate::hardware::ModelLibrary;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Documented bounds on instance size and values.
pub mod limits {
    /// Nodes per instance.
    pub const MAX_NODES: usize = 100_000;
    /// GPUs per node.
    pub const MAX_GPUS_PER_NODE: u64 = 1024;
    /// Running plus pending jobs per instance.
    pub const MAX_JOBS: usize = 1_000_000;
    /// GPUs one pending job may ask for.
    pub const MAX_JOB_GPUS: u64 = 1_000_000;
    /// Tenants per instance.
    pub const MAX_TENANTS: usize = 100_000;
    /// Absolute value of a priority.
    pub const MAX_PRIORITY: i64 = 1_000_000_000_000;
    /// CPU milli or memory MiB of a node or job.
    pub const MAX_RESOURCE: u64 = 1_000_000_000_000;
    /// Length of a name or id.
    pub const MAX_NAME_LEN: usize = 256;
    /// Task types in `policy.task_distribution`.
    pub const MAX_TASK_TYPES: usize = 10_000;
}

/// Most issues listed for one instance; the rest are counted in a final issue.
pub const MAX_ISSUES: usize = 100;

/// A name or value as it appears in a message: quoted, at most 64 characters.
fn q(s: &str) -> String {
    format!("{:?}", shorten(s, 64))
}

/// Issues found so far, and how many more were found past [`MAX_ISSUES`].
struct Issues(Vec<InputIssue>, usize);

impl Issues {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        if self.0.len() >= MAX_ISSUES {
            self.1 += 1;
            return;
        }
        self.0.push(InputIssue {
            path: path.into(),
            message: message.into(),
            line: None,
        });
    }

    /// The issues, with a last one counting those not listed.
    fn finish(mut self) -> Vec<InputIssue> {
        if self.1 > 0 {
            self.0.push(InputIssue {
                path: String::new(),
                message: format!(
                    "{} more issue(s) not listed; fix the ones above first",
                    self.1
                ),
                line: None,
            });
        }
        self.0
    }

    fn name(&mut self, path: &str, value: &str) {
        if value.is_empty() {
            self.push(path, "is empty; expected a non-empty name");
        } else if value.len() > limits::MAX_NAME_LEN {
            self.push(
                path,
                format!(
                    "is {} characters long; the limit is {}",
                    value.len(),
                    limits::MAX_NAME_LEN
                ),
            );
        } else if value.chars().any(|c| c.is_control()) {
            self.push(
                path,
                format!(
                    "{} contains control characters; use printable characters",
                    q(value)
                ),
            );
        }
    }

    fn resource(&mut self, path: &str, v: Option<u64>) -> Option<u64> {
        match v {
            Some(x) if x > limits::MAX_RESOURCE => {
                self.push(
                    path,
                    format!("is {x}; expected at most {}", limits::MAX_RESOURCE),
                );
                None
            }
            other => other,
        }
    }
}

/// Validate a raw instance against the hardware and workload models.
pub fn validate(raw: &RawInstance, models: &ModelLibrary) -> Result<Instance, Vec<InputIssue>> {
    let mut is = Issues(Vec::new(), 0);
    if raw.nodes.is_empty() {
        is.push("nodes", "is empty; list at least one node");
    }
    if raw.nodes.len() > limits::MAX_NODES {
        is.push(
            "nodes",
            format!(
                "has {} nodes; the limit is {}",
                raw.nodes.len(),
                limits::MAX_NODES
            ),
        );
        return Err(is.0);
    }
    if raw.running.len() + raw.pending.len() > limits::MAX_JOBS {
        is.push(
            "pending",
            format!(
                "running + pending hold {} jobs; the limit is {}",
                raw.running.len() + raw.pending.len(),
                limits::MAX_JOBS
            ),
        );
        return Err(is.0);
    }

    // Nodes, racks, pods.
    let mut nodes = Vec::with_capacity(raw.nodes.len());
    let mut node_by_name = BTreeMap::new();
    let mut racks: Vec<String> = Vec::new();
    let mut rack_ix: BTreeMap<String, usize> = BTreeMap::new();
    let mut rack_pod: Vec<usize> = Vec::new();
    let mut pods: Vec<String> = Vec::new();
    let mut pod_ix: BTreeMap<String, usize> = BTreeMap::new();
    for (i, rn) in raw.nodes.iter().enumerate() {
        let p = format!("nodes[{i}]");
        is.name(&format!("{p}.name"), &rn.name);
        if node_by_name.insert(rn.name.clone(), i).is_some() {
            is.push(
                format!("{p}.name"),
                format!(
                    "{} is used by an earlier node; node names must be unique",
                    q(&rn.name)
                ),
            );
        }
        let model = match &rn.model {
            Some(m) => match models.hardware.get(m) {
                Some(hm) => Some(hm),
                None => {
                    is.push(
                        format!("{p}.model"),
                        format!(
                            "{} is not a known hardware model; expected one of {}",
                            q(m),
                            models
                                .hardware
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                    None
                }
            },
            None => None,
        };
        let gpus = match (rn.gpus, model) {
            (Some(g), Some(m)) if g != m.gpus as u64 => {
                is.push(
                    format!("{p}.gpus"),
                    format!(
                        "is {g} but model {} has {} GPUs; drop gpus or make them equal",
                        m.name, m.gpus
                    ),
                );
                g
            }
            (Some(g), _) => g,
            (None, Some(m)) => m.gpus as u64,
            (None, None) => {
                if rn.model.is_none() {
                    is.push(
                        format!("{p}.gpus"),
                        "is missing; give a GPU count or a model",
                    );
                }
                0
            }
        };
        if gpus > limits::MAX_GPUS_PER_NODE {
            is.push(
                format!("{p}.gpus"),
                format!(
                    "is {gpus}; expected at most {} GPUs per node",
                    limits::MAX_GPUS_PER_NODE
                ),
            );
            continue;
        }
        let gpus = gpus as u32;
        let gpu_type = match (&rn.gpu_type, model) {
            (Some(t), Some(m)) if *t != m.gpu_type => {
                is.push(
                    format!("{p}.gpu_type"),
                    format!(
                        "is {} but model {} has {:?}; drop gpu_type or make them equal",
                        q(t),
                        m.name,
                        m.gpu_type
                    ),
                );
                t.clone()
            }
            (Some(t), _) => {
                is.name(&format!("{p}.gpu_type"), t);
                t.clone()
            }
            (None, Some(m)) => m.gpu_type.clone(),
            (None, None) => "generic".to_string(),
        };
        let mut down = vec![false; gpus as usize];
        for (k, &d) in rn.down.iter().enumerate() {
            if d >= gpus as u64 {
                is.push(
                    format!("{p}.down[{k}]"),
                    format!(
                        "GPU index {d} does not exist; node {} has GPUs 0..{}",
                        shorten(&rn.name, 64),
                        gpus.saturating_sub(1)
                    ),
                );
            } else if down[d as usize] {
                is.push(
                    format!("{p}.down[{k}]"),
                    format!("GPU index {d} is listed twice; list each down GPU once"),
                );
            } else {
                down[d as usize] = true;
            }
        }
        let rack_name = rn.rack.clone().unwrap_or_default();
        let pod_name = rn.pod.clone().unwrap_or_default();
        let pod = *pod_ix.entry(pod_name.clone()).or_insert_with(|| {
            pods.push(pod_name.clone());
            pods.len() - 1
        });
        let rack = match rack_ix.get(&rack_name) {
            Some(&r) => {
                if rack_pod[r] != pod {
                    is.push(format!("{p}.pod"), format!("is {} but rack {} is in pod {} on an earlier node; a rack belongs to one pod", q(&pod_name), q(&rack_name), q(&pods[rack_pod[r]])));
                }
                r
            }
            None => {
                racks.push(rack_name.clone());
                rack_pod.push(pod);
                rack_ix.insert(rack_name, racks.len() - 1);
                racks.len() - 1
            }
        };
        let all: Vec<u32> = (0..gpus).collect();
        let (islands, numa) = match model {
            Some(m) if m.gpus == gpus => (
                if m.nvlink_islands.is_empty() {
                    all.iter().map(|&g| vec![g]).collect()
                } else {
                    m.nvlink_islands.clone()
                },
                if m.numa_nodes.is_empty() {
                    vec![all.clone()]
                } else {
                    m.numa_nodes.clone()
                },
            ),
            _ => (vec![all.clone()], vec![all]),
        };
        if let Some(d) = &rn.nvlink_domain {
            is.name(&format!("{p}.nvlink_domain"), d);
        }
        let cpu_milli = is.resource(
            &format!("{p}.cpu_milli"),
            rn.cpu_milli.or(model.and_then(|m| m.cpu_milli)),
        );
        let memory_mib = is.resource(
            &format!("{p}.memory_mib"),
            rn.memory_mib.or(model.and_then(|m| m.memory_mib)),
        );
        nodes.push(Node {
            name: rn.name.clone(),
            gpus,
            gpu_type,
            rack,
            pod,
            down,
            cpu_milli,
            memory_mib,
            islands,
            numa,
            nvlink_domain: rn.nvlink_domain.clone(),
            model: rn.model.clone(),
        });
    }

    // Tenants.
    let mut tenants = Vec::new();
    let mut tenant_ix: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(ts) = &raw.tenants {
        if ts.len() > limits::MAX_TENANTS {
            is.push(
                "tenants",
                format!(
                    "has {} tenants; the limit is {}",
                    ts.len(),
                    limits::MAX_TENANTS
                ),
            );
        }
        for (i, t) in ts.iter().enumerate() {
            let p = format!("tenants[{i}]");
            is.name(&format!("{p}.name"), &t.name);
            if !(t.weight.is_finite() && t.weight > 0.0 && t.weight <= 1e6) {
                is.push(
                    format!("{p}.weight"),
                    format!("is {}; expected a number > 0 and <= 1e6", t.weight),
                );
            }
            if let Some(q) = t.quota {
                if q > limits::MAX_JOB_GPUS {
                    is.push(
                        format!("{p}.quota"),
                        format!("is {q}; expected at most {}", limits::MAX_JOB_GPUS),
                    );
                }
            }
            if tenant_ix.insert(t.name.clone(), i).is_some() {
                is.push(
                    format!("{p}.name"),
                    format!(
                        "{} is used by an earlier tenant; tenant names must be unique",
                        q(&t.name)
                    ),
                );
            }
            tenants.push(Tenant {
                name: t.name.clone(),
                weight: t.weight,
                quota: t.quota.map(|q| q.min(u32::MAX as u64) as u32),
            });
        }
    }
    let mut tenant_of = |is: &mut Issues, path: String, name: &Option<String>| -> usize {
        let n = name.clone().unwrap_or_else(|| "default".to_string());
        if let Some(&t) = tenant_ix.get(&n) {
            return t;
        }
        if name.is_none() || raw.tenants.is_none() && n == "default" {
            tenants.push(Tenant {
                name: n.clone(),
                weight: 1.0,
                quota: None,
            });
            tenant_ix.insert(n, tenants.len() - 1);
            return tenants.len() - 1;
        }
        let known: Vec<String> = tenant_ix.keys().cloned().collect();
        is.push(
            path,
            format!(
                "{} is not a listed tenant; expected one of {}",
                q(&n),
                if known.is_empty() {
                    "(none listed: add a tenants: section)".to_string()
                } else {
                    known.join(", ")
                }
            ),
        );
        0
    };

    // Jobs.
    let mut ids = BTreeSet::new();
    let mut holder: BTreeMap<(usize, u32), (String, bool, u32)> = BTreeMap::new(); // (node,gpu) -> (job, shared, milli)
    let mut running = Vec::new();
    for (i, r) in raw.running.iter().enumerate() {
        let p = format!("running[{i}]");
        is.name(&format!("{p}.id"), &r.id);
        if !ids.insert(r.id.clone()) {
            is.push(format!("{p}.id"), format!("{} is used by an earlier job; job ids must be unique across running and pending", q(&r.id)));
        }
        let tenant = tenant_of(&mut is, format!("{p}.tenant"), &r.tenant);
        check_priority(&mut is, &format!("{p}.priority"), r.priority);
        let checkpoint_cost = r.checkpoint_cost.unwrap_or(0.0);
        if !(checkpoint_cost.is_finite() && (0.0..=1e15).contains(&checkpoint_cost)) {
            is.push(
                format!("{p}.checkpoint_cost"),
                format!("is {checkpoint_cost}; expected GPU-seconds in 0..=1e15"),
            );
        }
        if r.gpus.is_empty() {
            is.push(format!("{p}.gpus"), "is empty; map each node the job holds to its GPU indices (a CPU-only job lists its node with [])");
        }
        let milli = check_milli(&mut is, &format!("{p}.gpu_milli"), r.gpu_milli);
        let total: usize = r.gpus.values().map(|v| v.len()).sum();
        if milli.is_some() && total != 1 {
            is.push(
                format!("{p}.gpu_milli"),
                format!("is set but the job holds {total} GPUs; a sharer holds exactly one GPU"),
            );
        }
        let mut held = Vec::new();
        for (node_name, idx) in &r.gpus {
            let np = format!("{p}.gpus.{}", shorten(node_name, 64));
            let Some(&n) = node_by_name.get(node_name) else {
                is.push(
                    np,
                    format!(
                        "node {} is not in nodes; use one of the listed node names",
                        q(node_name)
                    ),
                );
                continue;
            };
            let gpus = nodes.get(n).map(|x| x.gpus).unwrap_or(0);
            let mut list = Vec::new();
            for (k, &g) in idx.iter().enumerate() {
                if g >= gpus as u64 {
                    is.push(
                        format!("{np}[{k}]"),
                        format!(
                            "GPU index {g} does not exist; node {} has GPUs 0..{}",
                            shorten(node_name, 64),
                            gpus.saturating_sub(1)
                        ),
                    );
                    continue;
                }
                let g = g as u32;
                if list.contains(&g) {
                    is.push(
                        format!("{np}[{k}]"),
                        format!("GPU index {g} is listed twice; list each GPU once"),
                    );
                    continue;
                }
                list.push(g);
                let shared = milli.is_some();
                match holder.get_mut(&(n, g)) {
                    Some((other, oshared, omilli)) => {
                        if shared && *oshared && *omilli + milli.unwrap_or(0) <= 1000 {
                            *omilli += milli.unwrap_or(0);
                        } else {
                            is.push(format!("{np}[{k}]"), format!("GPU {}:{g} is already held by running job {}; a GPU is held by one job (or by sharers totalling at most 1000 milli)", shorten(node_name, 64), q(other)));
                        }
                    }
                    None => {
                        holder.insert((n, g), (r.id.clone(), shared, milli.unwrap_or(1000)));
                    }
                }
            }
            list.sort_unstable();
            held.push((n, list));
        }
        running.push(RunningJob {
            id: r.id.clone(),
            tenant,
            priority: r.priority,
            preemptible: r.preemptible,
            checkpoint_cost,
            gpus: held,
            gpu_milli: milli,
            cpu_milli: is
                .resource(&format!("{p}.cpu_milli"), r.cpu_milli)
                .unwrap_or(0),
            memory_mib: is
                .resource(&format!("{p}.memory_mib"), r.memory_mib)
                .unwrap_or(0),
        });
    }

    let mut pending = Vec::new();
    for (i, r) in raw.pending.iter().enumerate() {
        let p = format!("pending[{i}]");
        is.name(&format!("{p}.id"), &r.id);
        if !ids.insert(r.id.clone()) {
            is.push(format!("{p}.id"), format!("{} is used by an earlier job; job ids must be unique across running and pending", q(&r.id)));
        }
        let tenant = tenant_of(&mut is, format!("{p}.tenant"), &r.tenant);
        check_priority(&mut is, &format!("{p}.priority"), r.priority);
        if r.gpus > limits::MAX_JOB_GPUS {
            is.push(
                format!("{p}.gpus"),
                format!(
                    "is {}; expected at most {} GPUs",
                    r.gpus,
                    limits::MAX_JOB_GPUS
                ),
            );
        }
        let gpus = r.gpus.min(limits::MAX_JOB_GPUS) as u32;
        let wait = r.wait.unwrap_or(0.0);
        if !(wait.is_finite() && (0.0..=1e10).contains(&wait)) {
            is.push(
                format!("{p}.wait"),
                format!("is {wait}; expected seconds in 0..=1e10"),
            );
        }
        let gpu_types = r.gpu_type.as_ref().map(|t| t.to_vec());
        if let Some(ts) = &gpu_types {
            if ts.is_empty() {
                is.push(
                    format!("{p}.gpu_type"),
                    "is an empty list; omit it to accept any type, or list acceptable types",
                );
            }
            for (k, t) in ts.iter().enumerate() {
                is.name(&format!("{p}.gpu_type[{k}]"), t);
            }
        }
        let within = match r.within.as_deref() {
            None => None,
            Some("node") => Some(Locality::Node),
            Some("rack") => Some(Locality::Rack),
            Some("pod") => Some(Locality::Pod),
            Some(other) => {
                is.push(
                    format!("{p}.within"),
                    format!("is {}; expected one of node, rack, pod", q(other)),
                );
                None
            }
        };
        let max_nodes = match r.max_nodes {
            Some(0) => {
                is.push(
                    format!("{p}.max_nodes"),
                    "is 0; expected at least 1 (omit it for no cap)",
                );
                None
            }
            Some(m) => Some(m.min(limits::MAX_NODES as u64) as u32),
            None => None,
        };
        let gpus_per_node = match r.gpus_per_node {
            Some(0) => {
                is.push(
                    format!("{p}.gpus_per_node"),
                    "is 0; expected at least 1 (omit it for a free shape)",
                );
                None
            }
            Some(g) if g > limits::MAX_GPUS_PER_NODE => {
                is.push(
                    format!("{p}.gpus_per_node"),
                    format!("is {g}; expected at most {}", limits::MAX_GPUS_PER_NODE),
                );
                None
            }
            Some(g) if gpus > 0 && !(gpus as u64).is_multiple_of(g) => {
                is.push(
                    format!("{p}.gpus_per_node"),
                    format!("is {g} but gpus is {gpus}; gpus must be a multiple of gpus_per_node"),
                );
                None
            }
            Some(g) => Some(g as u32),
            None => None,
        };
        let gpu_milli = check_milli(&mut is, &format!("{p}.gpu_milli"), r.gpu_milli);
        if gpu_milli.is_some() && gpus != 1 {
            is.push(
                format!("{p}.gpu_milli"),
                format!("is set but gpus is {gpus}; a sharing job asks for gpus: 1"),
            );
        }
        if gpus == 0 && (gpus_per_node.is_some() || gpu_types.is_some()) {
            is.push(format!("{p}.gpus"), "is 0 (a CPU-only job) but gpu_type or gpus_per_node is set; remove them or ask for GPUs");
        }
        if let Some(w) = &r.workload {
            if !models.workloads.contains_key(w) {
                is.push(
                    format!("{p}.workload"),
                    format!(
                        "{} is not a known workload profile; expected one of {}",
                        q(w),
                        models
                            .workloads
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        pending.push(PendingJob {
            id: r.id.clone(),
            tenant,
            gpus,
            priority: r.priority,
            wait,
            gpu_types,
            within,
            max_nodes,
            gpus_per_node,
            workload: r.workload.clone(),
            slowdown: models.slowdown(r.workload.as_deref()),
            gpu_milli,
            cpu_milli: is
                .resource(&format!("{p}.cpu_milli"), r.cpu_milli)
                .unwrap_or(0),
            memory_mib: is
                .resource(&format!("{p}.memory_mib"), r.memory_mib)
                .unwrap_or(0),
        });
    }

    // Policy.
    let mut policy = Policy::default();
    if let Some(rp) = &raw.policy {
        if let Some(t) = rp.time_limit {
            if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
                is.push(
                    "policy.time_limit",
                    format!("is {t}; expected seconds in (0, 86400]"),
                );
            } else {
                policy.time_limit = t;
            }
        }
        if let Some(g) = rp.mip_gap {
            if !(g.is_finite() && (0.0..=1.0).contains(&g)) {
                is.push(
                    "policy.mip_gap",
                    format!("is {g}; expected a fraction in 0..=1 (0.01 = 1%)"),
                );
            } else {
                policy.mip_gap = g;
            }
        }
        match Weights::from_map(&rp.weights) {
            Ok(w) => policy.weights = w,
            Err(e) => {
                for i in e {
                    is.push(i.path, i.message);
                }
            }
        }
        policy.preemption = rp.preemption.unwrap_or(true);
        policy.seed = rp.seed.unwrap_or(0);
    }
    let task_dist = raw
        .policy
        .as_ref()
        .and_then(|rp| rp.task_distribution.as_deref())
        .and_then(|types| task_distribution(&mut is, types));

    if !is.0.is_empty() {
        return Err(is.finish());
    }
    Ok(Instance {
        nodes,
        racks,
        rack_pod,
        pods,
        tenants,
        running,
        pending,
        policy,
        node_by_name,
        task_dist,
    })
}

/// `policy.task_distribution`: each entry checked, shares normalised; `None` on any issue.
fn task_distribution(is: &mut Issues, types: &[RawTaskType]) -> Option<Arc<TaskDist>> {
    let base = "policy.task_distribution";
    if types.is_empty() {
        is.push(
            base,
            "is an empty list; list at least one task type, or omit it to place by best fit",
        );
        return None;
    }
    if types.len() > limits::MAX_TASK_TYPES {
        is.push(
            base,
            format!(
                "has {} task types; the limit is {}: keep the most frequent ones",
                types.len(),
                limits::MAX_TASK_TYPES
            ),
        );
        return None;
    }
    let before = is.0.len() + is.1;
    let mut out = Vec::with_capacity(types.len());
    for (i, t) in types.iter().enumerate() {
        let p = format!("{base}[{i}]");
        if t.gpus == 0 {
            is.push(
                format!("{p}.gpus"),
                "is 0; expected at least 1 GPU (CPU-only tasks do not fragment GPUs: leave them out)",
            );
        } else if t.gpus > limits::MAX_GPUS_PER_NODE {
            is.push(
                format!("{p}.gpus"),
                format!(
                    "is {}; expected at most {} GPUs (a task type is what one task asks of one node)",
                    t.gpus,
                    limits::MAX_GPUS_PER_NODE
                ),
            );
        }
        let milli = check_milli(is, &format!("{p}.gpu_milli"), t.gpu_milli);
        if milli.is_some() && t.gpus != 1 {
            is.push(
                format!("{p}.gpu_milli"),
                format!(
                    "is set but gpus is {}; a sharing task type asks for 1 GPU",
                    t.gpus
                ),
            );
        }
        let gpu_types = t.gpu_type.as_ref().map(|g| g.to_vec());
        if let Some(ts) = &gpu_types {
            if ts.is_empty() {
                is.push(
                    format!("{p}.gpu_type"),
                    "is an empty list; omit it to accept any type, or list acceptable types",
                );
            }
            for (k, name) in ts.iter().enumerate() {
                is.name(&format!("{p}.gpu_type[{k}]"), name);
            }
        }
        if !(t.share.is_finite() && t.share > 0.0 && t.share <= 1e12) {
            is.push(
                format!("{p}.share"),
                format!(
                    "is {}; expected a number in (0, 1e12] (shares are normalised to sum to 1)",
                    t.share
                ),
            );
        }
        let cpu_milli = is.resource(&format!("{p}.cpu_milli"), t.cpu_milli);
        let memory_mib = is.resource(&format!("{p}.memory_mib"), t.memory_mib);
        out.push((
            TaskType {
                cpu_milli: cpu_milli.unwrap_or(0),
                memory_mib: memory_mib.unwrap_or(0),
                gpus: t.gpus.min(limits::MAX_GPUS_PER_NODE) as u32,
                milli_per_gpu: milli.unwrap_or(1000),
                gpu_types,
            },
            t.share,
        ));
    }
    if is.0.len() + is.1 != before {
        return None;
    }
    Some(Arc::new(TaskDist::from_shares(out)))
}

fn check_priority(is: &mut Issues, path: &str, p: i64) {
    if p.abs() > limits::MAX_PRIORITY {
        is.push(
            path,
            format!(
                "is {p}; expected a priority within +-{}",
                limits::MAX_PRIORITY
            ),
        );
    }
}

fn check_milli(is: &mut Issues, path: &str, m: Option<u64>) -> Option<u32> {
    match m {
        Some(x) if (1..=999).contains(&x) => Some(x as u32),
        Some(x) => {
            is.push(
                path,
                format!("is {x}; expected 1..=999 thousandths of one GPU (omit it for whole GPUs)"),
            );
            None
        }
        None => None,
    }
}
