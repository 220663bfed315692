//! Jobs and the reserved nodes ([`crate::instance::reservation`]): a reserved node takes its
//! reserved job, and another job only where its time limit ends it by the reservation's
//! start. The GPU rows of [`super::capacity`] count every node of a type for every class, so
//! without these rows the relaxation starts jobs on nodes held for a blocked gang.
//!
//! Each class of whole GPUs carries the reservations whose nodes its jobs may use, as a bit
//! mask `open_c` (a class key, [`super::classes`]). For each type t and each mask m of a
//! class of t:
//!
//! ```text
//! sum_{c on t: open_c within m} g_c x_ct <= sum_{n of t open to m} (f_n + sum_{k on n} g_kn p_k)
//! ```
//!
//! where a node is open to m when no reservation holds it or one in m does, f_n are its free
//! whole GPUs and g_kn p_k what a preempted victim gives back there. A job of such a class
//! lands on nodes open to its own mask, so on nodes open to m, on GPUs free now or held by
//! a victim it preempts: every real placement satisfies the row. Sharers are left out (their
//! GPUs are shares). A row is added only where some node of t offering GPUs is closed to m
//! (elsewhere the capacity rows hold it already).

use super::supply::NodeOffer;
use crate::instance::Instance;
use crate::model::MipModel;
use good_lp::{Expression, Variable};
use std::collections::BTreeSet;

/// Add the rows of every type (`offers`: each type's nodes; `users`: per type, each class's
/// mask, GPUs per job and x_ct).
pub fn add(
    inst: &Instance,
    offers: &[Vec<NodeOffer>],
    users: &[Vec<(u64, f64, Variable)>],
    m: &mut MipModel,
) {
    if inst.reservations.is_empty() {
        return;
    }
    for (offers, users) in offers.iter().zip(users) {
        let masks: BTreeSet<u64> = users.iter().map(|u| u.0).collect();
        let held: Vec<u64> = offers
            .iter()
            .map(|o| inst.reservations_holding(o.node))
            .collect();
        for mask in masks {
            let open = |h: u64| h & !mask == 0;
            let offering = |o: &NodeOffer| o.free > 0 || !o.victims.is_empty();
            let closed_somewhere = offers
                .iter()
                .zip(&held)
                .any(|(o, &h)| offering(o) && !open(h));
            if !closed_somewhere {
                continue;
            }
            let mut room = Expression::from(0.0);
            for (o, _) in offers.iter().zip(&held).filter(|(_, &h)| open(h)) {
                room += o.free as f64;
                for &(g, p) in &o.victims {
                    room.add_mul(g as f64, p);
                }
            }
            let mut asked = Expression::from(0.0);
            for &(_, gpus, x) in users.iter().filter(|u| u.0 & !mask == 0) {
                asked.add_mul(gpus, x);
            }
            m.constraints.push(asked.leq(room));
        }
    }
}
