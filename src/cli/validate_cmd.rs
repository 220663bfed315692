//! `gangplan validate`.

use super::{exit, Failure};
use clap::Args;
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::load_instance_file;
use gangplan::instance::Instance;
use gangplan::objective::evaluate;
use gangplan::plan::{assignment_of, validate::violations, Plan};
use gangplan::topology::Topology;
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
        println!("{}", objective_line(&inst, &plan));
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

/// The valid plan's objective under this instance's policy, term by term (a plan made by
/// another scheduler scores on the same scale as gangplan's own).
fn objective_line(inst: &Instance, plan: &Plan) -> String {
    let Some(a) = assignment_of(inst, plan) else {
        // A valid plan names only the instance's jobs and nodes.
        return "objective: not computed (the plan names a job or node the instance lacks)".into();
    };
    let t = evaluate(inst, &Topology::new(inst), &a);
    format!(
        "objective {:.4} = value {:.4} - spread {:.4} - preemption {:.4} - fairness {:.4} - packing {:.4} - fragmentation {:.4}",
        t.total(),
        t.value,
        t.spread,
        t.preemption,
        t.fairness,
        t.packing,
        t.fragmentation
    )
}
