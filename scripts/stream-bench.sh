#!/usr/bin/env bash
# The stream benchmark: Slurm alone against `gangplan slurm serve` against the cron
# (`gangplan slurm plan --apply` every 3 s), and against serve behind gangplan's job_submit.lua
# (modes serve-lua, serve-admit: see scripts/stream-bench.py), on a lab cluster of 32 nodes x 8 GPUs in 4 racks
# started for it (scripts/slurm-lab, its own state dir and ports, no accounting; backfill every
# 2 s: bf_interval=2), stopped again at the end. As root. Arguments go to
# scripts/stream-bench.py (defaults: --seeds 1 2 3 --runs 2, 100 jobs of 1-32 GPUs running
# 8-60 s with --time, arriving at 1.4x the cluster's capacity); results in --out
# (default docs/results/stream-bench). Build first: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
state=${STREAM_BENCH_STATE:-${TMPDIR:-/tmp}/gangplan-stream-lab}
[[ -x target/release/gangplan ]] || { echo "stream-bench: build first (cargo build --release)" >&2; exit 2; }
# gangplan's job_submit.lua holds GPU jobs of partition gangplan (modes serve-lua and
# serve-admit) and admits by the admission file named here (slurmctld inherits the variable).
export GANGPLAN_ADMISSION_FILE=$state/admission
# Every node's Epilog (scripts/gangplan-epilog.sh) tells this address of job ends: mode
# serve-epilog listens there; in the other modes nobody does and the Epilog exits at once.
port_base=${STREAM_BENCH_PORT_BASE:-18800}
export GANGPLAN_EPILOG_LISTEN=127.0.0.1:$((port_base + 40))
SLURM_LAB_NODES=32 SLURM_LAB_RACKS=4 SLURM_LAB_GPUS=8 SLURM_LAB_ACCOUNTING=0 \
  SLURM_LAB_JOB_SUBMIT_LUA=scripts/job_submit.lua SLURM_LAB_MANAGED_PARTITION=gangplan \
  SLURM_LAB_EPILOG=scripts/gangplan-epilog.sh SLURM_LAB_EPILOG_LISTEN=$GANGPLAN_EPILOG_LISTEN \
  SLURM_LAB_PORT_BASE=$port_base \
  scripts/slurm-lab/start-slurm.sh "$state" >"${state%/}.log" 2>&1 || {
  echo "stream-bench: the lab did not start; see ${state%/}.log" >&2; exit 1; }
trap 'scripts/slurm-lab/stop-slurm.sh "$state" --purge >/dev/null 2>&1 || true' EXIT
export SLURM_CONF=$state/etc/slurm.conf
# Slurm's backfill every 2 s (the default is 30 s).
grep -q bf_interval "$SLURM_CONF" || sed -i 's/^SchedulerParameters=.*/&,bf_interval=2/' "$SLURM_CONF"
scontrol reconfigure
sleep 3
args=("$@")
[[ " ${args[*]} " == *" --out "* ]] || args+=(--out docs/results/stream-bench)
python3 scripts/stream-bench.py run "${args[@]}"
