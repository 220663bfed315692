#!/usr/bin/env bash
# Stops the local Slurm test cluster started by scripts/slurm-up.sh (only the daemons and jobs
# it started, found by their pid files) and removes its state dir.
# Uses GANGPLAN_SLURM_STATE (default ${TMPDIR:-/tmp}/gangplan-slurm-lab).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${GANGPLAN_SLURM_STATE:-${TMPDIR:-/tmp}/gangplan-slurm-lab}
"$here/slurm-lab/stop-slurm.sh" "$state" --purge >/dev/null
rm -f "${state%/}.log"
echo "slurm-down: test cluster stopped ($state)" >&2
