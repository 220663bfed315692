//! Solvers that misbehave, shared by the test files that inject them in place of HiGHS.

#![allow(dead_code)] // each test file that injects them uses some of them

use gangplan::model::MipModel;
use gangplan::solve::{BackendResult, BackendSettings, BackendStatus, MipBackend};
use std::time::Duration;

/// Ignores its time limit: answers the start after the given time (HiGHS may overrun its own
/// limit, its presolve in particular).
pub struct Overruns(pub Duration);
impl MipBackend for Overruns {
    fn solve(
        &self,
        _: MipModel,
        start: &[f64],
        _: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        std::thread::sleep(self.0);
        Ok(BackendResult {
            columns: start.to_vec(),
            status: BackendStatus::Optimal,
            dual_bound: None,
        })
    }
}

/// Panics inside the solve.
pub struct Panics;
impl MipBackend for Panics {
    fn solve(
        &self,
        _: MipModel,
        _: &[f64],
        _: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        panic!("injected panic inside the solver")
    }
}
