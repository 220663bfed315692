//! Hand-written rounds: parsing one and naming its jobs and nodes.
// Each test file that includes `common` uses some of these, not all.
#![allow(dead_code)]

use gangplan::hardware::ModelLibrary;
use gangplan::instance::{parse_instance, Instance};

/// The round a YAML text describes (it must be valid).
pub fn instance(yaml: &str) -> Instance {
    parse_instance(yaml, "test", &ModelLibrary::builtin()).unwrap()
}

/// The index of pending job `id`.
pub fn job(inst: &Instance, id: &str) -> usize {
    inst.pending.iter().position(|j| j.id == id).unwrap()
}

/// The index of node `name`.
pub fn node(inst: &Instance, name: &str) -> usize {
    inst.nodes.iter().position(|n| n.name == name).unwrap()
}

/// The round a YAML (or JSON) text describes, or why it is refused.
pub fn instance_result(text: &str) -> gangplan::Result<Instance> {
    parse_instance(text, "test", &ModelLibrary::builtin())
}
