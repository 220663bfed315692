#!/usr/bin/env bash
# Vendored from the team's shared slurm-lab kit (shared/slurm-lab/start-slurm.sh) so that CI, which may
# not have that folder, can start a local single-machine Slurm 22.05 test cluster (munge,
# slurmctld, several slurmd with fake GPUs). Used by scripts/slurm-up.sh and slurm-down.sh.
# start-slurm.sh [STATE_DIR]
#
# Single-machine Slurm "lab" cluster for integration tests (Debian 12, Slurm 22.05, run as root):
#   munged + slurmctld + N slurmd instances (Debian's build has MULTIPLE_SLURMD=Yes),
#   each node advertising G fake GPUs (gres, File= fake char devices), select/cons_tres,
#   topology/tree with the nodes split into R racks, two partitions (gpu default; urgent preempts
#   gpu by requeue).
# Idempotent: installs packages if missing, starts only what is not already running, waits until
# all nodes are idle, prints the state. Every file/pid/log lives under STATE_DIR.
#
# Knobs (env): SLURM_LAB_SMOKE=1 (after a fresh slurmctld start, run a tiny batch job on all nodes)
#              SLURM_LAB_NODES=4 SLURM_LAB_RACKS=2 SLURM_LAB_GPUS=8 SLURM_LAB_CPUS=32
#              SLURM_LAB_MEM_MB=64000 SLURM_LAB_PORT_BASE=16800 (ctld=BASE+17, nodeI=BASE+100+I)
#              SLURM_LAB_JOB_SUBMIT_LUA=FILE (install FILE as job_submit.lua, JobSubmitPlugins=lua)
#              SLURM_LAB_MANAGED_PARTITION=NAME (a third partition over all nodes, tier 1)
#              SLURM_LAB_EPILOG=FILE (install FILE as every node's Epilog, gangplan-epilog.sh)
#              SLURM_LAB_EPILOG_LISTEN=HOST:PORT (written to the Epilog's gangplan-epilog.conf:
#                where `gangplan slurm serve --listen` takes end notices)
#              SLURM_LAB_ACCOUNTING=1 (MariaDB + slurmdbd, priority/multifactor; accounts
#                research (3 shares) and prod (1 share), QOS low/high; dbd=BASE+19, db=BASE+30)
# Afterwards:  source STATE_DIR/env.sh   (exports SLURM_CONF; clients need nothing else)
set -euo pipefail

STATE=${1:-${SLURM_LAB_STATE:-/tmp/slurm-lab/state}}
NODES=${SLURM_LAB_NODES:-4}
RACKS=${SLURM_LAB_RACKS:-2}
GPUS=${SLURM_LAB_GPUS:-8}
CPUS=${SLURM_LAB_CPUS:-32}
MEM=${SLURM_LAB_MEM_MB:-64000}
PORT_BASE=${SLURM_LAB_PORT_BASE:-16800}
CTLD_PORT=$((PORT_BASE + 17))
SLURMD_PORT=$((PORT_BASE + 18))
DBD_PORT=$((PORT_BASE + 19))
DB_PORT=$((PORT_BASE + 30))
ACCOUNTING=${SLURM_LAB_ACCOUNTING:-0}

T_START=$EPOCHREALTIME
log() { printf '[start-slurm %6ss] %s\n' "$(awk -v a="$EPOCHREALTIME" -v b="$T_START" 'BEGIN{printf "%.2f", a-b}')" "$*"; }
die() { echo "start-slurm: ERROR: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (slurmd must be able to setuid to job users)"
(( NODES >= RACKS && RACKS >= 1 )) || die "need SLURM_LAB_NODES >= SLURM_LAB_RACKS >= 1"

# ---------------------------------------------------------------- packages
if ! dpkg-query -W -f='${Status}\n' slurmctld slurmd slurm-client munge 2>/dev/null \
        | grep -c 'install ok installed' | grep -qx 4; then
    log "installing slurmctld slurmd slurm-client munge (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >/dev/null
fi
if [[ $ACCOUNTING == 1 ]] && ! dpkg-query -W -f='${Status}\n' slurmdbd mariadb-server 2>/dev/null \
        | grep -c 'install ok installed' | grep -qx 2; then
    log "installing slurmdbd mariadb-server (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmdbd mariadb-server >/dev/null
fi
log "slurm $(slurmd -V | awk '{print $2}'), $(munged --version 2>&1 | awk '{print $1}')"

# ---------------------------------------------------------------- helpers
# alive PIDFILE COMM [CMDLINE-SUBSTRING]: pid file points at a live process of that name
alive() {
    local f=$1 comm=$2 sub=${3:-} p
    [[ -s $f ]] || return 1
    p=$(<"$f")
    [[ $p =~ ^[0-9]+$ && -r /proc/$p/comm ]] || return 1
    [[ $(</proc/$p/comm) == "$comm" ]] || return 1
    [[ $(awk '{ sub(/^.*\) /, ""); print substr($0, 1, 1) }' /proc/"$p"/stat 2>/dev/null) != Z ]] || return 1
    [[ -z $sub ]] || tr '\0' ' ' </proc/"$p"/cmdline | grep -qF -- "$sub"
}
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
    local t=$1 what=$2; shift 2
    local end=$(( $(date +%s) + t ))
    until "$@"; do
        (( $(date +%s) < end )) || die "timeout waiting for $what"
        sleep 0.2
    done
}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
chmod 755 "$STATE"
mkdir -p "$STATE"/{etc,log,run,ctld,spool,dev,jobs,munge,mysql}
chmod 755 "$STATE/munge"     # munged insists the socket dir be world-executable
chmod 1777 "$STATE/jobs"     # scratch dir for job output, writable by any job user
CONF=$STATE/etc/slurm.conf
SOCK=$STATE/munge/munge.socket
HOST=$(hostname -s)

