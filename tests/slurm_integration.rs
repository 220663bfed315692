//! `gangplan slurm plan` against a real Slurm cluster: the local test cluster of
//! scripts/slurm-up.sh (4 nodes x 8 GPUs, racks rack1 = node[1-2] and rack2 = node[3-4],
//! partitions `gpu` (tier 1) and `urgent` (tier 10)), named by SLURM_CONF.
//!
//! Skipped only when GANGPLAN_SKIP_SLURM is set (it says so); without SLURM_CONF the test
//! fails and tells how to start the cluster. One test function runs the scenarios one after
//! the other (they share the cluster); each uses its own job names and state dir, waits by
//! polling with timeouts, and cancels its jobs at the end, also when it fails.

use gangplan::adapters::slurm::hostlist;
use gangplan::adapters::slurm::parse::parse_topology;
use gangplan::plan::Plan;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);

fn lab_available() -> bool {
    if std::env::var_os("GANGPLAN_SKIP_SLURM").is_some() {
        eprintln!("slurm_integration: SKIPPED because GANGPLAN_SKIP_SLURM is set");
        return false;
    }
    if std::env::var_os("SLURM_CONF").is_none() {
        panic!(
            "SLURM_CONF is not set, so there is no Slurm cluster to test against. Start the local \
             test cluster (as root) with `source scripts/slurm-up.sh` (stop it with \
             scripts/slurm-down.sh), or run scripts/test.sh, which does both; set \
             GANGPLAN_SKIP_SLURM=1 to skip these tests on purpose."
        );
    }
    true
}

