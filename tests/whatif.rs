//! Golden cases for `whatif`, one per kind of change (expected outcomes hand-checked in the
//! comments of each instance under instances/explain/), and the CLI's exit codes.

use gangplan::explain::whatif::{apply, whatif, WhatIf};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::raw::RawInstance;
use gangplan::instance::validate::validate;
use std::path::PathBuf;
use std::process::Command;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("instances/explain")
        .join(format!("{name}.yaml"))
}

fn raw(name: &str) -> RawInstance {
    let p = path(name);
    parse_document(&read_document(&p).unwrap(), &p.display().to_string()).unwrap()
}

#[test]
fn adding_a_node_starts_the_waiting_job() {
    let lib = ModelLibrary::builtin();
    let change = WhatIf::parse_add_nodes("dgx-h100:1@rA").unwrap();
    let d = whatif(&raw("whatif-add-nodes"), &[change], &lib, "t").unwrap();
    assert_eq!(d.newly_started, ["next"]);
    assert!(d.no_longer_started.is_empty());
    assert_eq!((d.before.gpus_usable, d.after.gpus_usable), (8, 16));
    assert_eq!((d.before.gpus_busy, d.after.gpus_busy), (8, 16));
}

#[test]
fn draining_a_rack_stops_the_job_that_would_start_there() {
    let lib = ModelLibrary::builtin();
    let d = whatif(
        &raw("whatif-drain"),
        &[WhatIf::Drain("rB".into())],
        &lib,
        "t",
    )
    .unwrap();
    assert_eq!(d.no_longer_started, ["small"]);
    assert!(d.newly_started.is_empty());
    assert_eq!((d.before.gpus_usable, d.after.gpus_usable), (16, 8));
    // The drained node's held GPUs stay; its free ones go down.
    let changed = apply(
        &raw("whatif-drain"),
        &[WhatIf::Drain("a1".into())],
        &lib,
        "t",
    )
    .unwrap();
    let inst = validate(&changed, &lib).unwrap();
    assert_eq!(inst.gpus_usable(), 16);
}

#[test]
fn raising_a_quota_starts_the_capped_job() {
    let lib = ModelLibrary::builtin();
    let change = WhatIf::parse_quota("A=24").unwrap();
    let d = whatif(&raw("reason-quota"), &[change], &lib, "t").unwrap();
    assert_eq!(d.newly_started, ["a-job"]);
    assert_eq!(d.before.tenant_gpus["A"], 12.0);
    assert_eq!(d.after.tenant_gpus["A"], 20.0);
}

#[test]
fn a_weight_moves_the_free_node_to_the_heavier_tenant() {
    let lib = ModelLibrary::builtin();
    let change = WhatIf::parse_weight("A=10").unwrap();
    let d = whatif(&raw("whatif-weight"), &[change], &lib, "t").unwrap();
    assert_eq!(d.before.started, ["b-job"]);
    assert_eq!(d.newly_started, ["a-job"]);
    assert_eq!(d.no_longer_started, ["b-job"]);
    assert_eq!(d.after.tenant_share["A"], 1.0);
    assert_eq!(d.before.tenant_share["A"], 0.5);
}

#[test]
fn bad_changes_are_refused_with_their_reason() {
    let lib = ModelLibrary::builtin();
    assert!(WhatIf::parse_add_nodes("dgx-h100").is_err());
    assert!(WhatIf::parse_add_nodes("dgx-h100:0").is_err());
    assert!(WhatIf::parse_add_nodes("dgx-h100:2@").is_err());
    assert!(WhatIf::parse_quota("A=-1").is_err());
    assert!(WhatIf::parse_weight("A=0").is_err());
    let r = raw("reason-quota");
    let e = apply(&r, &[WhatIf::Quota("Z".into(), 3)], &lib, "t").unwrap_err();
    assert!(
        e.to_string().contains("no tenant \"Z\"; tenants: A, B"),
        "{e}"
    );
    let e = apply(&r, &[WhatIf::Drain("nowhere".into())], &lib, "t").unwrap_err();
    assert!(e.to_string().contains("no node or rack named"), "{e}");
    let add = WhatIf::parse_add_nodes("tpu-v9:1").unwrap();
    let e = apply(&r, &[add], &lib, "t").unwrap_err();
    assert!(
        e.to_string().contains("no hardware model \"tpu-v9\""),
        "{e}"
    );
}

fn gangplan(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_whatif_exit_codes_and_formats() {
    let p = path("reason-quota");
    let p = p.to_str().unwrap();
    let (code, _, err) = gangplan(&["whatif", p]);
    assert_eq!(code, 2);
    assert!(err.contains("no change given"), "{err}");
    let (code, _, err) = gangplan(&["whatif", p, "--quota", "Z=3"]);
    assert_eq!(code, 2);
    assert!(err.contains("no tenant"), "{err}");
    let (code, _, _) = gangplan(&["whatif", p, "--quota", "A"]);
    assert_eq!(code, 2);
    let (code, _, _) = gangplan(&["whatif", p, "--add-nodes", "nope:1"]);
    assert_eq!(code, 2);
    let (code, out, _) = gangplan(&["whatif", p, "--quota", "A=24"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("jobs that start only with the change: a-job"),
        "{out}"
    );
    let (code, out, _) = gangplan(&["whatif", p, "--quota", "A=24", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["newly_started"][0], "a-job");
    assert_eq!(v["changes"][0], "quota of A = 24");
}
