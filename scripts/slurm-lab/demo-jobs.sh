#!/usr/bin/env bash
# Vendored from the team's shared slurm-lab kit (shared/slurm-lab/demo-jobs.sh) so that CI, which may
# not have that folder, can start a local single-machine Slurm 22.05 test cluster (munge,
# slurmctld, several slurmd with fake GPUs). Used by scripts/slurm-up.sh and slurm-down.sh.
# demo-jobs.sh [STATE_DIR] -- exercises the planner's "pin + release" flow against the lab cluster.
set -uo pipefail
STATE=${1:-/tmp/slurm-lab/state}
source "$STATE/env.sh"
OUT=$STATE/jobs
t() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN{printf "%.2f", a-b}'; }
wait_state() { # wait_state JOBID STATE [TIMEOUT_S]
    local end=$(( $(date +%s) + ${3:-20} )) s
    while (( $(date +%s) < end )); do
        s=$(squeue -h -t all -j "$1" -o '%T' 2>/dev/null)
        [[ $s == "$2" ]] && return 0; sleep 0.1
    done
    echo "  !! job $1 is '$s', wanted $2"; return 1
}
q() { squeue -t all -o '%.4i %.9P %.10T %.22r %.10N %.14b %.12u' ; }
PASS=0; FAIL=0
check() { if eval "$2"; then echo "  ok: $1"; PASS=$((PASS+1)); else echo "  FAIL: $1"; FAIL=$((FAIL+1)); fi; }

echo "== 1. submit held jobs"
JOB='echo "node=$SLURMD_NODENAME user=$(id -un) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_JOB_GPUS=$SLURM_JOB_GPUS"; sleep 60'
A=$(sbatch --parsable --hold -N1 --gres=gpu:4 -o "$OUT/%j.out" --wrap "$JOB")
B=$(sbatch --parsable --hold -N2 --gres=gpu:8 -o "$OUT/%j.out" --wrap "srun bash -c '$JOB' ")
C=$(sbatch --parsable --hold -N1 --gres=gpu:4 -o "$OUT/%j.out" --wrap "$JOB")
q

echo "== 2. pin A->node3, B->node1,node2 (rack1, gang), C->node3 (shares node3 with A), release"
T0=$EPOCHREALTIME
scontrol update JobId="$A" NodeList=node3 && scontrol release "$A"
scontrol update JobId="$B" NodeList=node1,node2 && scontrol release "$B"
scontrol update JobId="$C" NodeList=node3 && scontrol release "$C"
wait_state "$A" RUNNING; wait_state "$B" RUNNING; wait_state "$C" RUNNING
echo "  release -> all RUNNING: $(t "$T0")s"
q
check "A on node3" '[[ $(squeue -h -j $A -o %N) == node3 ]]'
check "B on node[1-2]" '[[ $(squeue -h -j $B -o %N) == "node[1-2]" ]]'
check "C on node3" '[[ $(squeue -h -j $C -o %N) == node3 ]]'
echo "  GRES indices (scontrol show job -d):"
for j in $A $B $C; do scontrol show job -d "$j" | grep -E '^\s+Nodes=' | sed "s/^ */    job $j: /"; done
check "A and C got disjoint GPU idx on node3" '[[ "$(scontrol show job -d $A | grep -o "IDX:[0-9-]*")" != "$(scontrol show job -d $C | grep -o "IDX:[0-9-]*")" ]]'
sleep 1; echo "  job output:"; cat "$OUT/$A.out" "$OUT/$B.out" "$OUT/$C.out" | sed 's/^/    /'

