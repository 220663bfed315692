#!/usr/bin/env python3
"""The stream benchmark over a running Slurm lab (scripts/stream-bench.sh starts one and calls
this): a seeded stream of finite GPU jobs, served by Slurm alone, by `gangplan slurm serve`
and by `gangplan slurm plan --apply` from a loop every --cron-interval seconds, measured from
Slurm's own record of each job (submit, start and end times, nodes).

Modes: `slurm` (submitted plainly to partition gpu, Slurm schedules), `serve` and `cron`
(submitted `--hold`), and, through gangplan's job_submit.lua (the lab of stream-bench.sh
installs it for partition gangplan), `serve-lua` (submitted plainly to partition gangplan: the
plugin holds every GPU job; serve runs with --no-admission) and `serve-admit` (the same, and
serve writes the admission file the plugin reads, $GANGPLAN_ADMISSION_FILE, so a one-node job
that fits is admitted at its submission), and `serve-epilog`: serve-admit with serve taking
end notices from the nodes' Epilog (`--listen $GANGPLAN_EPILOG_LISTEN`; the lab of
stream-bench.sh installs scripts/gangplan-epilog.sh as every node's Epilog, in every mode: with
nobody listening it exits at once). The column `admitted` counts the jobs the plugin admitted.

    stream-bench.py run --seeds 1 2 3 --runs 2 --modes slurm serve cron --out DIR

Writes DIR/runs.csv (one line per mode, seed and run) and DIR/summary.md (means over runs).

    stream-bench.py remeasure --records RECORDS --out DIR

measures the runs kept in RECORDS (by `run --records`) again, without Slurm: the stream flags
(--jobs, --load, --gpus, --run-min, --run-max) must be those of the runs, and --nodes and
--racks the lab's (default 32 and 4).
Besides the waits: per multi-node gang spanning racks, whether one rack had enough nodes with
no other job on them at its start (`spanning_with_rack_room`); for the planners, from their
log, the rounds, each round's seconds from its start to its plan, and the mean time from a
job's release to its start in Slurm. `serve` runs with its own defaults unless
--serve-flags says otherwise, the cron's `slurm plan` unless --plan-flags does.
With --records DIR, each run's jobs as Slurm recorded them (`squeue --json`), the planner's
log and its journal, and slurmctld's log are kept in DIR (for looking into single jobs and rounds).
Needs SLURM_CONF in the environment and the gangplan binary (--gangplan).
"""

import argparse
import csv
import datetime
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

GPUS_PER_NODE = 8
# Gang sizes (GPUs) and how often each is drawn.
SIZES = [(1, 0.30), (2, 0.15), (4, 0.20), (8, 0.20), (16, 0.10), (32, 0.05)]
BIG = 16  # gangs of at least this many GPUs are the "big gangs" of the report
ADMITTED = "gangplan: admitted at submission to"  # the plugin's admin comment on an admitted job


def stream(seed, jobs, load, gpus, run_min, run_max):
    """The seeded stream: (arrival s, gpus, run s, time limit min). Arrivals are uniform over a
    window sized so that the GPU-seconds asked are `load` times what the cluster has in it."""
    rng = random.Random(seed)
    sizes, weights = zip(*SIZES)
    drawn = [(rng.choices(sizes, weights)[0], rng.randint(run_min, run_max)) for _ in range(jobs)]
    demand = sum(g * r for g, r in drawn)
    window = demand / (gpus * load)
    arrivals = sorted(rng.uniform(0, window) for _ in range(jobs))
    return [(a, g, r, math.ceil(r / 60)) for a, (g, r) in zip(arrivals, drawn)], window


