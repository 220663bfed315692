#!/usr/bin/env bash
# Vendored from the team's shared slurm-lab kit (shared/slurm-lab/stop-slurm.sh) so that CI, which may
# not have that folder, can start a local single-machine Slurm 22.05 test cluster (munge,
# slurmctld, several slurmd with fake GPUs). Used by scripts/slurm-up.sh and slurm-down.sh.
# stop-slurm.sh [STATE_DIR] [--purge]
# Stops only what start-slurm.sh started for STATE_DIR. Daemons are found by their pid files
# (checked against /proc/PID/comm + cmdline, so a recycled pid is never hit):
#   1. cancels all jobs of that cluster, waits (<= 5 s) for them to finish,
#   2. slurmd x N,
#   3. leftover slurmstepd holding a unix socket under STATE_DIR/spool, with their process trees,
#   4. leftover job processes (environ has SLURM_CONF=STATE_DIR/etc/slurm.conf AND SLURM_JOB_ID;
#      i.e. started by this cluster's slurmstepd; never this script or its ancestors),
#   5. slurmctld, 5b. slurmdbd and MariaDB (when SLURM_LAB_ACCOUNTING started them), 6. munged.
# --purge additionally deletes STATE_DIR.
set -uo pipefail

STATE=${SLURM_LAB_STATE:-/tmp/slurm-lab/state}; PURGE=0
for a in "$@"; do
    case $a in --purge) PURGE=1 ;; *) STATE=$a ;; esac
done
[[ -d $STATE ]] || { echo "stop-slurm: no state dir $STATE"; exit 0; }
STATE=$(cd "$STATE" && pwd)
CONF=$STATE/etc/slurm.conf
export SLURM_CONF=$CONF

