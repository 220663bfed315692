#!/usr/bin/env bash
# The whole test suite on a fresh machine: system packages, a real Slurm cluster for the
# integration tests, then `cargo test --release`. Slurm is stopped again on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -x scripts/slurm-up.sh ] && [ -z "${GANGPLAN_SKIP_SLURM:-}" ]; then
  # shellcheck disable=SC1091
  source scripts/slurm-up.sh
  trap 'scripts/slurm-down.sh || true' EXIT
fi
cargo test --release "$@"
