//! Raw instance -> validated [`Instance`]: every rule of SPEC.md, each failure an issue that
//! names the field path, the bad value and what would be right. All issues are collected, not
//! just the first.
//!
//! One file per section: [`nodes`], [`tenants`], [`running`], [`pending`], [`policy`] and
//! [`task_types`], and [`scale`] across them (the objective's range); [`issues`] collects
//! what they find and holds the checks they share;
//! [`limits`] are the documented bounds. A section that needs another's result (jobs need the
//! node table and the tenants) takes it as an argument, so sections never call each other back.

pub mod issues;
pub mod limits;
pub mod nodes;
pub mod pending;
pub mod policy;
pub mod running;
pub mod scale;
pub mod task_types;
pub mod tenants;

pub use issues::MAX_ISSUES;

use crate::error::InputIssue;
use crate::hardware::ModelLibrary;
use crate::instance::raw::RawInstance;
use crate::instance::Instance;
use std::collections::BTreeSet;

/// Validate a raw instance against the hardware and workload models.
pub fn validate(raw: &RawInstance, models: &ModelLibrary) -> Result<Instance, Vec<InputIssue>> {
    let mut is = issues::Issues::default();
    if let Some(refused) = too_large(&mut is, raw) {
        return Err(refused);
    }
    let node_table = nodes::check(&mut is, &raw.nodes, models);
    let mut tenant_table = tenants::check(&mut is, raw.tenants.as_deref());
    let mut ids = BTreeSet::new();
    let running = running::check(
        &mut is,
        &raw.running,
        &node_table,
        &mut tenant_table,
        &mut ids,
    );
    let pending = pending::check(&mut is, &raw.pending, models, &mut tenant_table, &mut ids);
    let policy = policy::check(&mut is, raw.policy.as_ref());
    scale::check(&mut is, raw, &policy.weights);
    let task_dist = raw
        .policy
        .as_ref()
        .and_then(|rp| rp.task_distribution.as_deref())
        .and_then(|types| task_types::check(&mut is, types));
    let task_dist = task_types::with_artifact_score(&mut is, raw.policy.as_ref(), task_dist);
    if !is.is_empty() {
        return Err(named_items(is.finish(), raw));
    }
    let mut inst = Instance {
        // Every node was built: a refused one leaves an issue.
        nodes: node_table.nodes.into_iter().flatten().collect(),
        racks: node_table.racks,
        rack_pod: node_table.rack_pod,
        pods: node_table.pods,
        tenants: tenant_table.tenants,
        running,
        pending,
        policy,
        node_by_name: node_table.by_name,
        task_dist,
        fair_share: None,
        reservations: Vec::new(),
    };
    inst.reservations = crate::instance::reservation::plan(&inst);
    Ok(inst)
}

/// The refusal of an instance over the node or job limit, before anything else is checked
/// (an empty node list is an issue, not a refusal).
fn too_large(is: &mut issues::Issues, raw: &RawInstance) -> Option<Vec<InputIssue>> {
    if raw.nodes.is_empty() {
        is.push("nodes", "is empty; list at least one node");
    }
    let refused = if raw.nodes.len() > limits::MAX_NODES {
        format!(
            "has {} nodes; the limit is {}",
            raw.nodes.len(),
            limits::MAX_NODES
        )
    } else if raw.running.len() + raw.pending.len() > limits::MAX_JOBS {
        format!(
            "running + pending hold {} jobs; the limit is {}",
            raw.running.len() + raw.pending.len(),
            limits::MAX_JOBS
        )
    } else {
        return None;
    };
    let path = if raw.nodes.len() > limits::MAX_NODES {
        "nodes"
    } else {
        "pending"
    };
    is.push(path, refused);
    Some(std::mem::take(is).listed())
}

/// Issues whose path points into a list of nodes, tenants or jobs name that item at the head
/// of the message (`running[1].gpus.n1[0]: job "r2": GPU n1:1 is already held by running job
/// "r1"`), so that a message about one item that mentions another names both. Issues about
/// the name or id itself already quote it.
fn named_items(issues: Vec<InputIssue>, raw: &RawInstance) -> Vec<InputIssue> {
    issues
        .into_iter()
        .map(|mut issue| {
            if let Some((item, name)) = item_named(&issue.path, raw) {
                if !names_word(&issue.message, name) {
                    issue.message = format!("{item}: {}", issue.message);
                }
            }
            issue
        })
        .collect()
}

/// Whether `message` already names `name` as a word of its own.
fn names_word(message: &str, name: &str) -> bool {
    message.match_indices(name).any(|(at, _)| {
        let before = message[..at].chars().next_back();
        let after = message[at + name.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '-');
        edge(before) && edge(after)
    })
}

/// `job "r2"` (and the bare name) for a path under `running[1]`, and likewise for nodes,
/// tenants and pending jobs, unless the path is the item's name or id, or the index is out of
/// range.
fn item_named<'a>(path: &str, raw: &'a RawInstance) -> Option<(String, &'a str)> {
    let (section, rest) = path.split_once('[')?;
    let (index, field) = rest.split_once(']')?;
    if matches!(field, ".name" | ".id") {
        return None;
    }
    let i: usize = index.parse().ok()?;
    let (kind, name) = match section {
        "nodes" => ("node", raw.nodes.get(i)?.name.as_str()),
        "running" => ("job", raw.running.get(i)?.id.as_str()),
        "pending" => ("job", raw.pending.get(i)?.id.as_str()),
        "tenants" => ("tenant", raw.tenants.as_ref()?.get(i)?.name.as_str()),
        _ => return None,
    };
    (!name.is_empty()).then(|| {
        (
            format!("{kind} {}", crate::instance::text::quoted(name)),
            name,
        )
    })
}
