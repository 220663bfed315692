//! Typed errors of the library. The binary maps each kind to an exit code.

use thiserror::Error;

/// One problem found in an input file: where it is, what is wrong, what would be right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputIssue {
    /// Field path, e.g. `pending[3].gpus`; empty for the whole document.
    pub path: String,
    /// What is wrong and what would be right, in one sentence.
    pub message: String,
    /// 1-based line in the source document, where the parser gives one.
    pub line: Option<usize>,
}

impl std::fmt::Display for InputIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.path.is_empty() {
            "document"
        } else {
            &self.path
        };
        match self.line {
            Some(line) => write!(f, "{at} (line {line}): {}", self.message),
            None => write!(f, "{at}: {}", self.message),
        }
    }
}

/// Every error the library returns.
#[derive(Debug, Error)]
pub enum Error {
    /// The instance (or plan, or model) file is not valid; each issue names a field.
    #[error("{source_name}: invalid input:\n{}", issues.iter().map(|i| format!("  - {i}")).collect::<Vec<_>>().join("\n"))]
    Input {
        /// File name or description of the document.
        source_name: String,
        /// What is wrong, field by field.
        issues: Vec<InputIssue>,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The plan broke a rule of the SPEC; this is a bug in a planner.
    #[error("plan violates {} rule(s):\n{}", violations.len(), violations.iter().map(|v| format!("  - {v}")).collect::<Vec<_>>().join("\n"))]
    InvalidPlan {
        /// Each rule broken, in words.
        violations: Vec<String>,
    },
    /// The solver failed in a way that left no plan (callers fall back to greedy).
    #[error("solver: {0}")]
    Solver(String),
    /// A solve that has no fallback did not finish within the time it was given.
    #[error("{0}")]
    TimeLimit(String),
}

impl Error {
    /// A single-issue input error.
    pub fn input(source_name: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Input {
            source_name: source_name.to_string(),
            issues: vec![InputIssue {
                path: path.into(),
                message: message.into(),
                line: None,
            }],
        }
    }
}

/// Result with the library's error.
pub type Result<T> = std::result::Result<T, Error>;
