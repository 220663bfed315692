//! The `tenants` section, and the tenant each job names: a listed one, or `default` (added
//! when a job names no tenant or names `default`, and it is not listed).

use super::issues::Issues;
use super::limits;
use crate::instance::raw::RawTenant;
use crate::instance::text::quoted;
use crate::instance::Tenant;
use std::collections::BTreeMap;

/// The tenants checked so far, and their indices by name.
#[derive(Debug)]
pub struct TenantTable {
    /// Tenants, listed ones first in file order.
    pub tenants: Vec<Tenant>,
    by_name: BTreeMap<String, usize>,
}

/// Check the listed tenants (`None`: no `tenants:` section).
pub fn check(is: &mut Issues, raw: Option<&[RawTenant]>) -> TenantTable {
    let mut table = TenantTable {
        tenants: Vec::new(),
        by_name: BTreeMap::new(),
    };
    let Some(ts) = raw else {
        return table;
    };
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
        if !(t.weight.is_finite() && t.weight > 0.0 && t.weight <= limits::MAX_TENANT_WEIGHT) {
            is.push(
                format!("{p}.weight"),
                format!(
                    "is {}; expected a number > 0 and <= {:e}",
                    t.weight,
                    limits::MAX_TENANT_WEIGHT
                ),
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
        if table.by_name.insert(t.name.clone(), i).is_some() {
            is.push(
                format!("{p}.name"),
                format!(
                    "{} is used by an earlier tenant; tenant names must be unique",
                    quoted(&t.name)
                ),
            );
        }
        table.tenants.push(Tenant {
            name: t.name.clone(),
            weight: t.weight,
            quota: t.quota.map(|q| q as f64),
        });
    }
    table
}

impl TenantTable {
    /// The tenant a job at `path` names (`None`: `default`); an issue and 0 when it is not
    /// listed.
    pub fn of(&mut self, is: &mut Issues, path: String, name: &Option<String>) -> usize {
        let n = name.clone().unwrap_or_else(|| "default".to_string());
        if let Some(&t) = self.by_name.get(&n) {
            return t;
        }
        // Naming `default` is the same as naming no tenant, whatever the order of the jobs.
        if n == "default" {
            self.tenants.push(Tenant {
                name: n.clone(),
                weight: 1.0,
                quota: None,
            });
            self.by_name.insert(n, self.tenants.len() - 1);
            return self.tenants.len() - 1;
        }
        let known: Vec<String> = self.by_name.keys().cloned().collect();
        is.push(
            path,
            format!(
                "{} is not a listed tenant; expected one of {}",
                quoted(&n),
                if known.is_empty() {
                    "(none listed: add a tenants: section)".to_string()
                } else {
                    known.join(", ")
                }
            ),
        );
        0
    }
}