def shape(g):
    """sbatch flags of a g-GPU gang: whole nodes above one node's GPUs."""
    if g > GPUS_PER_NODE:
        return ["-N", str(g // GPUS_PER_NODE), f"--gres=gpu:{GPUS_PER_NODE}"]
    return ["-N", "1", f"--gres=gpu:{g}"]


def sh(args, check=True):
    out = subprocess.run(args, capture_output=True, text=True)
    if check and out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def racks():
    """Node -> rack from `scontrol show topology` (the level-0 switches)."""
    of = {}
    for line in sh(["scontrol", "show", "topology"]).splitlines():
        f = dict(x.split("=", 1) for x in line.split() if "=" in x)
        if f.get("Level") == "0":
            for n in sh(["scontrol", "show", "hostnames", f["Nodes"]]).split():
                of[n] = f["SwitchName"]
    return of


def active(tag):
    out = sh(["squeue", "-h", "-o", "%j"], check=False)
    return sum(1 for name in out.split() if name.startswith(tag))


# Per mode: the sbatch flags of a job, and the flags of `slurm serve` (None: the mode runs no
# serve).
SUBMIT = {"slurm": ["-p", "gpu"], "serve": ["-p", "gpu", "--hold"], "cron": ["-p", "gpu", "--hold"],
          "serve-lua": ["-p", "gangplan"], "serve-admit": ["-p", "gangplan"],
          "serve-epilog": ["-p", "gangplan"]}


def serve_mode_flags(mode):
    """Flags of `slurm serve` for a serve mode: the admission file the lab's plugin reads for
    serve-admit, and the Epilog's address too for serve-epilog, none for serve-lua (the plugin
    holds every job), the defaults for serve."""
    if mode in ("serve-admit", "serve-epilog"):
        path = os.environ.get("GANGPLAN_ADMISSION_FILE")
        if not path:
            sys.exit(f"stream-bench: {mode} needs GANGPLAN_ADMISSION_FILE (stream-bench.sh sets it)")
        listen = os.environ.get("GANGPLAN_EPILOG_LISTEN")
        if mode == "serve-epilog" and not listen:
            sys.exit("stream-bench: serve-epilog needs GANGPLAN_EPILOG_LISTEN (stream-bench.sh sets it)")
        return ["--admission-file", path] + (["--listen", listen] if mode == "serve-epilog" else [])
    return ["--no-admission"] if mode == "serve-lua" else []


def start_planner(mode, args, state):
    """The planner of `mode` as a child process group (None for Slurm alone)."""
    if mode == "slurm":
        return None
    common = ["--apply", "--time-limit", str(args.time_limit), "--state-dir", state]
    log = open(os.path.join(state, "planner.log"), "w")
    if mode.startswith("serve"):
        cmd = [args.gangplan, "slurm", "serve", *common, *serve_mode_flags(mode),
               *args.serve_flags.split()]
    else:
        one = " ".join([args.gangplan, "slurm", "plan", *common, *args.plan_flags.split()])
        cmd = ["bash", "-c", f"while :; do {one} >/dev/null; sleep {args.cron_interval}; done"]
    return subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)


def stop_planner(p, mode):
    if p is None:
        return
    os.killpg(p.pid, signal.SIGTERM if mode.startswith("serve") else signal.SIGKILL)
    p.wait(timeout=60)


def one_run(mode, seed, run, args, rack_of):
    jobs, window = stream(seed, args.jobs, args.load, args.gpus, args.run_min, args.run_max)
    tag = f"sb-{mode}-{seed}-{run}-"
    state = tempfile.mkdtemp(prefix=f"stream-{mode}-")
    planner = start_planner(mode, args, state)
    try:
        time.sleep(1.0)
        t0 = time.time()
        for i, (at, g, r, limit) in enumerate(jobs):
            time.sleep(max(0.0, t0 + at - time.time()))
            sh(["sbatch", "-Q", *SUBMIT[mode], "-J", f"{tag}{i}", "-o", "/dev/null", "-D", "/tmp",
                f"--time={limit}", *shape(g), "--wrap", f"sleep {r}"])
        deadline = time.time() + args.max_seconds
        while active(tag) and time.time() < deadline:
            time.sleep(1.0)
        left = active(tag)
    finally:
        stop_planner(planner, mode)
    if left:
        sh(["scancel", "-n", ",".join(f"{tag}{i}" for i in range(len(jobs)))], check=False)
    if args.records:
        keep_record(args.records, f"{mode}-{seed}-{run}", tag, state)
    record = json.loads(sh(["squeue", "--json"]))["jobs"]
    return {**measure(record, tag, jobs, window, args.gpus, rack_of, left, hostnames),
            **planner_timing(os.path.join(state, "planner.log"), released_at(record, tag))}


def keep_record(records, name, tag, state):
    """Save Slurm's record of the run's jobs (`squeue --json`, those jobs only) as
    RECORDS/NAME.json, the planner's log and journal as RECORDS/NAME.log and NAME.journal, and
    slurmctld's log so far (its times have milliseconds) as RECORDS/NAME.slurmctld.log."""
    os.makedirs(records, exist_ok=True)
    jobs = [j for j in json.loads(sh(["squeue", "--json"]))["jobs"] if j["name"].startswith(tag)]
    with open(os.path.join(records, f"{name}.json"), "w") as f:
        json.dump(jobs, f)
    ctld_log = re.search(r"^SlurmctldLogFile\s*=\s*(\S+)", sh(["scontrol", "show", "config"]),
                         re.M)
    sources = [(os.path.join(state, "planner.log"), "log"),
               (os.path.join(state, "journal.jsonl"), "journal")]
    if ctld_log:
        sources.append((ctld_log.group(1), "slurmctld.log"))
    for path, ext in sources:
        if os.path.exists(path):
            with open(path) as i, open(os.path.join(records, f"{name}.{ext}"), "w") as o:
                o.write(i.read())


def log_time(line):
    """Unix seconds of a log line's leading RFC 3339 timestamp, or None."""
    try:
        return datetime.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
    except (ValueError, IndexError):
        return None


def released_at(record, tag):
    """Slurm job id -> start time (Unix s) of the jobs of this run, for the planner's timing."""
    return {str(j["job_id"]): j["start_time"] for j in record if j["name"].startswith(tag)}


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)] if xs else float("nan")