pid_if_alive() { # pid_if_alive PIDFILE COMM SUBSTRING -> echo pid if it is ours and alive
    local f=$1 comm=$2 sub=$3 p
    [[ -s $f ]] || return 1
    p=$(<"$f")
    [[ $p =~ ^[0-9]+$ && -r /proc/$p/comm && $(</proc/$p/comm) == "$comm" ]] || return 1
    tr '\0' ' ' </proc/"$p"/cmdline | grep -qF -- "$sub" || return 1
    echo "$p"
}
running() { # running PID: exists and is not a zombie (pid 1 here reaps orphans only every ~2 s)
    local st
    st=$(awk '{ sub(/^.*\) /, ""); print substr($0, 1, 1) }' /proc/"$1"/stat 2>/dev/null) || return 1
    [[ -n $st && $st != Z && $st != X ]]
}
stop_pids() { # stop_pids LABEL PID...: TERM all, wait up to 10 s, then KILL the rest
    local what=$1 p i left; shift
    (( $# )) || return 0
    kill -TERM "$@" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        left=(); for p in "$@"; do running "$p" && left+=("$p"); done
        (( ${#left[@]} )) || break; sleep 0.1
    done
    if (( ${#left[@]} )); then kill -KILL "${left[@]}" 2>/dev/null; echo "killed $what (pids ${left[*]}) after 10 s"; fi
    echo "stopped $what (pids $*)"
}
descendants() { # descendants PID -> all descendant pids (one per line)
    local kids k
    kids=$(awk -v pp="$1" '{ sub(/^.*\) /, ""); split($0, f, " "); if (f[2] == pp) print FILENAME }' \
           /proc/[0-9]*/stat 2>/dev/null | sed -E 's#/proc/([0-9]+)/stat#\1#')
    for k in $kids; do echo "$k"; descendants "$k"; done
}

# 1. jobs
if pid_if_alive "$STATE/run/slurmctld.pid" slurmctld "$CONF" >/dev/null; then
    jobs=$(squeue -h -o '%i' 2>/dev/null | tr '\n' ' ')
    if [[ -n ${jobs// } ]]; then
        echo "cancelling jobs: $jobs"
        # shellcheck disable=SC2086
        scancel $jobs 2>/dev/null
        for ((i = 0; i < 25; i++)); do   # <= 5 s (jobs on a dead slurmd stay COMPLETING; see step 3)
            [[ -z $(squeue -h -t PD,R,CG,S,CF,RQ,RS,RH,SE -o '%i' 2>/dev/null) ]] && break; sleep 0.2
        done
    fi
fi

# 2. slurmd instances (all at once)
pids=(); names=()
for f in "$STATE"/run/slurmd-*.pid; do
    [[ -e $f ]] || continue
    n=${f##*/slurmd-}; n=${n%.pid}
    if p=$(pid_if_alive "$f" slurmd "-N $n"); then pids+=("$p"); names+=("$n"); fi
done
stop_pids "slurmd ${names[*]}" "${pids[@]}"
rm -f "$STATE"/run/slurmd-*.pid

# 3. stray slurmstepd of this cluster (listening on a unix socket under $STATE/spool) + their trees
inodes=$(awk -v d="$STATE/spool/" 'index($8, d) == 1 {print $7}' /proc/net/unix | sort -u)
if [[ -n $inodes ]]; then
    for d in /proc/[0-9]*; do p=${d#/proc/}
        [[ -r /proc/$p/comm && $(cat /proc/"$p"/comm 2>/dev/null) == slurmstepd ]] && running "$p" || continue
        for fd in /proc/"$p"/fd/*; do
            l=$(readlink "$fd" 2>/dev/null) || continue
            if [[ $l =~ ^socket:\[([0-9]+)\]$ ]] && grep -qx "${BASH_REMATCH[1]}" <<<"$inodes"; then
                tree=$(descendants "$p" | tr '\n' ' '); cmd=$(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)
                # shellcheck disable=SC2086
                [[ -n ${tree// } ]] && kill -KILL $tree 2>/dev/null
                kill -KILL "$p" 2>/dev/null
                echo "killed stray slurmstepd $p ($cmd) and its processes: ${tree:-none}"
                break
            fi
        done
    done
fi

# 4. orphaned job processes of this cluster
self_chain=" $$ "; p=$$
while [[ $p -gt 1 ]]; do p=$(awk '{ sub(/^.*\) /, ""); split($0, f, " "); print f[2] }' /proc/$p/stat); self_chain+="$p "; done
for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [[ $self_chain == *" $p "* ]] && continue
    env=$(tr '\0' '\n' 2>/dev/null <"$d/environ") || continue
    if grep -qx "SLURM_CONF=$CONF" <<<"$env" && grep -q '^SLURM_JOB_ID=' <<<"$env"; then
        running "$p" && kill -KILL "$p" 2>/dev/null && echo "killed orphaned job process $p ($(cat "$d/comm" 2>/dev/null))"
    fi
done

# 5. slurmctld
if p=$(pid_if_alive "$STATE/run/slurmctld.pid" slurmctld "$CONF"); then stop_pids slurmctld "$p"; fi
rm -f "$STATE/run/slurmctld.pid"

# 5b. accounting: slurmdbd, then MariaDB
if p=$(pid_if_alive "$STATE/run/slurmdbd.pid" slurmdbd slurmdbd); then stop_pids slurmdbd "$p"; fi
rm -f "$STATE/run/slurmdbd.pid"
if p=$(pid_if_alive "$STATE/run/mysqld.pid" mariadbd "$STATE/mysql"); then stop_pids mariadbd "$p"; fi
rm -f "$STATE/run/mysqld.pid"

# 6. munged
if p=$(pid_if_alive "$STATE/munge/munged.pid" munged "$STATE/munge/munge.socket"); then stop_pids munged "$p"; fi
rm -f "$STATE/munge/munged.pid"

if (( PURGE )); then rm -rf "$STATE"; echo "removed $STATE"; fi
echo "stop-slurm: done ($STATE)"
