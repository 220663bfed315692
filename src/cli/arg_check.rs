//! Checks of command-line values that name something in the instance (a job, a tenant, a node
//! or rack, a hardware model), so that a bad value is reported against the flag or argument
//! that carries it, with the names that would work, rather than against the instance file.

use super::{exit, Failure};
use gangplan::explain::whatif::WhatIf;
use gangplan::hardware::ModelLibrary;
use gangplan::instance::raw::RawInstance;
use std::collections::BTreeSet;

/// Most names listed in a message.
const MAX_NAMES: usize = 20;

/// Up to [`MAX_NAMES`] names, comma separated, `...` when there are more.
fn name_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let all: Vec<&str> = names.into_iter().collect();
    let mut s = all
        .iter()
        .take(MAX_NAMES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if all.len() > MAX_NAMES {
        s.push_str(", ...");
    }
    if s.is_empty() {
        s.push_str("(none)");
    }
    s
}

fn refuse(msg: String) -> Failure {
    Failure::new(exit::BAD_INPUT, anyhow::anyhow!(msg))
}

/// The JOB argument of `explain` must name a pending job of the instance at `source`.
pub fn pending_job(raw: &RawInstance, source: &str, job: &str) -> Result<(), Failure> {
    if raw.pending.iter().any(|p| p.id == job) {
        return Ok(());
    }
    let pending = name_list(raw.pending.iter().map(|p| p.id.as_str()));
    if raw.running.iter().any(|r| r.id == job) {
        return Err(refuse(format!(
            "JOB argument {job:?}: {job:?} is a running job of {source}; explain takes a \
             pending job: pass one of: {pending}"
        )));
    }
    Err(refuse(format!(
        "JOB argument {job:?}: no pending job {job:?} in {source}; pass one of: {pending}"
    )))
}

/// Tenant names of the instance (one tenant `default` when the file has none).
fn tenant_names(raw: &RawInstance) -> Vec<&str> {
    match &raw.tenants {
        Some(ts) => ts.iter().map(|t| t.name.as_str()).collect(),
        None => vec!["default"],
    }
}

/// Every change of `whatif` must name a tenant, node, rack or hardware model that exists.
pub fn whatif_changes(
    raw: &RawInstance,
    lib: &ModelLibrary,
    source: &str,
    changes: &[WhatIf],
) -> Result<(), Failure> {
    let tenants = tenant_names(raw);
    let racks: BTreeSet<&str> = raw.nodes.iter().filter_map(|n| n.rack.as_deref()).collect();
    for c in changes {
        match c {
            WhatIf::AddNodes { model, count, rack } if !lib.hardware.contains_key(model) => {
                let at = rack.as_ref().map_or(String::new(), |r| format!("@{r}"));
                return Err(refuse(format!(
                    "--add-nodes {model}:{count}{at}: no hardware model {model:?}; \
                     use one of: {}",
                    name_list(lib.hardware.keys().map(|k| k.as_str()))
                )));
            }
            WhatIf::Drain(target)
                if !raw.nodes.iter().any(|n| &n.name == target) && !racks.contains(&**target) =>
            {
                return Err(refuse(format!(
                    "--drain {target}: no node or rack named {target:?} in {source}; \
                     pass a node ({}) or a rack ({})",
                    name_list(raw.nodes.iter().map(|n| n.name.as_str())),
                    name_list(racks.iter().copied())
                )));
            }
            WhatIf::Quota(t, n) if !tenants.contains(&t.as_str()) => {
                return Err(refuse(format!(
                    "--quota {t}={n}: no tenant {t:?} in {source}; use one of: {}",
                    name_list(tenants.iter().copied())
                )));
            }
            WhatIf::Weight(t, w) if !tenants.contains(&t.as_str()) => {
                return Err(refuse(format!(
                    "--weight {t}={w}: no tenant {t:?} in {source}; use one of: {}",
                    name_list(tenants.iter().copied())
                )));
            }
            _ => {}
        }
    }
    Ok(())
}
