#!/usr/bin/env bash
# Starts the local Slurm 22.05 test cluster (scripts/slurm-lab/start-slurm.sh: munge, slurmctld
# and 4 slurmd daemons on this machine, 8 fake GPUs each, 2 racks) for tests/slurm_integration.rs,
# with gangplan's job_submit.lua (scripts/job_submit.lua) holding the GPU jobs submitted to the
# partition `gangplan` (a third partition over all nodes, next to `gpu` and `urgent`), every
# node's Epilog telling `slurm serve --listen $GANGPLAN_EPILOG_LISTEN` of job ends, and
# accounting: MariaDB and slurmdbd (accounts research and prod, QOS low/high), so that the site
# policy (fair-share, QOS) is read from Slurm. SLURM_LAB_ACCOUNTING=0 starts it without them.
# Meant to be sourced (scripts/test.sh does): exports SLURM_CONF (what the Slurm clients need),
# GANGPLAN_SLURM_STATE (the lab's state dir, for scripts/slurm-down.sh) and
# GANGPLAN_ADMISSION_FILE (the admission file the lab's job_submit.lua reads). Run directly, it
# starts the lab and prints the two exports. Needs root (the packages install on first use).
# Knobs: GANGPLAN_SLURM_STATE (default ${TMPDIR:-/tmp}/gangplan-slurm-lab),
#        SLURM_LAB_PORT_BASE (default 17800, away from the lab kit's own default).
_gp_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GANGPLAN_SLURM_STATE=${GANGPLAN_SLURM_STATE:-${TMPDIR:-/tmp}/gangplan-slurm-lab}
# The admission file job_submit.lua reads (slurmctld inherits the variable; the tests write it).
export GANGPLAN_ADMISSION_FILE=${GANGPLAN_ADMISSION_FILE:-$GANGPLAN_SLURM_STATE/admission}
# Where the nodes' Epilog (scripts/gangplan-epilog.sh) sends end notices: a test's
# `slurm serve --listen` on this address gets them; with nobody listening the Epilog exits at once.
export GANGPLAN_EPILOG_LISTEN=${GANGPLAN_EPILOG_LISTEN:-127.0.0.1:$(( ${SLURM_LAB_PORT_BASE:-17800} + 40 ))}
SLURM_LAB_NODES=4 SLURM_LAB_RACKS=2 SLURM_LAB_GPUS=8 \
  SLURM_LAB_JOB_SUBMIT_LUA="$_gp_here/job_submit.lua" SLURM_LAB_MANAGED_PARTITION=gangplan \
  SLURM_LAB_EPILOG="$_gp_here/gangplan-epilog.sh" SLURM_LAB_EPILOG_LISTEN=$GANGPLAN_EPILOG_LISTEN \
  SLURM_LAB_ACCOUNTING=${SLURM_LAB_ACCOUNTING:-1} \
  SLURM_LAB_PORT_BASE=${SLURM_LAB_PORT_BASE:-17800} \
  "$_gp_here/slurm-lab/start-slurm.sh" "$GANGPLAN_SLURM_STATE" >"${GANGPLAN_SLURM_STATE%/}.log" 2>&1 || {
  echo "slurm-up: the test cluster did not start; last lines of ${GANGPLAN_SLURM_STATE%/}.log:" >&2
  tail -20 "${GANGPLAN_SLURM_STATE%/}.log" >&2
  return 1 2>/dev/null || exit 1
}
export SLURM_CONF=$GANGPLAN_SLURM_STATE/etc/slurm.conf
echo "slurm-up: test cluster up (export SLURM_CONF=$SLURM_CONF GANGPLAN_SLURM_STATE=$GANGPLAN_SLURM_STATE)" >&2
unset _gp_here
