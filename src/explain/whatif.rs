//! What-if analysis: apply changes to an instance, re-plan, and report what changes.
//!
//! Changes, applied in the order given:
//!
//! - `add-nodes MODEL:COUNT[@RACK]`: COUNT nodes of hardware model MODEL, named
//!   `MODEL-new-1`, ... (in the rack's pod when the rack exists; without `@RACK`, in the
//!   unnamed rack of the nodes that give no rack, and in its pod);
//! - `drain NODE|RACK`: the node (or every node of the rack) takes no new work: its free GPUs
//!   are marked down; running jobs there keep their GPUs and are not preemptible (their GPUs
//!   would only come back to the drained node);
//! - `quota TENANT=N`: set the tenant's quota;
//! - `weight TENANT=W`: set the tenant's fair-share weight.

use super::round::Round;
use crate::error::{Error, Result};
use crate::hardware::ModelLibrary;
use crate::instance::raw::{RawInstance, RawNode, RawTenant};
use crate::objective::evaluate;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One change to the instance.
#[derive(Debug, Clone, PartialEq)]
pub enum WhatIf {
    /// Add `count` nodes of a hardware model, optionally in a rack.
    AddNodes {
        /// Hardware model.
        model: String,
        /// How many.
        count: u32,
        /// Rack.
        rack: Option<String>,
    },
    /// Drain a node or every node of a rack.
    Drain(String),
    /// Set a tenant's quota.
    Quota(String, u64),
    /// Set a tenant's weight.
    Weight(String, f64),
}

impl WhatIf {
    /// Parse `MODEL:COUNT[@RACK]`.
    pub fn parse_add_nodes(s: &str) -> std::result::Result<WhatIf, String> {
        let (main, rack) = match s.split_once('@') {
            Some((m, r)) if !r.is_empty() => (m, Some(r.to_string())),
            Some(_) => return Err(format!("{s:?}: empty rack after '@'")),
            None => (s, None),
        };
        let (model, count) = main
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: expected MODEL:COUNT[@RACK], e.g. dgx-h100:4@r1"))?;
        let count: u32 = count
            .parse()
            .ok()
            .filter(|c| (1..=10_000).contains(c))
            .ok_or_else(|| format!("{s:?}: COUNT must be a whole number in 1..=10000"))?;
        if model.is_empty() {
            return Err(format!("{s:?}: empty model name"));
        }
        Ok(WhatIf::AddNodes {
            model: model.to_string(),
            count,
            rack,
        })
    }

    /// Parse `TENANT=N` for a quota.
    pub fn parse_quota(s: &str) -> std::result::Result<WhatIf, String> {
        let (t, v) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected TENANT=N, e.g. prod=40"))?;
        if t.is_empty() {
            return Err(format!(
                "{s:?}: empty tenant name; expected TENANT=N, e.g. prod=40"
            ));
        }
        let n: u64 = v
            .parse()
            .ok()
            .filter(|n| *n <= 10_000_000)
            .ok_or_else(|| format!("{s:?}: N must be a whole number of GPUs"))?;
        Ok(WhatIf::Quota(t.to_string(), n))
    }

    /// Parse `TENANT=W` for a weight.
    pub fn parse_weight(s: &str) -> std::result::Result<WhatIf, String> {
        let (t, v) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected TENANT=W, e.g. prod=2"))?;
        if t.is_empty() {
            return Err(format!(
                "{s:?}: empty tenant name; expected TENANT=W, e.g. prod=2"
            ));
        }
        let w: f64 = v
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w > 0.0 && *w <= 1e6)
            .ok_or_else(|| format!("{s:?}: W must be a number in (0, 1e6]"))?;
        Ok(WhatIf::Weight(t.to_string(), w))
    }

    /// The change in words.
    pub fn text(&self) -> String {
        match self {
            WhatIf::AddNodes { model, count, rack } => match rack {
                Some(r) => format!("add {count} x {model} in rack {r}"),
                None => format!("add {count} x {model}"),
            },
            WhatIf::Drain(x) => format!("drain {x}"),
            WhatIf::Quota(t, n) => format!("quota of {t} = {n}"),
            WhatIf::Weight(t, w) => format!("weight of {t} = {w}"),
        }
    }

    /// The change in words, for the instance it applies to: adding nodes in a rack that the
    /// instance does not have says that it creates the rack.
    pub fn text_in(&self, raw: &RawInstance) -> String {
        match self {
            WhatIf::AddNodes {
                model,
                count,
                rack: Some(r),
            } if !raw.nodes.iter().any(|n| n.rack.as_ref() == Some(r)) => {
                format!(
                    "add {count} x {model} in rack {r} (creates rack {r}: no node is in it yet)"
                )
            }
            _ => self.text(),
        }
    }
}

