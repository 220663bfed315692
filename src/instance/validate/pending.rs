//! The `pending` section: each job's tenant, priority, gang size, wait, accepted GPU types,
//! locality and shape, GPU share and workload profile.

use super::issues::Issues;
use super::limits;
use super::tenants::TenantTable;
use crate::hardware::ModelLibrary;
use crate::instance::raw::RawPending;
use crate::instance::text::quoted;
use crate::instance::{Locality, PendingJob};
use std::collections::BTreeSet;

/// Check every pending job; `ids` holds the running jobs' ids and collects these.
pub fn check(
    is: &mut Issues,
    raw: &[RawPending],
    models: &ModelLibrary,
    tenants: &mut TenantTable,
    ids: &mut BTreeSet<String>,
) -> Vec<PendingJob> {
    let mut pending = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let p = format!("pending[{i}]");
        is.job_id(&p, &r.id, ids);
        let tenant = tenants.of(is, format!("{p}.tenant"), &r.tenant);
        pending.push(job(is, &p, r, models, tenant));
    }
    pending
}

/// One pending job of tenant `tenant`.
fn job(
    is: &mut Issues,
    p: &str,
    r: &RawPending,
    models: &ModelLibrary,
    tenant: usize,
) -> PendingJob {
    is.priority(&format!("{p}.priority"), r.priority);
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
    if !(wait.is_finite() && (0.0..=limits::MAX_WAIT_S).contains(&wait)) {
        is.push(
            format!("{p}.wait"),
            format!(
                "is {wait}; expected seconds in 0..={:e}",
                limits::MAX_WAIT_S
            ),
        );
    }
    let gpu_types = r.gpu_type.as_ref().map(|t| t.to_vec());
    if let Some(ts) = &gpu_types {
        gpu_type_list(is, p, ts);
    }
    let within = within(is, p, r.within.as_deref());
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
    // The checks that follow read the gang size as given: `gpus` is capped at the limit.
    let gpus_per_node = gpus_per_node(is, p, r.gpus_per_node, r.gpus);
    // The user's max_nodes, not the value capped at the most nodes a cluster has.
    let asked_max_nodes = r.max_nodes.filter(|&m| m > 0);
    if r.gpus <= limits::MAX_JOB_GPUS {
        shape_contradiction(is, p, gpus, within, asked_max_nodes, gpus_per_node);
    }
    let gpu_milli = is.milli(&format!("{p}.gpu_milli"), r.gpu_milli);
    if gpu_milli.is_some() && r.gpus != 1 {
        let g = r.gpus;
        is.push(
            format!("{p}.gpu_milli"),
            format!("is set but gpus is {g}; a sharing job asks for gpus: 1"),
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
                    quoted(w),
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
    PendingJob {
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
        time_limit: is.seconds(&format!("{p}.time_limit"), r.time_limit),
    }
}

/// A list of accepted GPU types at `{p}.gpu_type`: non-empty, each a valid name.
pub fn gpu_type_list(is: &mut Issues, p: &str, types: &[String]) {
    if types.is_empty() {
        is.push(
            format!("{p}.gpu_type"),
            "is an empty list; omit it to accept any type, or list acceptable types",
        );
    }
    for (k, t) in types.iter().enumerate() {
        is.name(&format!("{p}.gpu_type[{k}]"), t);
    }
}

/// `within`: node, rack or pod.
fn within(is: &mut Issues, p: &str, within: Option<&str>) -> Option<Locality> {
    match within {
        None => None,
        Some("node") => Some(Locality::Node),
        Some("rack") => Some(Locality::Rack),
        Some("pod") => Some(Locality::Pod),
        Some(other) => {
            is.push(
                format!("{p}.within"),
                format!("is {}; expected one of node, rack, pod", quoted(other)),
            );
            None
        }
    }
}

/// A shape no cluster can give: `gpus_per_node` fixes how many nodes the gang spans
/// (`gpus / gpus_per_node`), and `max_nodes` or `within: node` may allow fewer.
fn shape_contradiction(
    is: &mut Issues,
    p: &str,
    gpus: u32,
    within: Option<Locality>,
    max_nodes: Option<u64>,
    gpus_per_node: Option<u32>,
) {
    let Some(per) = gpus_per_node.filter(|&g| g > 0 && gpus > 0) else {
        return;
    };
    let spans = u64::from(gpus / per);
    let (cap, field) = match (within, max_nodes) {
        (Some(Locality::Node), _) => (1, "within: node"),
        (_, Some(m)) => (m, "max_nodes"),
        _ => return,
    };
    if spans > cap {
        // The smallest per-node count that divides the gang and fits the cap.
        let fits = (gpus.div_ceil(cap as u32)..=gpus)
            .find(|d| gpus.is_multiple_of(*d))
            .unwrap_or(gpus);
        is.push(
            format!("{p}.gpus_per_node"),
            format!(
                "is {per} with gpus {gpus}, so the gang spans {gpus} / {per} = {spans} nodes, but \
                 {field} allows {cap}; set gpus_per_node to {fits}{}, or allow {spans} nodes",
                if fits < gpus {
                    format!(" (or a larger divisor of {gpus})")
                } else {
                    String::new()
                }
            ),
        );
    }
}

/// `gpus_per_node`: at least 1, at most a node's GPUs, dividing the gang size `gpus` (as
/// given, not capped at its limit).
fn gpus_per_node(is: &mut Issues, p: &str, raw: Option<u64>, gpus: u64) -> Option<u32> {
    match raw {
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
        Some(g) if gpus > 0 && !gpus.is_multiple_of(g) => {
            is.push(
                format!("{p}.gpus_per_node"),
                format!("is {g} but gpus is {gpus}; gpus must be a multiple of gpus_per_node"),
            );
            None
        }
        Some(g) => Some(g as u32),
        None => None,
    }
}
