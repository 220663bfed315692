//! The `policy` section: time limit, MIP gap, objective weights, preemption, seed and
//! reservations, with the defaults of [`Policy`] for what is left out.

use super::issues::Issues;
use crate::instance::policy::{check_reservations, check_time_limit, Policy, Weights};
use crate::instance::raw::RawPolicy;

/// The policy, defaults filled in (a bad value keeps its default, with an issue).
pub fn check(is: &mut Issues, raw: Option<&RawPolicy>) -> Policy {
    let mut policy = Policy::default();
    let Some(rp) = raw else {
        return policy;
    };
    if let Some(t) = rp.time_limit {
        match check_time_limit(t) {
            Ok(t) => policy.time_limit = t,
            Err(e) => is.push("policy.time_limit", e.to_string()),
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
    if let Some(n) = rp.reservations {
        match check_reservations(n) {
            Ok(n) => policy.reservations = n,
            Err(e) => is.push("policy.reservations", e.to_string()),
        }
    }
    policy.preemption = rp.preemption.unwrap_or(true);
    policy.seed = rp.seed.unwrap_or(0);
    policy
}