fn bad(source: &str, msg: String) -> Error {
    Error::input(source, "", msg)
}

fn tenant_mut<'a>(raw: &'a mut RawInstance, name: &str, source: &str) -> Result<&'a mut RawTenant> {
    if raw.tenants.is_none() {
        // Absent tenants mean one tenant "default", weight 1.
        raw.tenants = Some(vec![RawTenant {
            name: "default".into(),
            weight: 1.0,
            quota: None,
        }]);
    }
    let tenants = raw.tenants.as_mut().expect("set above");
    let known: Vec<String> = tenants.iter().map(|t| t.name.clone()).collect();
    tenants.iter_mut().find(|t| t.name == name).ok_or_else(|| {
        bad(
            source,
            format!("no tenant {name:?}; tenants: {}", known.join(", ")),
        )
    })
}

/// A node's rack or pod as the instance reads it: an empty name is the same as none.
fn named(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// Add `count` nodes of `model` to `rack` (none: the unnamed rack of the nodes that give no
/// rack), in the pod that rack already has, if any: a rack belongs to one pod.
fn add_nodes(raw: &mut RawInstance, model: &str, count: u32, rack: Option<&str>) {
    let rack = named(rack);
    let pod = raw
        .nodes
        .iter()
        .find(|n| named(n.rack.as_deref()) == rack)
        .and_then(|n| named(n.pod.as_deref()))
        .map(str::to_string);
    let names: BTreeSet<String> = raw.nodes.iter().map(|n| n.name.clone()).collect();
    let mut i = 0;
    for _ in 0..count {
        let name = loop {
            i += 1;
            let name = format!("{model}-new-{i}");
            if !names.contains(&name) {
                break name;
            }
        };
        raw.nodes.push(RawNode {
            name,
            model: Some(model.to_string()),
            rack: rack.map(str::to_string),
            pod: pod.clone(),
            ..Default::default()
        });
    }
}

/// The instance with the changes applied.
pub fn apply(
    raw: &RawInstance,
    changes: &[WhatIf],
    lib: &ModelLibrary,
    source: &str,
) -> Result<RawInstance> {
    let mut raw = raw.clone();
    for c in changes {
        match c {
            WhatIf::AddNodes { model, count, rack } => {
                if !lib.hardware.contains_key(model) {
                    let known: Vec<&str> = lib.hardware.keys().map(|k| k.as_str()).collect();
                    return Err(bad(
                        source,
                        format!("no hardware model {model:?}; known: {}", known.join(", ")),
                    ));
                }
                add_nodes(&mut raw, model, *count, rack.as_deref());
            }
            WhatIf::Drain(target) => {
                let nodes: Vec<usize> = raw
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| &n.name == target || n.rack.as_ref() == Some(target))
                    .map(|(i, _)| i)
                    .collect();
                if nodes.is_empty() {
                    return Err(bad(source, format!("no node or rack named {target:?}")));
                }
                for &i in &nodes {
                    let name = raw.nodes[i].name.clone();
                    let gpus = match (raw.nodes[i].gpus, &raw.nodes[i].model) {
                        (Some(g), _) => g,
                        (None, Some(m)) => lib.hardware.get(m).map_or(0, |h| h.gpus as u64),
                        (None, None) => 0,
                    };
                    let held: BTreeSet<u64> = raw
                        .running
                        .iter()
                        .filter_map(|r| r.gpus.get(&name))
                        .flatten()
                        .copied()
                        .collect();
                    for r in raw.running.iter_mut() {
                        if r.gpus.contains_key(&name) {
                            r.preemptible = false;
                        }
                    }
                    let mut down: BTreeSet<u64> = raw.nodes[i].down.iter().copied().collect();
                    down.extend((0..gpus).filter(|g| !held.contains(g)));
                    raw.nodes[i].down = down.into_iter().collect();
                }
            }
            WhatIf::Quota(t, n) => tenant_mut(&mut raw, t, source)?.quota = Some(*n),
            WhatIf::Weight(t, w) => tenant_mut(&mut raw, t, source)?.weight = *w,
        }
    }
    Ok(raw)
}

