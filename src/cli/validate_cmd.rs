//! `gangplan validate`.

use super::{exit, Failure};
use clap::Args;
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::load_instance_file;
use gangplan::plan::{validate::violations, Plan};
use std::path::PathBuf;

/// Check a plan against its instance.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Instance file.
    pub instance: PathBuf,
    /// Plan file (JSON or YAML).
    pub plan: PathBuf,
    /// Folder with extra hardware/ and workloads/ model files.
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
}

/// Run `validate`.
pub fn run(a: ValidateArgs) -> Result<i32, Failure> {
    let models = match &a.models {
        Some(dir) => ModelLibrary::with_dir(dir).map_err(Failure::from_lib)?,
        None => ModelLibrary::builtin(),
    };
    let inst = load_instance_file(&a.instance, &models).map_err(Failure::from_lib)?;
    let text = read_document(&a.plan).map_err(Failure::from_lib)?;
    let plan: Plan =
        parse_document(&text, &a.plan.display().to_string()).map_err(Failure::from_lib)?;
    let v = violations(&inst, &plan);
    if v.is_empty() {
        println!(
            "plan is valid: {} placed, {} preempted, {} pending",
            plan.placements.len(),
            plan.preemptions.len(),
            plan.pending.len()
        );
        Ok(exit::OK)
    } else {
        // Listed like instance errors: the first hundred, then a count.
        let listed = v.len().min(gangplan::instance::validate::MAX_ISSUES);
        for line in &v[..listed] {
            println!("violation: {line}");
        }
        if v.len() > listed {
            println!("violation: ... and {} more", v.len() - listed);
        }
        eprintln!("gangplan: the plan breaks {} rule(s)", v.len());
        Ok(exit::PLAN_INVALID)
    }
}