echo "== 3. a job pinned onto a full node waits (Reason=Resources once the scheduler looked at it)"
D=$(sbatch --parsable --hold -N1 --gres=gpu:1 -o "$OUT/%j.out" --wrap 'sleep 60')
T0=$EPOCHREALTIME
scontrol update JobId="$D" NodeList=node3; scontrol release "$D"
for _ in $(seq 1 100); do [[ $(squeue -h -j $D -o %r) == Resources ]] && break; sleep 0.1; done
squeue -j "$D" -o '  %i %T %r required=%n'; echo "  (reason went None -> Resources after $(t "$T0")s)"
check "D pending (Resources)" '[[ $(squeue -h -j $D -o %T:%r) == PENDING:Resources ]]'
scancel "$D"

echo "== 4. requeue of a running job (scontrol requeue) -> PENDING with BeginTime (+~120 s)"
scontrol requeue "$A"; sleep 1
scontrol show job "$A" | grep -E 'JobState|Restarts|EligibleTime' | sed 's/^ */    /'
echo "   re-pin to node4 and clear the begin-time delay: update NodeList=node4 StartTime=now"
T0=$EPOCHREALTIME
scontrol update JobId="$A" NodeList=node4 StartTime=now
wait_state "$A" RUNNING && echo "  requeued job running again after $(t "$T0")s on $(squeue -h -j "$A" -o %N)"
check "A restarted on node4" '[[ $(squeue -h -j $A -o %N) == node4 ]]'

echo "== 5. requeuehold (planner preempts C, moves it next to A on node4, releases)"
scontrol requeuehold "$C"; sleep 1
squeue -j "$C" -o '  %i %T %r'
T0=$EPOCHREALTIME
scontrol update JobId="$C" NodeList=node4 StartTime=now && scontrol release "$C"
wait_state "$C" RUNNING && echo "  C now on $(squeue -h -j "$C" -o %N) after $(t "$T0")s"
check "C re-placed on node4" '[[ $(squeue -h -j $C -o %N) == node4 ]]'
for j in $A $C; do scontrol show job -d "$j" | grep -E '^\s+Nodes=' | sed "s/^ */    job $j: /"; done

echo "== 6. slurm-native preemption: partition 'urgent' (PriorityTier=10) preempts 'gpu' by REQUEUE"
T0=$EPOCHREALTIME
E=$(sbatch --parsable -p urgent -N1 -w node4 --gres=gpu:8 -o "$OUT/%j.out" --wrap 'sleep 30')
wait_state "$E" RUNNING 30 && echo "  urgent job running on node4 after $(t "$T0")s"; q
check "A and C (node4) were requeued by preemption" '[[ $(squeue -h -j $A,$C -o %T | sort -u) == PENDING ]]'

echo "== 7. job as a non-root user (nobody)"
F=$(runuser -u nobody -- sbatch --parsable -N1 --gres=gpu:2 -w node3 -o "$OUT/%j.out" --wrap "$JOB")
wait_state "$F" RUNNING; sleep 1; sed 's/^/    /' "$OUT/$F.out"
check "F runs as nobody" 'grep -q user=nobody $OUT/$F.out'

echo "== 8. machine-readable outputs"
check "squeue --json" 'squeue --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(\"    jobs:\", [(j[\"job_id\"], j[\"job_state\"], j[\"nodes\"], j[\"required_nodes\"], j[\"gres_detail\"]) for j in d[\"jobs\"]])"'
check "sinfo --json" 'sinfo --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(\"    nodes:\", [(n[\"name\"], n[\"state\"], n[\"gres\"], n[\"gres_used\"]) for n in d[\"nodes\"]])"'
check "scontrol --json absent in 22.05" '! scontrol --json show nodes >/dev/null 2>&1'
echo "  scontrol -o show node node3:"; scontrol -o show node node3 | cut -c1-200 | sed 's/^/    /'
echo "  squeue -h -o '%i|%T|%r|%N|%n|%b|%D':"; squeue -h -t all -o '%i|%T|%r|%N|%n|%b|%D' | sed 's/^/    /'

echo "== cleanup"; squeue -h -o %i | xargs -r scancel; sleep 1
echo "demo: $PASS passed, $FAIL failed"