fn sh(program: &str, args: &[&str]) -> String {
    let o = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        o.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Submitted jobs, cancelled when dropped (also when an assertion fails).
struct Jobs {
    ids: Vec<String>,
    tag: String,
}

impl Jobs {
    fn new(step: &str) -> Self {
        Jobs {
            ids: Vec::new(),
            tag: format!("gpit-{}-{step}", std::process::id()),
        }
    }

    /// Submit `sleep 600` as a job: `extra` are sbatch flags.
    fn submit(&mut self, name: &str, extra: &[&str]) -> String {
        self.submit_sleeping(name, 600, extra)
    }

    /// Submit `sleep SECONDS` as a job: `extra` are sbatch flags.
    fn submit_sleeping(&mut self, name: &str, seconds: u32, extra: &[&str]) -> String {
        let job_name = format!("{}-{name}", self.tag);
        let wrap = format!("sleep {seconds}");
        let mut args = vec![
            "--parsable",
            "-J",
            &job_name,
            "-o",
            "/dev/null",
            "-D",
            "/tmp",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--wrap", &wrap]);
        let out = sh("sbatch", &args);
        let id = out.split(';').next().unwrap_or_default().to_string();
        assert!(
            id.bytes().all(|b| b.is_ascii_digit()) && !id.is_empty(),
            "sbatch said {out:?}"
        );
        self.ids.push(id.clone());
        id
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        if self.ids.is_empty() {
            return;
        }
        let _ = Command::new("scancel").args(&self.ids).status();
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline && self.ids.iter().any(|id| is_active(&state_of(id).0)) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// (state, reason, nodes) of a job.
fn state_of(id: &str) -> (String, String, Vec<String>) {
    let out = Command::new("squeue")
        .args(["-h", "-t", "all", "-j", id, "-o", "%T|%r|%N"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut f = out.splitn(3, '|');
    let state = f.next().unwrap_or_default().to_string();
    let reason = f.next().unwrap_or_default().to_string();
    let nodes = hostlist::expand(f.next().unwrap_or_default()).unwrap_or_default();
    (state, reason, nodes)
}

fn is_active(state: &str) -> bool {
    matches!(
        state,
        "PENDING" | "RUNNING" | "COMPLETING" | "CONFIGURING" | "SUSPENDED" | "REQUEUED"
    )
}

fn wait_for(what: &str, ok: impl FnMut() -> bool) {
    wait_for_within(TIMEOUT, what, ok);
}

fn wait_for_within(timeout: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Longest wait for slurmctld to recompute effective usage: it does so every
/// `PriorityCalcPeriod`, 5 minutes by default (the lab keeps the default).
const USAGE_RECALC: Duration = Duration::from_secs(330);

fn wait_running(id: &str) -> Vec<String> {
    wait_for(&format!("job {id} to run (now {:?})", state_of(id)), || {
        state_of(id).0 == "RUNNING"
    });
    state_of(id).2
}

fn is_held(id: &str) -> bool {
    let (s, r, _) = state_of(id);
    s == "PENDING" && (r == "JobHeldUser" || r.contains("held"))
}

/// Run one round; returns (exit code, stdout, stderr).
fn round(state_dir: &Path, apply: bool) -> (i32, String, String) {
    round_with_path(state_dir, apply, None)
}

/// Run one round with `bin` first on PATH (to wrap a Slurm command).
fn round_with_path(state_dir: &Path, apply: bool, bin: Option<&Path>) -> (i32, String, String) {
    round_with_flags(state_dir, apply, bin, &[])
}

/// One `--apply` round with the gang reserved for released ahead (`--pre-release`).
fn pre_release_round_ok(state_dir: &Path) -> String {
    let (code, out, err) = round_with_flags(state_dir, true, None, &["--pre-release"]);
    assert_eq!(code, 0, "gangplan slurm plan failed:\n{out}\n{err}");
    out
}

/// Run one round with `bin` first on PATH and `flags` added.
fn round_with_flags(
    state_dir: &Path,
    apply: bool,
    bin: Option<&Path>,
    flags: &[&str],
) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gangplan"));
    if let Some(bin) = bin {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    cmd.args(["slurm", "plan", "--time-limit", "10", "--state-dir"])
        .arg(state_dir)
        .args(flags);
    if apply {
        cmd.arg("--apply");
    }
    let o = cmd.output().expect("run gangplan");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

fn round_ok(state_dir: &Path, apply: bool) -> String {
    let (code, out, err) = round(state_dir, apply);
    assert_eq!(code, 0, "gangplan slurm plan failed:\n{out}\n{err}");
    out
}

fn last_plan(state_dir: &Path) -> Plan {
    serde_json::from_str(&std::fs::read_to_string(state_dir.join("last-plan.json")).unwrap())
        .unwrap()
}

/// Scheduling changes the journal records as done (`outcome: ok`; notes not counted).
fn journal_lines(state_dir: &Path) -> usize {
    journal(state_dir)
        .iter()
        .filter(|e| e["outcome"] == "ok" && e["action"] != "note")
        .count()
}

/// Every journal line, parsed.
fn journal(state_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(state_dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("journal line {l:?}: {e}")))
        .collect()
}

/// Journal lines of `action` about `job` with `outcome`.
fn journaled(state_dir: &Path, action: &str, job: &str, outcome: &str) -> usize {
    journal(state_dir)
        .iter()
        .filter(|e| e["action"] == action && e["job"] == job && e["outcome"] == outcome)
        .count()
}

fn racks() -> BTreeMap<String, String> {
    parse_topology(&sh("scontrol", &["show", "topology"]))
        .unwrap()
        .into_iter()
        .map(|(n, p)| (n, p.rack.unwrap_or_default()))
        .collect()
}

fn assert_idle_cluster() {
    let active = sh("squeue", &["-h", "-o", "%i %j %T"]);
    assert!(
        active.is_empty(),
        "the test cluster must be idle before these tests; active jobs:\n{active}"
    );
}

/// The tests share the one cluster: they take turns.
static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lab for one test, or `None` when the lab tests are skipped on purpose
/// (`GANGPLAN_SKIP_SLURM`, said on stderr): this test's turn on it, with the cluster idle.
fn claim_lab() -> Option<std::sync::MutexGuard<'static, ()>> {
    if !lab_available() {
        return None;
    }
    let turn = lab_turn();
    assert_idle_cluster();
    Some(turn)
}

fn lab_turn() -> std::sync::MutexGuard<'static, ()> {
    LAB.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn slurm_cron_rounds() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    gangs_start_where_planned_and_a_second_round_changes_nothing();
    assert_idle_cluster();
    higher_priority_gang_preempts_by_requeue_hold();
    assert_idle_cluster();
    an_apply_that_fails_half_way_is_finished_by_the_next_round();
    assert_idle_cluster();
}

fn gangs_start_where_planned_and_a_second_round_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("gangs");
    let one = jobs.submit("one", &["--hold", "-N1", "--gres=gpu:4"]);
    let pair = jobs.submit("pair", &["--hold", "-N2", "--gres=gpu:8"]);

    // Dry run: prints the starts, changes nothing.
    let out = round_ok(state, false);
    assert!(out.contains(&format!("would: start job {one} on")), "{out}");
    assert!(
        out.contains(&format!("would: start job {pair} on")),
        "{out}"
    );
    assert!(
        is_held(&one) && is_held(&pair),
        "a dry run must not release anything"
    );
    assert_eq!(journal_lines(state), 0);

    // Apply: both start on exactly the planned nodes; the pair inside one rack.
    let out = round_ok(state, true);
    let plan = last_plan(state);
    let planned = |id: &str| -> Vec<String> {
        let p = plan
            .placements
            .iter()
            .find(|p| p.job == id)
            .unwrap_or_else(|| panic!("{id} not placed:\n{out}"));
        p.gpus.keys().cloned().collect()
    };
    assert_eq!(wait_running(&one), planned(&one));
    let pair_nodes = wait_running(&pair);
    assert_eq!(pair_nodes, planned(&pair));
    assert_eq!(pair_nodes.len(), 2);
    let racks = racks();
    assert_eq!(
        racks[&pair_nodes[0]], racks[&pair_nodes[1]],
        "2-node gang spans racks: {pair_nodes:?}"
    );
    assert_eq!(journal_lines(state), 2);

    // A gang larger than the free GPUs allow stays held (only one node has 8 free GPUs).
    let big = jobs.submit("big", &["--hold", "-N2", "--gres=gpu:8"]);
    let out = round_ok(state, true);
    assert!(out.contains(&format!("pending: job {big}:")), "{out}");
    assert!(last_plan(state).placements.is_empty());
    assert!(
        is_held(&big),
        "job {big} should stay held: {:?}",
        state_of(&big)
    );
    assert_eq!(journal_lines(state), 2, "nothing may change");

    // A second round with nothing new changes nothing; running jobs never move.
    let before: Vec<_> = [&one, &pair, &big].iter().map(|j| state_of(j)).collect();
    let out = round_ok(state, true);
    assert!(out.contains("0 to start, 0 to preempt"), "{out}");
    assert_eq!(journal_lines(state), 2);
    let after: Vec<_> = [&one, &pair, &big].iter().map(|j| state_of(j)).collect();
    assert_eq!(before, after);

    let metrics = std::fs::read_to_string(state.join("metrics.prom")).unwrap();
    assert!(metrics.contains("gangplan_jobs_placed 0\n"), "{metrics}");
    assert!(metrics.contains("gangplan_gpus_busy 20\n"), "{metrics}");
}

fn higher_priority_gang_preempts_by_requeue_hold() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("preempt");
    // Fill the cluster with preemptible work Slurm starts by itself.
    let mut victims = Vec::new();
    for n in 1..=4 {
        let node = format!("node{n}");
        victims.push(jobs.submit(
            &format!("low{n}"),
            &[
                "-N1",
                "-w",
                &node,
                "--gres=gpu:8",
                "--comment",
                "preemptible",
            ],
        ));
    }
    for v in &victims {
        wait_running(v);
    }
    // An urgent (PriorityTier 10) gang, held for the planner.
    let urgent = jobs.submit("urgent", &["--hold", "-p", "urgent", "-N1", "--gres=gpu:8"]);

    let out = round_ok(state, true);
    let plan = last_plan(state);
    assert_eq!(plan.preemptions.len(), 1, "{out}");
    let victim = plan.preemptions[0].job.clone();
    assert!(victims.contains(&victim));
    let target: Vec<String> = plan.placements[0].gpus.keys().cloned().collect();
    assert_eq!(plan.placements[0].job, urgent);
    wait_for(&format!("victim {victim} to be requeued and held"), || {
        is_held(&victim)
    });
    assert_eq!(wait_running(&urgent), target);
    for v in victims.iter().filter(|v| **v != victim) {
        assert_eq!(state_of(v).0, "RUNNING", "only the planned victim may stop");
    }

    // Nothing new: the requeued job stays held (no free GPUs), nothing else is preempted.
    let lines = journal_lines(state);
    let out = round_ok(state, true);
    assert!(out.contains("0 to start, 0 to preempt"), "{out}");
    assert_eq!(journal_lines(state), lines);
    assert!(is_held(&victim));

    // Once the urgent job ends, the requeued victim is started again at once: its requeue
    // begin time (~2 minutes out) is cleared on release. (Slurm kills a batch job started in
    // the same second as the requeue that revoked its credential, "Job credential revoked";
    // a planning round comes that soon only in a test, so the test lets that second pass.)
    std::thread::sleep(Duration::from_millis(1100));
    let _ = Command::new("scancel").arg(&urgent).status();
    wait_for("the urgent job to end", || !is_active(&state_of(&urgent).0));
    let out = round_ok(state, true);
    assert!(out.contains(&format!("start job {victim} on")), "{out}");
    let started = Instant::now();
    wait_running(&victim);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "begin time was not cleared"
    );
}

fn an_apply_that_fails_half_way_is_finished_by_the_next_round() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut jobs = Jobs::new("partial");
    let first = jobs.submit("a", &["--hold", "-N1", "--gres=gpu:8"]);
    let second = jobs.submit("b", &["--hold", "-N1", "--gres=gpu:8"]);
    // A wrapper that makes `scontrol release <second>` fail once, and runs the real
    // scontrol otherwise.
    let real = sh("sh", &["-c", "command -v scontrol"]);
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mark = dir.path().join("failed-once");
    let script = format!(
        "#!/bin/sh\nif [ \"$1 $2\" = \"release {second}\" ] && [ ! -e {mark} ]; then\n  : > {mark}\n  echo 'simulated failure' >&2\n  exit 1\nfi\nexec {real} \"$@\"\n",
        mark = mark.display()
    );
    let wrapper = bin.join("scontrol");
    std::fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let (code, out, err) = round_with_path(&state, true, Some(&bin));
    assert_eq!(code, 6, "a failed Slurm command exits 6:\n{out}\n{err}");
    assert!(err.contains("re-run"), "{err}");
    wait_running(&first);
    assert!(
        is_held(&second),
        "the failed release left job {second} held"
    );
    let journal = std::fs::read_to_string(state.join("journal.jsonl")).unwrap();
    assert!(journal.contains(&format!("\"job\":\"{first}\"")) && journal.contains("\"ok\""));
    assert!(
        journal.contains("\"failed\"") && journal.contains("simulated failure"),
        "{journal}"
    );
    let planned: Vec<String> = last_plan(&state)
        .placements
        .iter()
        .find(|p| p.job == second)
        .map(|p| p.gpus.keys().cloned().collect())
        .unwrap();

    // The next round finishes: the second job starts, the first is left alone.
    let first_nodes = state_of(&first).2;
    let (code, out, err) = round_with_path(&state, true, Some(&bin));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("1 to start, 0 to preempt"), "{out}");
    assert_eq!(wait_running(&second), planned, "kept the planned nodes");
    assert_eq!(state_of(&first).2, first_nodes);
}