def planner_timing(log, starts):
    """From the planner's log: rounds, each round's seconds from its start to its plan (reads
    and planning; median and p90), and from a job's release (`applied ... start job`) to its
    start in Slurm (mean; Slurm's start times are whole seconds, so this is +-0.5 s)."""
    plan_s, release_s = [], []
    if os.path.exists(log):
        for line in open(log):
            m = re.search(r" planned .*seconds=([0-9.]+)", line)
            if m:
                plan_s.append(float(m.group(1)))
            m = re.search(r" applied job=(\S+) action=start job", line)
            t = log_time(line)
            if m and t is not None and starts.get(m.group(1)):
                release_s.append(starts[m.group(1)] - t)
    if not plan_s:
        return {"rounds": 0, "round_plan_s_median": "", "round_plan_s_p90": "",
                "release_to_start_s": ""}
    return {
        "rounds": len(plan_s),
        "round_plan_s_median": round(quantile(plan_s, 0.5), 3),
        "round_plan_s_p90": round(quantile(plan_s, 0.9), 3),
        "release_to_start_s": round(sum(release_s) / len(release_s), 2) if release_s else "",
    }


def occupied(others, t):
    """Nodes some job of `others` (nodes, start, end) runs on in second t. A job that ended in
    that second counts: Slurm's times are whole seconds, and such a job may have ended after
    the decision that started the gang (5 of the 6 gangs counted as spanning racks with room
    on the records of seeds 10-15 were such cases, of both Slurm and the planner)."""
    return {n for nodes, start, end in others if start <= t <= end for n in nodes}


def rack_had_room(size, t, others, rack_of):
    """Whether one rack had `size` nodes on which no other job ran in second t."""
    busy = occupied(others, t)
    free = {}
    for n, r in rack_of.items():
        if n not in busy:
            free[r] = free.get(r, 0) + 1
    return max(free.values(), default=0) >= size


def measure(record, tag, jobs, window, gpus, rack_of, left, nodes_of):
    """The run's metrics from Slurm's record of its jobs (`squeue --json`'s jobs); `nodes_of`
    expands a record's node list."""
    mine = [j for j in record if j["name"].startswith(tag)]
    placed = {j["job_id"]: (nodes_of(j["nodes"]), j["start_time"], j["end_time"])
              for j in mine if j["nodes"]}
    waits, big_waits, busy, spans, ends, submits = [], [], 0.0, 0, [], []
    spans_with_room = 0
    for j in mine:
        i = int(j["name"][len(tag):])
        g = jobs[i][1]
        sub, start, end = j["submit_time"], j["start_time"], j["end_time"]
        submits.append(sub)
        if j["job_state"] not in ("COMPLETED", "TIMEOUT", "FAILED"):
            continue
        waits.append(start - sub)
        if g >= BIG:
            big_waits.append(start - sub)
        busy += g * (end - start)
        ends.append(end)
        nodes = placed.get(j["job_id"], ([],))[0]
        if len({rack_of.get(n, "?") for n in nodes}) > 1:
            spans += 1
            others = [v for k, v in placed.items() if k != j["job_id"]]
            spans_with_room += rack_had_room(len(nodes), start, others, rack_of)
    waits.sort()
    admitted = sum(1 for j in mine if (j.get("admin_comment") or "").startswith(ADMITTED))
    makespan = max(ends) - min(submits) if ends else float("nan")
    return {
        "jobs": len(jobs),
        "unfinished": left,
        "window_s": round(window, 1),
        "mean_wait_s": round(sum(waits) / len(waits), 2),
        "p95_wait_s": waits[min(len(waits) - 1, int(math.ceil(0.95 * len(waits))) - 1)],
        "worst_big_wait_s": max(big_waits) if big_waits else 0,
        "makespan_s": makespan,
        "utilisation": round(busy / (gpus * makespan), 3),
        "gangs_spanning_racks": spans,
        "spanning_with_rack_room": spans_with_room,
        "admitted": admitted,
    }


def hostnames(expr):
    return sh(["scontrol", "show", "hostnames", expr]).split() if expr else []