node_name() { echo "node$1"; }

# ---------------------------------------------------------------- munge
if [[ ! -s $STATE/munge/munge.key ]]; then
    dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$STATE/munge/munge.key"
if alive "$STATE/munge/munged.pid" munged "$SOCK"; then
    log "munged already running (pid $(<"$STATE/munge/munged.pid"))"
else
    log "starting munged"
    munged --socket="$SOCK" --key-file="$STATE/munge/munge.key" \
        --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
        --seed-file="$STATE/munge/munged.seed"
fi
wait_for 10 "munge round trip" bash -c "munge -n -S '$SOCK' 2>/dev/null | unmunge -S '$SOCK' >/dev/null 2>&1"

# ---------------------------------------------------------------- config files
NEW=$STATE/etc/.new; rm -rf "$NEW"; mkdir -p "$NEW"
{
cat <<EOF
# generated by start-slurm.sh -- single-machine lab cluster
ClusterName=lab
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# no cgroups, no accounting daemon
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
# scheduling
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
TopologyPlugin=topology/tree
SchedulerType=sched/backfill
# schedule batch jobs as soon as possible (default batch_sched_delay=3 s)
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
EOF
if [[ $ACCOUNTING == 1 ]]; then
cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# the munge socket for the connection to slurmdbd (AuthInfo does not cover it)
AccountingStoragePass=$SOCK
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightQOS=1000
PriorityWeightAge=100
PriorityDecayHalfLife=1-0
EOF
else
    echo "AccountingStorageType=accounting_storage/none"
fi
cat <<EOF
# advertise the configured (fake) hardware, not the real 2-core box
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=2
MinJobAge=300
EOF
for ((i = 1; i <= NODES; i++)); do
    echo "NodeName=$(node_name $i) NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT_BASE + 100 + i)) CPUs=$CPUS RealMemory=$MEM Gres=gpu:$GPUS State=UNKNOWN"
done
echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1"
echo "PartitionName=urgent Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=10"
[[ -n ${SLURM_LAB_MANAGED_PARTITION:-} ]] && \
    echo "PartitionName=$SLURM_LAB_MANAGED_PARTITION Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=1"
[[ -n ${SLURM_LAB_JOB_SUBMIT_LUA:-} ]] && echo "JobSubmitPlugins=lua"
[[ -n ${SLURM_LAB_EPILOG:-} ]] && echo "Epilog=$STATE/etc/gangplan-epilog.sh"
true
} >"$NEW/slurm.conf"
if [[ -n ${SLURM_LAB_EPILOG:-} ]]; then
    [[ -r $SLURM_LAB_EPILOG ]] || die "cannot read SLURM_LAB_EPILOG=$SLURM_LAB_EPILOG"
    install -m 755 "$SLURM_LAB_EPILOG" "$NEW/gangplan-epilog.sh"
    echo "GANGPLAN_LISTEN=${SLURM_LAB_EPILOG_LISTEN:-}" >"$NEW/gangplan-epilog.conf"
else
    : >"$NEW/gangplan-epilog.sh"; : >"$NEW/gangplan-epilog.conf"
fi
if [[ -n ${SLURM_LAB_JOB_SUBMIT_LUA:-} ]]; then
    [[ -r $SLURM_LAB_JOB_SUBMIT_LUA ]] || die "cannot read SLURM_LAB_JOB_SUBMIT_LUA=$SLURM_LAB_JOB_SUBMIT_LUA"
    cp "$SLURM_LAB_JOB_SUBMIT_LUA" "$NEW/job_submit.lua"