// ---------------------------------------------------------------------------------------------
// The cron under faults. Each case breaks one round of `slurm plan --apply` half-way and
// checks that the next round finishes the job, that nothing is lost or applied twice, and
// that the journal says what happened.

/// The lab's state dir (SLURM_CONF is STATE/etc/slurm.conf).
fn lab_state() -> std::path::PathBuf {
    let conf = std::path::PathBuf::from(std::env::var_os("SLURM_CONF").unwrap());
    conf.parent().unwrap().parent().unwrap().to_path_buf()
}

/// A folder of wrapper scripts put first on PATH: `name` runs `body` (sh; `$REAL` is the
/// real program) when `"$1 $2"` equals `when`, and the real program otherwise.
struct Wrappers {
    dir: tempfile::TempDir,
}

impl Wrappers {
    fn new() -> Self {
        Wrappers {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn wrap(self, name: &str, when: &str, body: &str) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let real = sh("sh", &["-c", &format!("command -v {name}")]);
        let cond = if when.is_empty() {
            "true".to_string()
        } else {
            format!("[ \"$1 $2\" = \"{when}\" ]")
        };
        let script =
            format!("#!/bin/sh\nREAL={real}\nif {cond}; then\n{body}\nfi\nexec {real} \"$@\"\n");
        let path = self.dir.path().join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        self
    }

    fn bin(&self) -> &Path {
        self.dir.path()
    }
}

/// A round as a child process (`extra` flags after the usual ones), with `bin` first on PATH.
fn spawn_round(state_dir: &Path, extra: &[&str], bin: Option<&Path>) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gangplan"));
    if let Some(bin) = bin {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    cmd.args([
        "slurm",
        "plan",
        "--apply",
        "--time-limit",
        "10",
        "--state-dir",
    ])
    .arg(state_dir)
    .args(extra)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("run gangplan")
}

/// Wait for a round with a deadline (killed and failed past it): (exit code or -1 for a
/// signal, stdout, stderr, seconds).
fn finish_round(mut child: std::process::Child) -> (i32, String, String, f64) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the round did not end within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
        started.elapsed().as_secs_f64(),
    )
}

fn apply_round(state_dir: &Path, extra: &[&str], bin: Option<&Path>) -> (i32, String, String, f64) {
    finish_round(spawn_round(state_dir, extra, bin))
}

/// Every job of `ids` was started exactly once (one `ok` start each in the journal).
fn started_once(state_dir: &Path, ids: &[&String]) {
    for id in ids {
        assert_eq!(
            journaled(state_dir, "start", id, "ok"),
            1,
            "job {id} must be started exactly once:\n{:#?}",
            journal(state_dir)
        );
    }
}

/// Two 8-GPU gangs, held: the first is started, the fault hits the release of the second.
fn two_gangs(jobs: &mut Jobs) -> (String, String) {
    let a = jobs.submit("a", &["--hold", "-N1", "--gres=gpu:8"]);
    let b = jobs.submit("b", &["--hold", "-N1", "--gres=gpu:8"]);
    (a, b)
}

#[test]
fn slurm_cron_under_faults() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    a_hanging_slurm_command_is_killed_at_its_deadline();
    assert_idle_cluster();
    slurmctld_stopped_in_the_middle_of_an_apply();
    assert_idle_cluster();
    a_round_killed_between_pin_and_release();
    assert_idle_cluster();
    a_full_or_read_only_state_dir_changes_nothing();
    assert_idle_cluster();
    two_rounds_in_the_same_second();
    assert_idle_cluster();
}

fn a_hanging_slurm_command_is_killed_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("hang");
    let (a, b) = two_gangs(&mut jobs);
    let w = Wrappers::new().wrap("scontrol", &format!("release {b}"), "exec sleep 600");
    let (code, out, err, secs) = apply_round(state, &["--slurm-timeout", "2"], Some(w.bin()));
    assert_eq!(code, 6, "{out}\n{err}");
    assert!(secs < 30.0, "the hung command was not cut at 2 s: {secs} s");
    assert!(err.contains("did not answer within 2 s"), "{err}");
    wait_running(&a);
    assert!(is_held(&b), "{:?}", state_of(&b));
    assert_eq!(journaled(state, "start", &b, "failed"), 1);

    let (code, out, err, _) = apply_round(state, &[], None);
    assert_eq!(code, 0, "{out}\n{err}");
    wait_running(&b);
    started_once(state, &[&a, &b]);
}