def summary(rows, out):
    keys = ["mean_wait_s", "p95_wait_s", "worst_big_wait_s", "makespan_s", "utilisation",
            "gangs_spanning_racks", "spanning_with_rack_room", "admitted", "unfinished", "rounds",
            "round_plan_s_median", "release_to_start_s"]
    modes = sorted({r["mode"] for r in rows}, key=list(SUBMIT).index)
    lines = ["| mode | runs | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
    for m in modes:
        rs = [r for r in rows if r["mode"] == m]
        cells = [mean_cell([r[k] for r in rs]) for k in keys]
        lines.append(f"| {m} | {len(rs)} | " + " | ".join(cells) + " |")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def mean_cell(values):
    """The mean of the values given (blank ones left out), two decimals; blank when none."""
    xs = [float(v) for v in values if v != ""]
    return f"{sum(xs) / len(xs):.2f}" if xs else ""


def expand_hostlist(expr):
    """Slurm's hostlist expression (`node[1-3,8],node12`) as host names, without Slurm."""
    hosts = []
    for prefix, ranges, single in re.findall(r"([^,\[]+)\[([^\]]*)\]|([^,\[\]]+)", expr or ""):
        if single:
            hosts.append(single)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            hosts += [f"{prefix}{i:0{len(lo)}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return hosts


def lab_racks(nodes, racks):
    """Node -> rack of the lab (`scripts/slurm-lab/start-slurm.sh`: node1..nodeN in racks of
    consecutive nodes, ceil(N / racks) each), for measuring kept records without Slurm."""
    per = -(-nodes // racks)
    return {f"node{i}": f"rack{(i - 1) // per + 1}" for i in range(1, nodes + 1)}


def remeasure(args):
    """The metrics of every run kept in --records (MODE-SEED-RUN.json and .log) measured again,
    without Slurm, with the stream flags the runs were made with."""
    rack_of = lab_racks(args.nodes, args.racks)
    rows = []
    for name in sorted(os.listdir(args.records)):
        m = re.fullmatch(r"(.+)-(\d+)-(\d+)\.json", name)
        if not m:
            continue
        mode, seed, run = m.group(1), int(m.group(2)), int(m.group(3))
        jobs, window = stream(seed, args.jobs, args.load, args.gpus, args.run_min, args.run_max)
        tag = f"sb-{mode}-{seed}-{run}-"
        record = json.load(open(os.path.join(args.records, name)))
        left = sum(1 for j in record if j["name"].startswith(tag)
                   and j["job_state"] not in ("COMPLETED", "TIMEOUT", "FAILED"))
        log = os.path.join(args.records, f"{mode}-{seed}-{run}.log")
        rows.append({"mode": mode, "seed": seed, "run": run,
                     **measure(record, tag, jobs, window, args.gpus, rack_of, left,
                               expand_hostlist),
                     **planner_timing(log, released_at(record, tag))})
    rows.sort(key=lambda r: (r["seed"], r["run"], list(SUBMIT).index(r["mode"])))
    return rows


def write_rows(rows, out):
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def stop_on_sigterm(*_):
    raise SystemExit("stream-bench: stopped by SIGTERM")


def main():
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=["run", "remeasure"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=["slurm", "serve", "cron"], choices=list(SUBMIT))
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--load", type=float, default=1.4)
    ap.add_argument("--gpus", type=int, default=256, help="GPUs of the lab cluster")
    ap.add_argument("--run-min", type=int, default=8)
    ap.add_argument("--run-max", type=int, default=60)
    ap.add_argument("--time-limit", type=float, default=2.0, help="gangplan's planner seconds")
    ap.add_argument("--cron-interval", type=float, default=3.0)
    ap.add_argument("--serve-flags", default="",
                    help="more flags for `slurm serve` (default: none, its own defaults)")
    ap.add_argument("--plan-flags", default="",
                    help="more flags for the cron's `slurm plan` (default: none)")
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--gangplan", default="target/release/gangplan")
    ap.add_argument("--out", required=True)
    ap.add_argument("--records", default="",
                    help="keep each run's Slurm record, planner log and journal in this dir")
    ap.add_argument("--nodes", type=int, default=32, help="remeasure: the lab's nodes")
    ap.add_argument("--racks", type=int, default=4, help="remeasure: the lab's racks")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.command == "remeasure":
        if not args.records:
            sys.exit("stream-bench: remeasure needs --records DIR (a run's kept records)")
        rows = remeasure(args)
        if not rows:
            sys.exit(f"stream-bench: no MODE-SEED-RUN.json records in {args.records}")
        write_rows(rows, args.out)
        summary(rows, args.out)
        return
    rack_of = racks()
    rows = []
    for seed in args.seeds:
        for run in range(1, args.runs + 1):
            for mode in args.modes:
                row = {"mode": mode, "seed": seed, "run": run,
                       **one_run(mode, seed, run, args, rack_of)}
                print(json.dumps(row), flush=True)
                rows.append(row)
                write_rows(rows, args.out)
    summary(rows, args.out)


if __name__ == "__main__":
    main()