else
    : >"$NEW/job_submit.lua"
fi

{
echo "AutoDetect=off"
for ((i = 1; i <= NODES; i++)); do
    echo "NodeName=$(node_name $i) Name=gpu File=$STATE/dev/$(node_name $i)/nvidia[0-$((GPUS - 1))]"
done
} >"$NEW/gres.conf"

{
per=$(( (NODES + RACKS - 1) / RACKS )); first=1
for ((r = 1; r <= RACKS; r++)); do
    last=$(( first + per - 1 )); (( last > NODES )) && last=$NODES
    (( first > last )) && break
    if (( first == last )); then n="node$first"; else n="node[$first-$last]"; fi
    echo "SwitchName=rack$r Nodes=$n"
    first=$(( last + 1 ))
done
echo "SwitchName=spine Switches=rack[1-$RACKS]"
} >"$NEW/topology.conf"
(( RACKS == 1 )) && sed -i 's/^SwitchName=spine Switches=rack\[1-1\]$/SwitchName=spine Switches=rack1/' "$NEW/topology.conf"

CTLD_RUNNING=0; alive "$STATE/run/slurmctld.pid" slurmctld "$CONF" && CTLD_RUNNING=1
changed=0
if [[ $ACCOUNTING == 1 ]]; then
cat >"$NEW/slurmdbd.conf" <<EOF
# generated by start-slurm.sh -- accounting for the lab cluster
AuthType=auth/munge
AuthInfo=socket=$SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=root
StorageLoc=slurm_acct_db
EOF
else
    : >"$NEW/slurmdbd.conf"
fi
chmod 600 "$NEW/slurmdbd.conf"
CONF_FILES="slurm.conf gres.conf topology.conf job_submit.lua slurmdbd.conf gangplan-epilog.sh gangplan-epilog.conf"
for f in $CONF_FILES; do
    cmp -s "$NEW/$f" "$STATE/etc/$f" || changed=1
done
if (( changed )); then
    (( CTLD_RUNNING )) && die "config under $STATE/etc differs from requested (NODES/GPUS/...); run stop-slurm.sh $STATE first or use another STATE_DIR"
    for f in $CONF_FILES; do mv "$NEW/$f" "$STATE/etc/$f"; done
fi
rm -rf "$NEW"
echo "export SLURM_CONF=$CONF" >"$STATE/env.sh"
export SLURM_CONF=$CONF

# ---------------------------------------------------------------- fake GPU devices
# gres File= must be char/block devices (plain files are rejected -> no CUDA_VISIBLE_DEVICES).
# Major 195 = nvidia; nothing opens them (no cgroup device constraint).
for ((i = 1; i <= NODES; i++)); do
    d=$STATE/dev/$(node_name $i); mkdir -p "$d"
    for ((g = 0; g < GPUS; g++)); do
        [[ -e $d/nvidia$g ]] || mknod "$d/nvidia$g" c 195 "$g" 2>/dev/null || : >"$d/nvidia$g"
    done
    mkdir -p "$STATE/spool/$(node_name $i)"
done

# ---------------------------------------------------------------- accounting: MariaDB, slurmdbd
# The database runs without grant tables, on 127.0.0.1 only: a lab, not a site.
if [[ $ACCOUNTING == 1 ]]; then
    if alive "$STATE/run/mysqld.pid" mariadbd "$STATE/mysql"; then
        log "mariadbd already running (pid $(<"$STATE/run/mysqld.pid"))"
    else
        if [[ ! -d $STATE/mysql/mysql ]]; then
            log "initialising the accounting database"
            mariadb-install-db --user=root --datadir="$STATE/mysql" --skip-test-db \
                --auth-root-authentication-method=normal >"$STATE/log/mariadb-install.log" 2>&1
        fi
        log "starting mariadbd (port $DB_PORT)"
        mariadbd --user=root --datadir="$STATE/mysql" --socket="$STATE/run/mysqld.sock" \
            --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$STATE/run/mysqld.pid" \
            --skip-grant-tables --skip-log-bin --innodb-buffer-pool-size=32M \
            --log-error="$STATE/log/mariadb.log" </dev/null >/dev/null 2>&1 &
        disown
    fi
    db_ok() { mariadb -h127.0.0.1 -P"$DB_PORT" -uroot -e 'select 1' >/dev/null 2>&1; }
    wait_for 60 "mariadbd to answer" db_ok
    if alive "$STATE/run/slurmdbd.pid" slurmdbd; then
        log "slurmdbd already running (pid $(<"$STATE/run/slurmdbd.pid"))"
    else
        log "starting slurmdbd (port $DBD_PORT)"
        slurmdbd
    fi
    wait_for 60 "slurmdbd to answer" bash -c 'sacctmgr -n -P show cluster >/dev/null 2>&1'
    if ! sacctmgr -n -P show cluster format=cluster | grep -qx lab; then
        log "registering cluster lab, accounts research (3 shares) and prod (1 share), QOS low/high"
        sacctmgr -i add cluster lab >/dev/null
        sacctmgr -i add qos low Priority=0 >/dev/null
        sacctmgr -i add qos high Priority=100 Preempt=low PreemptMode=requeue >/dev/null
        sacctmgr -i add account research Fairshare=3 >/dev/null
        sacctmgr -i add account prod Fairshare=1 >/dev/null
        sacctmgr -i add user root Account=research,prod DefaultAccount=research \
            QOS=normal,low,high >/dev/null
    fi