/// Numbers of one plan.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Side {
    /// optimal / feasible / fallback.
    pub status: String,
    /// Objective.
    pub objective: f64,
    /// Gap, where a bound exists.
    pub gap: Option<f64>,
    /// Usable GPUs.
    pub gpus_usable: u32,
    /// GPUs busy after the round.
    pub gpus_busy: u32,
    /// Jobs started.
    pub started: Vec<String>,
    /// Jobs preempted.
    pub preempted: Vec<String>,
    /// GPUs each tenant holds after the round.
    pub tenant_gpus: BTreeMap<String, f64>,
    /// Each tenant's share of the busy GPUs after the round.
    pub tenant_share: BTreeMap<String, f64>,
}

/// What changed.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// The changes, in words.
    pub changes: Vec<String>,
    /// The plan of the instance as given.
    pub before: Side,
    /// The plan of the changed instance.
    pub after: Side,
    /// Jobs started only with the changes.
    pub newly_started: Vec<String>,
    /// Jobs started without the changes but not with them.
    pub no_longer_started: Vec<String>,
    /// Running jobs preempted only with the changes.
    pub newly_preempted: Vec<String>,
    /// Running jobs preempted without the changes but not with them.
    pub no_longer_preempted: Vec<String>,
}

fn side(round: &Round) -> Side {
    let inst = &round.inst;
    let a = round.assignment();
    let after = round.after();
    let usable = inst.gpus_usable();
    let busy = usable - after.free.iter().sum::<u32>().min(usable);
    let obj = evaluate(inst, &round.topo, a).total();
    let gap = round
        .outcome
        .bound
        .map(|b| (b - round.outcome.objective) / round.outcome.objective.abs().max(1.0));
    let mut tenant_gpus = BTreeMap::new();
    let mut tenant_share = BTreeMap::new();
    let held_total: f64 = after.held.iter().sum();
    for (t, tenant) in inst.tenants.iter().enumerate() {
        tenant_gpus.insert(tenant.name.clone(), round6(after.held[t]));
        tenant_share.insert(
            tenant.name.clone(),
            round6(if held_total > 0.0 {
                after.held[t] / held_total
            } else {
                0.0
            }),
        );
    }
    Side {
        status: format!("{:?}", round.outcome.status).to_lowercase(),
        objective: round6(obj),
        gap: gap.map(round6),
        gpus_usable: usable,
        gpus_busy: busy,
        started: a
            .placed
            .keys()
            .map(|&j| inst.pending[j].id.clone())
            .collect(),
        preempted: a
            .preempted
            .iter()
            .map(|&k| inst.running[k].id.clone())
            .collect(),
        tenant_gpus,
        tenant_share,
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Plan the instance as given and with the changes, and compare.
pub fn whatif(
    raw: &RawInstance,
    changes: &[WhatIf],
    lib: &ModelLibrary,
    source: &str,
) -> Result<Diff> {
    let changed = apply(raw, changes, lib, source)?;
    let base = Round::plan(raw, lib, source)?;
    let new = Round::plan(
        &changed,
        lib,
        &format!("{source} (with the what-if changes)"),
    )?;
    let before = side(&base);
    let after = side(&new);
    let minus = |a: &[String], b: &[String]| -> Vec<String> {
        let b: BTreeSet<&String> = b.iter().collect();
        let mut v: Vec<String> = a.iter().filter(|x| !b.contains(x)).cloned().collect();
        v.sort();
        v
    };
    Ok(Diff {
        changes: changes.iter().map(|c| c.text_in(raw)).collect(),
        newly_started: minus(&after.started, &before.started),
        no_longer_started: minus(&before.started, &after.started),
        newly_preempted: minus(&after.preempted, &before.preempted),
        no_longer_preempted: minus(&before.preempted, &after.preempted),
        before,
        after,
    })
}
