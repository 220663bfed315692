//! `gangplan whatif`: apply changes to an instance, re-plan, print what changes.

use super::explain_cmd::{json, load_raw, TextOrJson};
use super::{exit, Failure};
use clap::Args;
use gangplan::explain::whatif::{whatif, Diff, WhatIf};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Re-plan an instance with changes and compare with the plan as given.
#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// Instance file (YAML or JSON).
    pub instance: PathBuf,
    /// Add COUNT nodes of hardware model MODEL, optionally in RACK (repeatable); in the rack's
    /// pod, and without @RACK in the unnamed rack of the nodes that give none.
    #[arg(long, value_name = "MODEL:COUNT[@RACK]", value_parser = WhatIf::parse_add_nodes)]
    pub add_nodes: Vec<WhatIf>,
    /// Drain a node, or every node of a rack: no new work there (repeatable).
    #[arg(long, value_name = "NODE|RACK")]
    pub drain: Vec<String>,
    /// Set a tenant's quota in GPUs (repeatable).
    #[arg(long, value_name = "TENANT=N", value_parser = WhatIf::parse_quota)]
    pub quota: Vec<WhatIf>,
    /// Set a tenant's fair-share weight (repeatable).
    #[arg(long, value_name = "TENANT=W", value_parser = WhatIf::parse_weight)]
    pub weight: Vec<WhatIf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    pub format: TextOrJson,
    /// Seconds for each of the two planning solves; overrides policy.time_limit.
    #[arg(long, value_name = "S")]
    pub time_limit: Option<f64>,
    /// Folder with hardware/ and workloads/ model files, added to the shipped ones.
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
}

/// Run `whatif`.
pub fn run(a: WhatifArgs) -> Result<i32, Failure> {
    let mut changes: Vec<WhatIf> = a.add_nodes.clone();
    changes.extend(a.drain.iter().map(|d| WhatIf::Drain(d.clone())));
    changes.extend(a.quota.iter().cloned());
    changes.extend(a.weight.iter().cloned());
    if changes.is_empty() {
        return Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!(
                "no change given; pass --add-nodes, --drain, --quota or --weight (see --help)"
            ),
        ));
    }
    let (raw, lib) = load_raw(&a.instance, a.models.as_ref(), a.time_limit)?;
    let source = a.instance.display().to_string();
    super::arg_check::whatif_changes(&raw, &lib, &source, &changes)?;
    let d = whatif(&raw, &changes, &lib, &source).map_err(Failure::from_lib)?;
    let text = match a.format {
        TextOrJson::Json => json(&d)?,
        TextOrJson::Text => diff_text(&d),
    };
    print!("{text}");
    Ok(exit::OK)
}

fn diff_text(d: &Diff) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "what if: {}", d.changes.join("; "));
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(
        s,
        "jobs that start only with the change: {}",
        list(&d.newly_started)
    );
    let _ = writeln!(
        s,
        "jobs that no longer start:            {}",
        list(&d.no_longer_started)
    );
    let _ = writeln!(
        s,
        "newly preempted:                      {}",
        list(&d.newly_preempted)
    );
    let _ = writeln!(
        s,
        "no longer preempted:                  {}",
        list(&d.no_longer_preempted)
    );
    let (b, a) = (&d.before, &d.after);
    let _ = writeln!(s, "{:<24} {:>14} {:>14}", "", "as given", "with change");
    let _ = writeln!(s, "{:<24} {:>14} {:>14}", "status", b.status, a.status);
    let _ = writeln!(
        s,
        "{:<24} {:>14} {:>14}",
        "jobs started",
        b.started.len(),
        a.started.len()
    );
    let _ = writeln!(
        s,
        "{:<24} {:>14} {:>14}",
        "GPUs busy / usable",
        format!("{}/{}", b.gpus_busy, b.gpus_usable),
        format!("{}/{}", a.gpus_busy, a.gpus_usable)
    );
    let _ = writeln!(
        s,
        "{:<24} {:>14.4} {:>14.4}",
        "objective", b.objective, a.objective
    );
    let gap = |g: Option<f64>| g.map_or("-".to_string(), |g| format!("{:.4}%", 100.0 * g));
    let _ = writeln!(s, "{:<24} {:>14} {:>14}", "gap", gap(b.gap), gap(a.gap));
    for (t, share) in &a.tenant_share {
        let bs = b.tenant_share.get(t).copied().unwrap_or(0.0);
        let bg = b.tenant_gpus.get(t).copied().unwrap_or(0.0);
        let ag = a.tenant_gpus.get(t).copied().unwrap_or(0.0);
        let _ = writeln!(
            s,
            "{:<24} {:>14} {:>14}",
            format!("tenant {t} (GPUs, share)"),
            format!("{bg} {:.1}%", 100.0 * bs),
            format!("{ag} {:.1}%", 100.0 * share)
        );
    }
    s
}