fi

# ---------------------------------------------------------------- slurmctld
if (( CTLD_RUNNING )); then
    log "slurmctld already running (pid $(<"$STATE/run/slurmctld.pid"))"
else
    log "starting slurmctld (port $CTLD_PORT)"
    slurmctld -f "$CONF"
fi
CTLD_MISSING=0
ctld_ok() { # slurmctld answers; fail fast (after ~3 s without a live pid) if it died at startup
    if ! alive "$STATE/run/slurmctld.pid" slurmctld "$CONF"; then
        if (( ++CTLD_MISSING > 15 )); then
            tail -5 "$STATE/log/slurmctld.log" >&2; die "slurmctld is not running (see $STATE/log/slurmctld.log)"
        fi
        return 1
    fi
    scontrol ping 2>/dev/null | grep -q UP
}
wait_for 30 "slurmctld to answer" ctld_ok

# ---------------------------------------------------------------- slurmd x NODES
for ((i = 1; i <= NODES; i++)); do
    n=$(node_name $i)
    if alive "$STATE/run/slurmd-$n.pid" slurmd "-N $n"; then
        log "slurmd $n already running (pid $(<"$STATE/run/slurmd-$n.pid"))"
    else
        log "starting slurmd $n (port $((PORT_BASE + 100 + i)))"
        slurmd -f "$CONF" -N "$n"
    fi
done
all_up() { # every node registered and usable
    local bad
    bad=$(sinfo -h -N -o '%N %t' | awk '$2 !~ /^(idle|mix|alloc|comp)$/' | wc -l)
    [[ $(sinfo -h -N -o '%N' | sort -u | wc -l) -eq $NODES && $bad -eq 0 ]]
}
wait_for 60 "all $NODES nodes to be idle" all_up

# ---------------------------------------------------------------- smoke job
# A fresh slurmctld makes its first scheduling pass ~3 s after it starts. A tiny batch job over
# all nodes absorbs that delay (so the tests' first job starts in < 1 s) and proves munge creds,
# slurmstepd launch, srun and gres binding work. It leaves one COMPLETED job named lab-smoke in
# squeue -t all / squeue --json for MinJobAge=300 s. SLURM_LAB_SMOKE=0 skips it.
if (( ! CTLD_RUNNING )) && [[ ${SLURM_LAB_SMOKE:-1} != 0 ]]; then
    log "smoke job: 1 task + 1 gpu on each of the $NODES nodes"
    SJ=$(sbatch --parsable -J lab-smoke -N"$NODES" --ntasks-per-node=1 --gres=gpu:1 -t 1 \
         -o "$STATE/jobs/lab-smoke-%j.out" --wrap 'srun bash -c "[[ -n \$CUDA_VISIBLE_DEVICES ]]"')
    smoke_done() { [[ $(squeue -h -t all -j "$SJ" -o %T 2>/dev/null) =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)$ ]]; }
    wait_for 60 "smoke job $SJ" smoke_done
    [[ $(squeue -h -t all -j "$SJ" -o %T) == COMPLETED ]] || die "smoke job $SJ: $(squeue -h -t all -j "$SJ" -o '%T %r') (see $STATE/log, $STATE/jobs)"
fi

# ---------------------------------------------------------------- report
log "cluster up"
echo "---- export SLURM_CONF=$CONF   (or: source $STATE/env.sh)"
sinfo -o '%P %a %D %t %N %G'
scontrol -o show node | sed -E 's/^NodeName=([^ ]+) .* Gres=([^ ]+) .* Port=([0-9]+) .* State=([^ ]+) .*/\1 gres=\2 port=\3 state=\4/'
scontrol show topology
pids="munged=$(<"$STATE/munge/munged.pid") slurmctld=$(<"$STATE/run/slurmctld.pid")"
for ((i = 1; i <= NODES; i++)); do pids+=" $(node_name $i)=$(<"$STATE/run/slurmd-$(node_name $i).pid")"; done
echo "pids: $pids"
log "done"