/// Restarts the lab's slurmctld (scripts/slurm-up.sh starts what is not running) and waits
/// until every node answers again.
fn restart_slurmctld() {
    let up = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-up.sh");
    let st = Command::new("bash")
        .arg(&up)
        .env("GANGPLAN_SLURM_STATE", lab_state())
        .env("SLURM_LAB_SMOKE", "0")
        .status()
        .unwrap();
    assert!(st.success(), "slurm-up.sh could not restart slurmctld");
    wait_for("every node to answer after the restart", || {
        // One line per node and partition: node states, counted per node.
        let o = Command::new("sinfo")
            .args(["-h", "-N", "-o", "%N %t"])
            .output();
        o.is_ok_and(|o| {
            let t = String::from_utf8_lossy(&o.stdout).to_string();
            let nodes: std::collections::BTreeSet<&str> = t
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .collect();
            o.status.success()
                && nodes.len() == 4
                && t.lines()
                    .all(|l| matches!(l.split_whitespace().nth(1), Some("idle" | "mix" | "alloc")))
        })
    });
}

/// Restarts slurmctld when dropped if it is not running (a failed test leaves the lab usable).
struct CtldGuard;

impl Drop for CtldGuard {
    fn drop(&mut self) {
        if Command::new("scontrol")
            .arg("ping")
            .output()
            .is_ok_and(|o| !String::from_utf8_lossy(&o.stdout).contains("is UP"))
        {
            restart_slurmctld();
        }
    }
}

fn slurmctld_stopped_in_the_middle_of_an_apply() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("ctld");
    let (a, b) = two_gangs(&mut jobs);
    let pidfile = lab_state().join("run/slurmctld.pid");
    let stop = format!(
        "p=$(cat {pf}); kill -TERM $p; while kill -0 $p 2>/dev/null; do sleep 0.1; done",
        pf = pidfile.display()
    );
    let w = Wrappers::new().wrap("scontrol", &format!("release {b}"), &stop);
    let guard = CtldGuard;
    let (code, out, err, _) = apply_round(state, &["--slurm-timeout", "20"], Some(w.bin()));
    assert_eq!(code, 6, "{out}\n{err}");
    assert!(err.contains("re-run"), "{err}");
    assert_eq!(journaled(state, "start", &a, "ok"), 1);
    assert_eq!(journaled(state, "start", &b, "failed"), 1);

    restart_slurmctld();
    drop(guard);
    wait_running(&a);
    assert!(is_held(&b), "{:?}", state_of(&b));
    let (code, out, err, _) = apply_round(state, &[], None);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("1 to start, 0 to preempt"), "{out}");
    wait_running(&b);
    started_once(state, &[&a, &b]);
}

fn a_round_killed_between_pin_and_release() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("kill9");
    let (a, b) = two_gangs(&mut jobs);
    // The wrapper kills the round (its parent) with SIGKILL when it asks to release b.
    let w = Wrappers::new().wrap("scontrol", &format!("release {b}"), "kill -9 $PPID; exit 1");
    let (code, out, err, _) = apply_round(state, &[], Some(w.bin()));
    assert_eq!(code, -1, "the round should have been killed:\n{out}\n{err}");
    wait_running(&a);
    assert!(is_held(&b), "{:?}", state_of(&b));
    let last = journal(state).pop().unwrap();
    assert_eq!(
        (
            last["action"].as_str(),
            last["job"].as_str(),
            last["outcome"].as_str()
        ),
        (Some("start"), Some(b.as_str()), Some("begun")),
        "the journal's last line names the change under way"
    );
    let killed_round = last["round"].as_u64().unwrap();

    let (code, out, err, _) = apply_round(state, &[], None);
    assert_eq!(code, 0, "{out}\n{err}");
    wait_running(&b);
    started_once(state, &[&a, &b]);
    let j = journal(state);
    let noted = j
        .iter()
        .find(|e| e["action"] == "interrupted")
        .unwrap_or_else(|| panic!("no interrupted note:\n{j:#?}"));
    assert_eq!(noted["job"], b.as_str());
    assert_eq!(noted["interrupted_round"], killed_round);
    let restart = j
        .iter()
        .find(|e| e["action"] == "start" && e["job"] == b.as_str() && e["outcome"] == "ok")
        .unwrap();
    assert!(
        restart["round"].as_u64().unwrap() > killed_round,
        "the killed round's number is not reused"
    );
}

