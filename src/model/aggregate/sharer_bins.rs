//! Sharers packed into GPUs, per type, by dual-feasible functions. The GPU rows of
//! [`super::capacity`] count a sharer of share m (milli) as m / 1000 of a GPU, so the
//! relaxation may put three sharers of 300 and a tenth of a fourth on one GPU. For k >= 1
//! let
//!
//! ```text
//! u_k(x) = x                       where (k + 1) x is an integer
//!        = floor((k + 1) x) / k    otherwise               (x = m / 1000 in [0, 1])
//! ```
//!
//! (Fekete and Schepers): whatever shares x_i one GPU holds, sum x_i <= 1 gives
//! sum u_k(x_i) <= 1 (where some (k + 1) x_i is fractional the floors add up to at most k;
//! otherwise u_k(x_i) = x_i), and u_k(1) = 1. So the sharers that start on a GPU with room r
//! count at most best_k(r), the largest sum of u_k over the waiting sharers' shares (each any
//! number of times) that fit in r, and those on a free GPU at most 1 (as one whole GPU). For
//! every type t and every k of [`LEVELS`]:
//!
//! ```text
//! sum_{c on t} u_k(eq_c) x_ct <= free_t + sum_{shared GPUs s of t} best_k(room_s)
//!                                + sum_{k' victim on t} max(g_k't, 1) p_k'
//! ```
//!
//! (eq_c >= 1 for classes of whole GPUs, which count their GPUs as in the GPU rows; a victim
//! holding whole GPUs frees g_k't of them; a victim sharer frees at most what its GPU holds,
//! 1.) A row is added only where some class of the type counts more than in the GPU row
//! (u_k(eq_c) > eq_c): with shares of 300 milli, u_3 counts each a third of a GPU.

use super::classes::Demand;
use super::supply::Supply;
use crate::instance::Instance;
use crate::model::MipModel;
use crate::units::MILLI_PER_GPU;
use good_lp::Expression;

/// The functions tried: u_1 (shares above half a GPU count whole) to u_8.
pub const LEVELS: std::ops::RangeInclusive<u32> = 1..=8;

/// u_k of a share of `milli`, in GPUs.
pub fn dual_feasible(k: u32, milli: u32) -> f64 {
    let scaled = u64::from(k + 1) * u64::from(milli);
    let whole = u64::from(MILLI_PER_GPU);
    if scaled % whole == 0 {
        f64::from(milli) / f64::from(MILLI_PER_GPU)
    } else {
        (scaled / whole) as f64 / f64::from(k)
    }
}

/// u_k of a class's GPUs per job: whole GPUs count as they are, a share by u_k.
fn counted(k: u32, eq: f64) -> f64 {
    if eq >= 1.0 {
        eq
    } else {
        dual_feasible(k, (eq * f64::from(MILLI_PER_GPU)).round() as u32)
    }
}

/// best_k(r) for every room r (milli) of one GPU: the largest sum of u_k over the waiting
/// sharers' shares, each any number of times, that fit in r.
fn best_fill(k: u32, shares: &[u32]) -> Vec<f64> {
    let top = MILLI_PER_GPU as usize;
    let mut best = vec![0.0f64; top + 1];
    for r in 1..=top {
        best[r] = best[r - 1];
        for &m in shares.iter().filter(|&&m| m > 0 && m as usize <= r) {
            best[r] = best[r].max(best[r - m as usize] + dual_feasible(k, m));
        }
    }
    best
}

/// Add the rows of every type.
pub fn add(inst: &Instance, supply: &Supply, demand: &Demand, m: &mut MipModel) {
    let shares = super::supply::waiting_shares(inst);
    if shares.is_empty() {
        return;
    }
    for k in LEVELS {
        let best = best_fill(k, &shares);
        for (t, users) in demand.type_users.iter().enumerate() {
            let tighter = users.iter().any(|&(_, eq, _)| counted(k, eq) > eq + 1e-9);
            if !tighter {
                continue;
            }
            let mut lhs = Expression::from(0.0);
            for &(_, eq, x) in users {
                lhs.add_mul(counted(k, eq), x);
            }
            for &(_, g, p) in &supply.victims[t] {
                lhs.add_mul(-g.max(1.0), p);
            }
            let rooms: f64 = supply.shared_rooms[t]
                .iter()
                .map(|&r| best[r.min(MILLI_PER_GPU) as usize])
                .sum();
            m.constraints.push(lhs.leq(supply.free_whole[t] + rooms));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_count_as_the_functions_say() {
        // u_3: 250 milli is a quarter (4 x 0.25 is whole), 300 a third, 500 a half.
        assert_eq!(dual_feasible(3, 250), 0.25);
        assert!((dual_feasible(3, 300) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(dual_feasible(3, 500), 0.5);
        // u_1: above half a GPU counts whole, below it nothing, a half as a half.
        assert_eq!(dual_feasible(1, 600), 1.0);
        assert_eq!(dual_feasible(1, 400), 0.0);
        assert_eq!(dual_feasible(1, 500), 0.5);
        assert_eq!(dual_feasible(5, MILLI_PER_GPU), 1.0);
    }

    #[test]
    fn no_gpu_holds_more_than_one() {
        // Every multiset of shares that fits one GPU counts at most 1, for every function.
        let shares = [1, 90, 120, 200, 250, 300, 333, 334, 450, 500, 501, 700, 999];
        for k in LEVELS {
            let best = best_fill(k, &shares);
            assert!(best[MILLI_PER_GPU as usize] <= 1.0 + 1e-12, "u_{k}");
            assert!(
                best.windows(2).all(|w| w[0] <= w[1]),
                "u_{k} grows with the room"
            );
        }
        // Three sharers of 300 fill what u_3 counts of a GPU: 3 x 1/3.
        let best = best_fill(3, &[300]);
        assert!((best[MILLI_PER_GPU as usize] - 1.0).abs() < 1e-12);
        assert!((best[650] - 2.0 / 3.0).abs() < 1e-12);
    }
}
