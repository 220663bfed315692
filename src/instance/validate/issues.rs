//! The issues one validation collects, capped at [`MAX_ISSUES`], and the checks several
//! sections share (names, resources, priorities, GPU shares).

use super::limits;
use crate::error::InputIssue;
use crate::instance::text::quoted;
use crate::units::MILLI_PER_GPU;

/// Most issues listed for one instance; the rest are counted in a final issue.
pub const MAX_ISSUES: usize = 100;

/// Issues found so far, and how many more were found past [`MAX_ISSUES`].
#[derive(Debug, Default)]
pub struct Issues {
    listed: Vec<InputIssue>,
    unlisted: usize,
}

impl Issues {
    /// Record an issue at a field path.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        if self.listed.len() >= MAX_ISSUES {
            self.unlisted += 1;
            return;
        }
        self.listed.push(InputIssue {
            path: path.into(),
            message: message.into(),
            line: None,
        });
    }

    /// Issues found so far, listed or not.
    pub fn count(&self) -> usize {
        self.listed.len() + self.unlisted
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The listed issues alone (for a refusal before the count matters).
    pub fn listed(self) -> Vec<InputIssue> {
        self.listed
    }

    /// The issues, with a last one counting those not listed.
    pub fn finish(mut self) -> Vec<InputIssue> {
        if self.unlisted > 0 {
            self.listed.push(InputIssue {
                path: String::new(),
                message: format!(
                    "{} more issue(s) not listed; fix the ones above first",
                    self.unlisted
                ),
                line: None,
            });
        }
        self.listed
    }

    /// The id of the job at `job` (`pending[3]`, `running[0]`): a valid name, and not used by
    /// an earlier job of either list (`ids` holds the ids seen so far).
    pub fn job_id(&mut self, job: &str, id: &str, ids: &mut std::collections::BTreeSet<String>) {
        self.name(&format!("{job}.id"), id);
        if !ids.insert(id.to_string()) {
            self.push(
                format!("{job}.id"),
                format!(
                    "{} is used by an earlier job; job ids must be unique across running and pending",
                    crate::instance::text::quoted(id)
                ),
            );
        }
    }

    /// A name or id: non-empty, at most [`limits::MAX_NAME_LEN`] long, printable.
    pub fn name(&mut self, path: &str, value: &str) {
        if value.is_empty() {
            self.push(path, "is empty; expected a non-empty name");
        } else if value.len() > limits::MAX_NAME_LEN {
            self.push(
                path,
                format!(
                    "is {} characters long; the limit is {}",
                    value.len(),
                    limits::MAX_NAME_LEN
                ),
            );
        } else if value.chars().any(|c| c.is_control()) {
            self.push(
                path,
                format!(
                    "{} contains control characters; use printable characters",
                    quoted(value)
                ),
            );
        }
    }

    /// A CPU or memory amount: at most [`limits::MAX_RESOURCE`]; `None` when over it.
    pub fn resource(&mut self, path: &str, v: Option<u64>) -> Option<u64> {
        match v {
            Some(x) if x > limits::MAX_RESOURCE => {
                self.push(
                    path,
                    format!("is {x}; expected at most {}", limits::MAX_RESOURCE),
                );
                None
            }
            other => other,
        }
    }

    /// A duration in seconds, 0..=[`limits::MAX_TIME_S`] (`ends_in`, `time_limit`); absent
    /// stays absent.
    pub fn seconds(&mut self, path: &str, v: Option<f64>) -> Option<f64> {
        match v {
            Some(x) if x.is_finite() && (0.0..=limits::MAX_TIME_S).contains(&x) => Some(x),
            Some(x) => {
                self.push(
                    path,
                    format!(
                        "is {x}; expected seconds in 0..={:e} (omit it when unknown or unlimited)",
                        limits::MAX_TIME_S
                    ),
                );
                None
            }
            None => None,
        }
    }

    /// A priority within +-[`limits::MAX_PRIORITY`].
    pub fn priority(&mut self, path: &str, p: i64) {
        if p.abs() > limits::MAX_PRIORITY {
            self.push(
                path,
                format!(
                    "is {p}; expected a priority within +-{}",
                    limits::MAX_PRIORITY
                ),
            );
        }
    }

    /// A share of one GPU (`gpu_milli`): 1 ..= 999 thousandths; `None` when absent or bad.
    pub fn milli(&mut self, path: &str, m: Option<u64>) -> Option<u32> {
        match m {
            Some(x) if (1..u64::from(MILLI_PER_GPU)).contains(&x) => Some(x as u32),
            Some(x) => {
                self.push(
                    path,
                    format!(
                        "is {x}; expected 1..={} thousandths of one GPU (omit it for whole GPUs)",
                        MILLI_PER_GPU - 1
                    ),
                );
                None
            }
            None => None,
        }
    }
}