/// A small tmpfs mounted at a fresh folder, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "this test mounts a small tmpfs as the state dir and needs root with mount rights \
             (as the Slurm lab does): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, opt: &str) {
        sh(
            "mount",
            &[
                "-o",
                &format!("remount,{opt}"),
                &self.path().display().to_string(),
            ],
        );
    }

    /// Fill the file system: write `fill` until the disk says it is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.path().join("fill")).unwrap();
        let block = [0u8; 4096];
        while f.write_all(&block).and_then(|_| f.sync_data()).is_ok() {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn a_full_or_read_only_state_dir_changes_nothing() {
    let fs = Tmpfs::new();
    let state = fs.path().join("state");
    let mut jobs = Jobs::new("disk");
    let (code, out, err, _) = apply_round(&state, &[], None);
    assert_eq!(code, 0, "a first round on an empty cluster:\n{out}\n{err}");
    let c = jobs.submit("c", &["--hold", "-N1", "--gres=gpu:8"]);

    fs.fill();
    let (code, out, err, _) = apply_round(&state, &[], None);
    assert_eq!(code, 6, "a full state dir:\n{out}\n{err}");
    assert!(err.contains("nothing was changed in Slurm"), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(
        is_held(&c),
        "nothing may start unjournaled: {:?}",
        state_of(&c)
    );

    std::fs::remove_file(fs.path().join("fill")).unwrap();
    fs.remount("ro");
    let (code, out, err, _) = apply_round(&state, &[], None);
    assert_eq!(code, 6, "a read-only state dir:\n{out}\n{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    assert!(is_held(&c), "{:?}", state_of(&c));

    fs.remount("rw");
    let (code, out, err, _) = apply_round(&state, &[], None);
    assert_eq!(code, 0, "{out}\n{err}");
    wait_running(&c);
    started_once(&state, &[&c]);
}

fn two_rounds_in_the_same_second() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("twice");
    let (a, b) = two_gangs(&mut jobs);
    // squeue answers 5 s late, so the first round holds the lock while the second starts.
    let w = Wrappers::new().wrap("squeue", "", "sleep 5");
    let first = spawn_round(state, &[], Some(w.bin()));
    let pid = first.id().to_string();
    wait_for("the first round to take the lock", || {
        std::fs::read_to_string(state.join("lock")).is_ok_and(|t| t.trim() == pid)
    });
    let (code, out, err, _) = apply_round(state, &[], Some(w.bin()));
    assert_eq!(
        code, 5,
        "the second round must find the lock held:\n{out}\n{err}"
    );
    assert!(err.contains(&format!("(pid {pid})")), "{err}");
    let (code, out, err, _) = finish_round(first);
    assert_eq!(code, 0, "{out}\n{err}");
    // A third round right after: nothing to do, nothing applied twice.
    let (code, out, err, _) = apply_round(state, &[], None);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("0 to start, 0 to preempt"), "{out}");
    wait_running(&a);
    wait_running(&b);
    started_once(state, &[&a, &b]);
    let skipped: Vec<_> = journal(state)
        .into_iter()
        .filter(|e| e["action"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["holder"], pid.as_str());
}

// ---------------------------------------------------------------------------------------------
// No new habits: plain sbatch to the partition gangplan plans (scripts/job_submit.lua).

/// A job as `squeue --json` shows it.
fn job_json(id: &str) -> serde_json::Value {
    let all: serde_json::Value = serde_json::from_str(&sh("squeue", &["--json"])).unwrap();
    all["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"].as_u64().map(|v| v.to_string()).as_deref() == Some(id))
        .cloned()
        .unwrap_or_else(|| panic!("job {id} is not in squeue --json"))
}

fn admin_comment(id: &str) -> String {
    job_json(id)["admin_comment"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn plain_sbatch_to_the_managed_partition_is_held_for_the_planner() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("lua");
    // No --hold: job_submit.lua holds GPU jobs of partition `gangplan`, and only those.
    let gang = jobs.submit("gang", &["-p", "gangplan", "-N2", "--gres=gpu:8"]);
    let cpu = jobs.submit("cpu", &["-p", "gangplan", "-N1"]);
    let other = jobs.submit("other", &["-p", "gpu", "-N1", "--gres=gpu:1"]);
    assert!(is_held(&gang), "{:?}", state_of(&gang));
    assert!(
        admin_comment(&gang).starts_with("gangplan: held at submission"),
        "{}",
        admin_comment(&gang)
    );
    wait_running(&cpu);
    wait_running(&other);
    assert_eq!(admin_comment(&other), "");

    let out = round_ok(state, true);
    assert!(out.contains(&format!("start job {gang} on")), "{out}");
    let planned: Vec<String> = last_plan(state)
        .placements
        .iter()
        .find(|p| p.job == gang)
        .map(|p| p.gpus.keys().cloned().collect())
        .unwrap();
    assert_eq!(wait_running(&gang), planned);
    let racks = racks();
    assert_eq!(racks[&planned[0]], racks[&planned[1]], "{planned:?}");
}

// ---------------------------------------------------------------------------------------------
// Admission at submission: job_submit.lua gives a one-node GPU job the room of gangplan's
// admission file, and Slurm starts it inside its submission, without a round.

/// The admission file the lab's job_submit.lua reads (scripts/slurm-up.sh exports its path as
/// GANGPLAN_ADMISSION_FILE before it starts slurmctld); removed when dropped.
struct AdmissionFile(std::path::PathBuf);

impl AdmissionFile {
    fn of_the_lab() -> Self {
        let path = std::env::var_os("GANGPLAN_ADMISSION_FILE").unwrap_or_else(|| {
            panic!(
                "GANGPLAN_ADMISSION_FILE is not set: start the test cluster with \
                 `source scripts/slurm-up.sh`, which exports the admission file's path for \
                 slurmctld's job_submit.lua and for these tests"
            )
        });
        let file = AdmissionFile(path.into());
        file.remove();
        file
    }

    /// Offer `node_lines` (`node NAME gpus G ...`), stamped `age` seconds ago.
    fn offer(&self, generation: &str, age: i64, node_lines: &[&str]) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut text = format!(
            "gangplan-admission 1\ngeneration {generation}-{}\ntime {}\nread {}\n",
            std::process::id(),
            now - age,
            now - age
        );
        for l in node_lines {
            text.push_str(l);
            text.push('\n');
        }
        std::fs::write(&self.0, text).unwrap();
    }

    fn remove(&self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Drop for AdmissionFile {
    fn drop(&mut self) {
        self.remove();
    }
}

#[test]
fn a_one_node_gpu_job_is_admitted_at_submission_only_by_a_fresh_admission_file() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let file = AdmissionFile::of_the_lab();
    let mut jobs = Jobs::new("admit");
    let one_node = ["-p", "gangplan", "--gres=gpu:2", "--time=5"];
    let absent = jobs.submit("absent", &one_node);
    assert!(is_held(&absent), "{:?}", state_of(&absent));

    let node3 = "node node3 gpus 8 cpus 32 mem 64000 partitions gpu,gangplan";
    file.offer("stale", 60, &[node3]);
    let stale = jobs.submit("stale", &one_node);
    assert!(is_held(&stale), "{:?}", state_of(&stale));

    // No gangplan round runs in this test: Slurm alone starts the admitted job.
    file.offer("fresh", 0, &[node3, "node node1 gpus 2 partitions gpu"]);
    let fresh = jobs.submit("fresh", &one_node);
    assert_eq!(wait_running(&fresh), vec!["node3".to_string()]);
    assert_eq!(
        admin_comment(&fresh),
        "gangplan: admitted at submission to node3"
    );
    // What was given is taken off the offer: 6 GPUs are left on node3, none for 8.
    let eight = jobs.submit("eight", &["-p", "gangplan", "--gres=gpu:8"]);
    assert!(is_held(&eight), "{:?}", state_of(&eight));
    let six = jobs.submit("six", &["-p", "gangplan", "-N1", "--gpus=6"]);
    assert_eq!(wait_running(&six), vec!["node3".to_string()]);
    // Two nodes: held, whatever the offer.
    let two = jobs.submit("two", &["-p", "gangplan", "-N2", "--gres=gpu:1"]);
    assert!(is_held(&two), "{:?}", state_of(&two));
}

#[test]
fn an_admitted_job_that_does_not_start_is_held_again_after_the_start_timeout() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let file = AdmissionFile::of_the_lab();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("admit-wait");
    let fill = jobs.submit("fill", &["-p", "gpu", "-w", "node1", "--gres=gpu:8"]);
    wait_running(&fill);
    // The file offers room that is gone (as between a round's read and a submission).
    file.offer("gone", 0, &["node node1 gpus 8 partitions gangplan"]);
    let job = jobs.submit("late", &["-p", "gangplan", "--gres=gpu:4"]);
    let (st, _, _) = state_of(&job);
    assert_eq!(st, "PENDING");
    assert!(!is_held(&job));
    assert!(admin_comment(&job).starts_with("gangplan: admitted at submission to node1"));

    // A round keeps it as in flight on node1 (nothing else is planned onto its GPUs)...
    let out = round_ok(state, true);
    assert!(!out.contains(&format!("start job {job}")), "{out}");
    assert!(!is_held(&job), "{:?}", state_of(&job));
    // ...and holds it again once it has waited past the start timeout.
    std::thread::sleep(Duration::from_millis(1100));
    let (code, out, err, _) = apply_round(state, &["--start-timeout", "0"], None);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(journaled(state, "rehold", &job, "ok"), 1, "{out}");
    assert!(is_held(&job), "{:?}", state_of(&job));
}

// ---------------------------------------------------------------------------------------------
// Reasons where users look: a held job's pending reason in its admin comment.

#[test]
fn held_jobs_reasons_are_written_to_the_admin_comment_and_cleared_on_start() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("reason");
    // One GPU busy on every node: no node has 8 free GPUs.
    let fillers: Vec<String> = (1..=4)
        .map(|n| {
            let node = format!("node{n}");
            jobs.submit(
                &format!("fill{n}"),
                &["-p", "gpu", "-w", &node, "--gres=gpu:1"],
            )
        })
        .collect();
    for f in &fillers {
        wait_running(f);
    }
    let w = jobs.submit("wait", &["-p", "gangplan", "-N1", "--gres=gpu:8"]);
    let ops = jobs.submit("ops", &["--hold", "-N1", "--gres=gpu:8"]);
    sh(
        "scontrol",
        &[
            "update",
            &format!("JobId={ops}"),
            "AdminComment=ops: keep held for maintenance",
        ],
    );

    let out = round_ok(state, true);
    assert!(out.contains(&format!("pending: job {w}:")), "{out}");
    let note = admin_comment(&w);
    assert!(
        note.starts_with("gangplan: waiting: needs 8 GPUs within one node"),
        "{note}"
    );
    assert_eq!(admin_comment(&ops), "ops: keep held for maintenance");
    assert_eq!(journaled(state, "note", &w, "ok"), 1);
    // The same reason is not written again.
    round_ok(state, true);
    assert_eq!(journaled(state, "note", &w, "ok"), 1);
    assert_eq!(admin_comment(&w), note);

    // GPUs free up: the job starts and its note is gone.
    sh("scancel", &[&fillers[0]]);
    wait_for("the filler to end", || !is_active(&state_of(&fillers[0]).0));
    let out = round_ok(state, true);
    assert!(out.contains(&format!("start job {w} on")), "{out}");
    wait_running(&w);
    assert_eq!(
        admin_comment(&w),
        "",
        "the reason is cleared when the job starts"
    );
    assert_eq!(admin_comment(&ops), "ops: keep held for maintenance");
}

