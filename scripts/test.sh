#!/usr/bin/env bash
# The whole test suite on a fresh machine: system packages, a real Slurm cluster for the
# integration tests (as root; GANGPLAN_SKIP_SLURM=1 skips the cluster and those tests), then
# `cargo test --release`. Slurm is stopped again on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -x scripts/slurm-up.sh ] && [ -z "${GANGPLAN_SKIP_SLURM:-}" ]; then
  echo "test: starting a local Slurm 22.05 test cluster as root (munge, MariaDB, slurmdbd," \
       "slurmctld, 4 slurmd; installs the Debian packages on first use);" \
       "GANGPLAN_SKIP_SLURM=1 skips it and its tests" >&2
  # shellcheck disable=SC1091
  source scripts/slurm-up.sh
  trap 'scripts/slurm-down.sh || true' EXIT
fi
cargo test --release "$@"
