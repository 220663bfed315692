//! Random placement: jobs in arrival order, each on a uniformly chosen feasible node (and GPU,
//! for a sharer). Seeded: the seed, the round's job counts and ids fix the stream, so the same
//! instance and seed give the same plan.

use super::baseline::{run_pass, Baseline, Cutoff};
use crate::assignment::Assignment;
use crate::instance::Instance;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The seeded random planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomFit {
    /// Seed.
    pub seed: u64,
}

fn mix(seed: u64, inst: &Instance) -> u64 {
    // FNV-1a over the round's identity: counts and pending ids.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h ^= x as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(&(inst.running.len() as u64).to_le_bytes());
    for j in &inst.pending {
        eat(j.id.as_bytes());
    }
    h
}

impl Baseline for RandomFit {
    const NAME: &'static str = "random";

    fn plan_cut(
        &self,
        &super::RoundContext { inst, topo, .. }: &super::RoundContext,
        cut: &mut Cutoff,
    ) -> Assignment {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, inst));
        let order: Vec<usize> = (0..inst.pending.len()).collect();
        run_pass(
            inst,
            topo,
            &order,
            &mut |_, o| Some(rng.gen_range(0..o.len())),
            cut,
        )
    }
}