// ---------------------------------------------------------------------------------------------
// The site's policy from Slurm: fair-share from slurmdbd (sshare), preemption by the
// controller's own rule; without slurmdbd the conventions of a cluster without accounting.

/// A dry round with `bin` first on PATH; (stdout, plan).
fn dry_round(state_dir: &Path, bin: Option<&Path>) -> (String, Plan) {
    let (code, out, err) = round_with_path(state_dir, false, bin);
    assert_eq!(code, 0, "{out}\n{err}");
    (out, last_plan(state_dir))
}

/// Wrappers that make the cluster look as if it kept no accounting.
fn without_slurmdbd() -> Wrappers {
    Wrappers::new().wrap(
        "scontrol",
        "show config",
        "echo 'AccountingStorageType   = accounting_storage/none'; echo 'PreemptType = preempt/partition_prio'; exit 0",
    )
}

/// The tenant weights the round's policy line names.
fn weights(out: &str) -> BTreeMap<String, f64> {
    let line = out
        .lines()
        .find(|l| l.starts_with("policy: fair-share from slurmdbd (sshare): "))
        .unwrap_or_else(|| panic!("no fair-share policy line:\n{out}"));
    let list = line["policy: fair-share from slurmdbd (sshare): ".len()..]
        .split(';')
        .next()
        .unwrap();
    list.split(", ")
        .map(|kv| {
            let (k, v) = kv.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn placed_by_account(plan: &Plan, research: &[String], prod: &[String]) -> (usize, usize) {
    let count = |ids: &[String]| {
        plan.placements
            .iter()
            .filter(|p| ids.contains(&p.job))
            .count()
    };
    (count(research), count(prod))
}

#[test]
fn site_policy_is_read_from_slurmdbd() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    fair_share_from_sshare_decides_who_gets_the_gpus();
    assert_idle_cluster();
    the_controllers_preemption_rule_replaces_the_comment();
    assert_idle_cluster();
}

fn fair_share_from_sshare_decides_who_gets_the_gpus() {
    // No usage yet: the weights are the shares (research 3, prod 1).
    sh(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "account",
            "where",
            "name=research,prod",
            "set",
            "RawUsage=0",
        ],
    );
    // Both the raw usage and the effective usage slurmctld derives from it (recomputed on
    // its own period) must show the reset before the round reads them: the earlier tests'
    // jobs ran under the default account, research.
    wait_for_within(USAGE_RECALC, "the usage reset to reach sshare", || {
        sh(
            "sshare",
            &[
                "-P",
                "-n",
                "-A",
                "research,prod",
                "-o",
                "Account,User,RawUsage,EffectvUsage",
            ],
        )
        .lines()
        .all(|l| {
            l.split('|')
                .skip(2)
                .all(|v| v.trim().parse::<f64>().is_ok_and(|x| x == 0.0))
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("share");
    let gang = ["--hold", "-N1", "--gres=gpu:8"];
    let research: Vec<String> = (0..4)
        .map(|i| jobs.submit(&format!("r{i}"), &[&gang[..], &["-A", "research"]].concat()))
        .collect();
    let prod: Vec<String> = (0..4)
        .map(|i| jobs.submit(&format!("p{i}"), &[&gang[..], &["-A", "prod"]].concat()))
        .collect();

    let (out, plan) = dry_round(state, None);
    let w = weights(&out);
    assert!(
        (w["research"] / w["prod"] - 3.0).abs() < 1e-6,
        "shares 3:1 without usage give weights 3:1: {w:?}"
    );
    assert_eq!(placed_by_account(&plan, &research, &prod), (3, 1), "{out}");

    // Without slurmdbd: weight 1 each, the GPUs split evenly, and the round says why.
    let w = without_slurmdbd();
    let (out, plan) = dry_round(state, Some(w.bin()));
    assert!(
        out.contains("policy: no slurmdbd (AccountingStorageType=accounting_storage/none): every tenant weight 1"),
        "{out}"
    );
    assert_eq!(placed_by_account(&plan, &research, &prod), (2, 2), "{out}");

    // slurmdbd configured but not answering: the same conventions, with the reason.
    let w = Wrappers::new().wrap(
        "sshare",
        "",
        "echo 'sshare: error: slurmdbd down' >&2; exit 1",
    );
    let (out, plan) = dry_round(state, Some(w.bin()));
    assert!(
        out.contains("policy: slurmdbd is configured but could not be read"),
        "{out}"
    );
    assert_eq!(placed_by_account(&plan, &research, &prod), (2, 2), "{out}");
}

fn the_controllers_preemption_rule_replaces_the_comment() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("rule");
    // Full cluster, no job marked preemptible by its comment.
    let fillers: Vec<String> = (1..=4)
        .map(|n| {
            let node = format!("node{n}");
            jobs.submit(
                &format!("fill{n}"),
                &["-p", "gpu", "-w", &node, "--gres=gpu:8"],
            )
        })
        .collect();
    for f in &fillers {
        wait_running(f);
    }
    let urgent = jobs.submit("urgent", &["--hold", "-p", "urgent", "-N1", "--gres=gpu:8"]);
    // preempt/partition_prio: gpu (tier 1) jobs on nodes of urgent (tier 10) are preemptible.
    let (out, plan) = dry_round(state, None);
    assert!(
        out.contains("preemption by preempt/partition_prio"),
        "{out}"
    );
    assert_eq!(plan.preemptions.len(), 1, "{out}");
    assert!(fillers.contains(&plan.preemptions[0].job));
    assert_eq!(plan.placements[0].job, urgent);
    // Without slurmdbd only the comment (or --preemptible-partition) makes a job preemptible.
    let w = without_slurmdbd();
    let (out, plan) = dry_round(state, Some(w.bin()));
    assert!(plan.preemptions.is_empty(), "{out}");
    assert!(out.contains(&format!("pending: job {urgent}:")), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Time in the plan: Slurm's time limits give the round a reservation for its first blocked
// gang; only jobs whose --time ends them before it may use the reserved nodes.

#[test]
fn a_blocked_gang_reserves_nodes_that_only_short_jobs_may_use() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("reserve");
    // Started by Slurm itself: node1 and node2 (one rack) hold 4 GPUs each for at most 5
    // minutes, node3 and node4 are full for an hour or more.
    let running = [
        ("node1", "gpu:4", "5"),
        ("node2", "gpu:4", "5"),
        ("node3", "gpu:8", "60"),
        ("node4", "gpu:8", "90"),
    ]
    .map(|(node, gres, time)| {
        jobs.submit(
            &format!("run-{node}"),
            &[
                "-p",
                "gpu",
                "-w",
                node,
                &format!("--gres={gres}"),
                &format!("--time={time}"),
            ],
        )
    });
    for id in &running {
        wait_running(id);
    }
    // Held: a 2 x 8 gang (whole nodes: node1 and node2 are whole in 5 minutes), then 2-GPU
    // jobs of 4 minutes, 10 minutes and no limit.
    let big = jobs.submit("big", &["--hold", "-N2", "--gres=gpu:8"]);
    let short = jobs.submit("short", &["--hold", "-N1", "--gres=gpu:2", "--time=4"]);
    let long = jobs.submit("long", &["--hold", "-N1", "--gres=gpu:2", "--time=10"]);
    let open = jobs.submit("open", &["--hold", "-N1", "--gres=gpu:2"]);

    let (code, out, err) = round_with_flags(state, false, None, &["--pre-release"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let plan = last_plan(state);
    let held = plan
        .reservation
        .as_ref()
        .unwrap_or_else(|| panic!("no reservation:\n{out}"));
    assert_eq!(held.job, big);
    assert_eq!(held.nodes, vec!["node1".to_string(), "node2".to_string()]);
    assert!(
        (240.0..=300.0).contains(&held.starts_in),
        "the 5-minute jobs end within 300 s: {}",
        held.starts_in
    );
    let placed: Vec<&str> = plan.placements.iter().map(|p| p.job.as_str()).collect();
    assert_eq!(placed, vec![short.as_str()], "{out}");
    for id in [&long, &open] {
        assert!(
            out.contains(&format!("pending: job {id}:"))
                && out.contains(&format!("reserved for job {big}")),
            "{out}"
        );
    }
    assert!(out.contains("node1, node2 reserved for it from"), "{out}");
    // The short job starts on a reserved node in this round: the gang is not released ahead
    // of it (Slurm would keep the node for the waiting gang and leave the short job to its
    // backfill pass).
    assert!(!out.contains(&format!("start job {big}")), "{out}");

    pre_release_round_ok(state);
    let nodes = wait_running(&short);
    assert!(nodes == ["node1"] || nodes == ["node2"], "{nodes:?}");
    assert!(is_held(&long) && is_held(&open) && is_held(&big));
    // The next round, with the short job running, releases the gang pinned to node1 and
    // node2, where it waits for their GPUs; the others stay held.
    let out = pre_release_round_ok(state);
    assert_released_ahead_onto(state, &out, &big, &["node1", "node2"]);
    assert!(is_held(&long) && is_held(&open));
    assert_eq!(state_of(&short).0, "RUNNING");
}

/// Job `id` was released ahead of its reservation onto `nodes` by the round of `state_dir`
/// that printed `out`: the round said so, and the job is pending in Slurm, not held, pinned
/// to exactly `nodes`, journaled as a start with the seconds the round expected until they
/// free.
fn assert_released_ahead_onto(state_dir: &Path, out: &str, id: &str, nodes: &[&str]) {
    let doing = format!(
        "doing: start job {id} on {} when their GPUs free",
        nodes.join(",")
    );
    assert!(out.contains(&doing), "{out}");
    let (state, reason, _) = state_of(id);
    assert!(
        state == "PENDING" && !is_held(id),
        "job {id} should wait released: {state} {reason}"
    );
    let required = job_json(id)["required_nodes"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(hostlist::expand(&required).unwrap(), nodes, "{required}");
    let starts: Vec<_> = journal(state_dir)
        .into_iter()
        .filter(|e| e["action"] == "start" && e["job"] == id && e["outcome"] == "ok")
        .collect();
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["nodes"], serde_json::json!(nodes));
    assert!(
        starts[0]["expected_in"].as_u64().is_some_and(|s| s > 0),
        "{:?}",
        starts[0]
    );
}

/// A reserved gang released by the round that reserved its nodes starts when they free, on
/// them, with no round after that one.
#[test]
fn a_reserved_gang_released_early_starts_on_its_nodes_without_another_round() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut jobs = Jobs::new("early");
    // node3 and node4 full for an hour; node1 and node2 (one rack) hold 4 GPUs each for a
    // job of a minute's limit that ends by itself after 15 s.
    for node in ["node3", "node4"] {
        let id = jobs.submit(
            &format!("run-{node}"),
            &["-p", "gpu", "-w", node, "--gres=gpu:8", "--time=60"],
        );
        wait_running(&id);
    }
    let short: Vec<String> = ["node1", "node2"]
        .iter()
        .map(|node| {
            jobs.submit_sleeping(
                &format!("run-{node}"),
                15,
                &["-p", "gpu", "-w", node, "--gres=gpu:4", "--time=1"],
            )
        })
        .collect();
    for id in &short {
        wait_running(id);
    }
    let big = jobs.submit("big", &["--hold", "-N2", "--gres=gpu:8"]);

    let out = pre_release_round_ok(state);
    assert_released_ahead_onto(state, &out, &big, &["node1", "node2"]);

    // No other round runs: Slurm starts the gang when the short jobs end.
    let nodes = wait_running(&big);
    assert_eq!(nodes, ["node1", "node2"]);
    let ended = short
        .iter()
        .map(|id| job_json(id)["end_time"].as_i64().unwrap_or(0))
        .max()
        .unwrap();
    let started = job_json(&big)["start_time"].as_i64().unwrap_or(0);
    assert!(
        ended > 0 && started >= ended,
        "started at {started}, the short jobs ended at {ended}"
    );
    eprintln!(
        "gang {big} started {} s after the jobs on its nodes ended",
        started - ended
    );
    let memory: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("memory.json")).unwrap()).unwrap();
    assert_eq!(memory["round"], 1, "one round only");
    assert!(journal(state).iter().all(|e| e["round"] == 1));
}

// ---------------------------------------------------------------------------------------------
// `gangplan slurm serve`: plans when the queue changes, without a cron; stops on SIGTERM.

/// A `gangplan slurm serve` process, killed when dropped (also when an assertion fails).
struct Serve(Option<std::process::Child>);

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `gangplan slurm serve --apply` with `extra` flags, its output in `log`.
fn spawn_serve(state: &Path, log: &Path, extra: &[&str]) -> Serve {
    let out = std::fs::File::create(log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(["slurm", "serve", "--apply", "--time-limit", "5"])
        .args(extra)
        .arg("--state-dir")
        .arg(state)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("start gangplan slurm serve");
    Serve(Some(child))
}

/// SIGTERM to `serve`; it must stop between rounds with exit code 0.
fn stop_serve(mut guard: Serve, log: &Path) {
    let mut serve = guard.0.take().expect("a running serve");
    let log_text = || std::fs::read_to_string(log).unwrap_or_default();
    sh("kill", &["-TERM", &serve.id().to_string()]);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(s) = serve.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = serve.kill();
            panic!("serve did not stop on SIGTERM:\n{}", log_text());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(0), "{}", log_text());
    assert!(
        log_text().contains("stopped by a signal between rounds"),
        "{}",
        log_text()
    );
}

#[test]
fn serve_starts_a_held_job_without_a_cron_call_and_stops_on_sigterm() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let log = dir.path().join("serve.log");
    let serve = spawn_serve(
        &state,
        &log,
        &["--poll", "0.2", "--debounce", "0.3", "--max-delay", "2"],
    );
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("serve's first round", || {
        state.join("metrics.prom").exists()
    });

    let mut jobs = Jobs::new("serve");
    let id = jobs.submit("one", &["--hold", "-N1", "--gres=gpu:2", "--time=5"]);
    let started = Instant::now();
    wait_running(&id);
    assert_eq!(journaled(&state, "start", &id, "ok"), 1, "{}", log_text());
    eprintln!(
        "serve started job {id} {:.1} s after its submission",
        started.elapsed().as_secs_f64()
    );
    stop_serve(serve, &log);
}

// The lab's nodes run scripts/gangplan-epilog.sh as their Epilog: a job's end reaches
// `serve --listen` before its nodes are handed back, the round told of it counts its GPUs
// free and releases the waiting job onto them, and the Epilog exits on serve's answer.
#[test]
fn an_end_told_by_the_epilog_is_planned_before_the_node_is_handed_back() {
    let Some(_turn) = claim_lab() else {
        return;
    };
    let listen = std::env::var("GANGPLAN_EPILOG_LISTEN").expect(
        "GANGPLAN_EPILOG_LISTEN is not set: start the lab with `source scripts/slurm-up.sh`, \
         which installs the Epilog and names the address it tells",
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let log = dir.path().join("serve.log");
    let serve = spawn_serve(&state, &log, &["--listen", &listen]);
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("serve's first round", || {
        state.join("metrics.prom").exists()
    });

    // Every GPU busy: node1's job ends after 3 s, the others run on.
    let mut jobs = Jobs::new("epilog");
    let short = jobs.submit_sleeping("short", 3, &["-p", "gpu", "-w", "node1", "--gres=gpu:8"]);
    for n in 2..=4 {
        let node = format!("node{n}");
        jobs.submit("long", &["-p", "gpu", "-w", &node, "--gres=gpu:8"]);
    }
    wait_running(&short);
    let waiting = jobs.submit("waiting", &["-p", "gpu", "--hold", "-N1", "--gres=gpu:8"]);
    let nodes = wait_running(&waiting);
    assert_eq!(nodes, vec!["node1".to_string()], "{}", log_text());
    assert_eq!(
        journaled(&state, "start", &waiting, "ok"),
        1,
        "{}",
        log_text()
    );
    let text = log_text();
    let told = text
        .find(&format!("their GPUs count free jobs={short}"))
        .unwrap_or_else(|| panic!("no round was told of job {short}'s end:\n{text}"));
    let started = text
        .find(&format!("applied job={waiting} action=start"))
        .expect("the start is in the log");
    assert!(
        told < started,
        "the start came from the round the Epilog's notice called:\n{text}"
    );
    stop_serve(serve, &log);
}
