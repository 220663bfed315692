#!/usr/bin/env bash
# Regenerate the research tables (docs/results/research/README.md) and their plots (each
# run's jct_cdf.svg, alloc_vs_load.svg, solve_time.svg), linked from docs/research.md:
#
#   scripts/research/openb_table.sh
#
# Environment (defaults in brackets):
#   TRACES        folder with the upstream traces                   [/work/shared/traces]
#   SEEDS         seeds of fgd and the greedy on the full cluster   [42-51]
#   ILP_SEEDS     seeds of the ILP on the full cluster (~25 s each) [42-51]
#   CUT_SEEDS     seeds of every planner on the shipped cut         [42-51]
#   WORKLOADS     openb pod lists (names without openb_pod_list_)   [default multigpu20
#                 multigpu30 multigpu40 gpushare40 gpushare60 gpushare80 gpuspec33]
#   ILP_WORKLOADS workloads the ILP runs on (full cluster)          [default]
#   EXTRA_WORKLOADS  the other openb pod lists, run with --artifact-score by the greedy and
#                 the ILP only, on EXTRA_SEEDS                      [gpushare20 gpushare100
#                 gpuspec05 gpuspec10 gpuspec20 gpuspec25 cpu0 cpu050 cpu100 cpu200 cpu300]
#   EXTRA_SEEDS   their seeds (about 3 minutes a workload at 42-46) [42-46]
#   POLLUX        Pollux workloads for the JCT table                [1 2 3 4 5 6 7 8]
#   PHILLY_SLICES Philly days as GPUS@DAY for the JCT table         [64@2017-11-14
#                 128@2017-11-11 256@2017-10-19 512@2017-10-08]
#   PHILLY        the Pollux artifact's philly.csv: recut the slices from it (optional;
#                 the committed cuts under OUT/philly-slices/ are used otherwise)
#   OUT           output folder                                     [docs/results/research]
#   G             the gangplan binary                               [target/release/gangplan]
#
# Each run is one `gangplan compare` writing OUT/<trace>/<variant>/ (summary, reports, plots);
# scripts/research/tables.py builds the tables from the per-run reports, so runs can be
# split over several invocations (set WORKLOADS, SEEDS, ... to one part each) and the tables
# rebuilt with `python3 scripts/research/tables.py OUT REF 0`.
set -euo pipefail
cd "$(dirname "$0")/../.."
TRACES=${TRACES:-/work/shared/traces}
SEEDS=${SEEDS-42-51}
ILP_SEEDS=${ILP_SEEDS-42-51}
CUT_SEEDS=${CUT_SEEDS-42-51}
WORKLOADS=${WORKLOADS-"default multigpu20 multigpu30 multigpu40 gpushare40 gpushare60 gpushare80 gpuspec33"}
ILP_WORKLOADS=${ILP_WORKLOADS-default}
EXTRA_WORKLOADS=${EXTRA_WORKLOADS-"gpushare20 gpushare100 gpuspec05 gpuspec10 gpuspec20 gpuspec25 cpu0 cpu050 cpu100 cpu200 cpu300"}
EXTRA_SEEDS=${EXTRA_SEEDS-42-46}
POLLUX=${POLLUX-"1 2 3 4 5 6 7 8"}
PHILLY_SLICES=${PHILLY_SLICES-"64@2017-11-14 128@2017-11-11 256@2017-10-19 512@2017-10-08"}
OUT=${OUT:-docs/results/research}
G=${G:-target/release/gangplan}
A=$TRACES/alibaba-gpu-v2023
REF=$TRACES/kss-fgd-expected-results/analysis_allo_discrete.csv
mkdir -p "$OUT"
start=$(date +%s)
cmp() { "$G" compare "$@" > /dev/null; }
fill=(--trace openb --protocol fill --load 1.3 --reference "$REF")
# The shipped cut (instances/traces): every planner, formulation auto (per-node here).
if [[ -n "$CUT_SEEDS" ]]; then
  cut=("${fill[@]}" --nodes instances/traces/openb_node_list_gpu_node.head120.csv
       --jobs instances/traces/openb_pod_list_default.head300.csv --seeds "$CUT_SEEDS")
  cmp "${cut[@]}" --planners fgd,greedy,ilp --out-dir "$OUT/openb-cut-default/heuristics"
  cmp "${cut[@]}" --planners greedy,ilp --artifact-score --out-dir "$OUT/openb-cut-default/artifact"
fi
for w in $WORKLOADS; do
  full=("${fill[@]}" --nodes "$A/openb_node_list_gpu_node.csv" --jobs "$A/openb_pod_list_$w.csv")
  cmp "${full[@]}" --seeds "$SEEDS" --planners fgd,greedy --out-dir "$OUT/openb-$w/heuristics"
  cmp "${full[@]}" --seeds "$SEEDS" --planners greedy --artifact-score \
    --out-dir "$OUT/openb-$w/artifact"
  if [[ " $ILP_WORKLOADS " == *" $w "* ]]; then
    # formulation auto: the aggregated model on the full cluster (the per-node model with its
    # fragmentation cost does not beat the greedy start within a round's 2 s there).
    cmp "${full[@]}" --seeds "$ILP_SEEDS" --planners ilp --out-dir "$OUT/openb-$w/ilp"
    cmp "${full[@]}" --seeds "$ILP_SEEDS" --planners ilp --artifact-score \
      --out-dir "$OUT/openb-$w/artifact-ilp"
  fi
done
for w in $EXTRA_WORKLOADS; do
  full=("${fill[@]}" --nodes "$A/openb_node_list_gpu_node.csv" --jobs "$A/openb_pod_list_$w.csv"
        --seeds "$EXTRA_SEEDS" --artifact-score)
  cmp "${full[@]}" --planners greedy --out-dir "$OUT/openb-$w/artifact"
  cmp "${full[@]}" --planners ilp --out-dir "$OUT/openb-$w/artifact-ilp"
done
# Time-based replays: every baseline, the greedy and the ILP with the attained-service
# objective (the default), then the ILP without preemption and both with --objective default.
replay() {  # replay NAME ARGS...
  local name=$1; shift
  local o="$OUT/replay-$name"
  cmp "$@" --planners fifo,best-fit,las,drf,fgd,greedy,ilp --out-dir "$o/main"
  cmp "$@" --planners ilp --no-preemption --out-dir "$o/no-preemption"
  cmp "$@" --planners greedy,ilp --objective default --out-dir "$o/default"
}
# Pollux workloads on 64 GPUs (16 nodes of 4, Pollux's default), 60 s rounds.
for k in $POLLUX; do
  replay "pollux-$k" --trace pollux --jobs "$TRACES/pollux-osdi21/workloads/workload-$k.csv"
done
# One-day slices of the Philly log (scripts/research/philly_slice.py; the cut files are
# committed under OUT/philly-slices/, recut from $PHILLY when it is set), 8 GPUs per node,
# 300 s rounds.
for s in $PHILLY_SLICES; do
  gpus=${s%%@*}; day=${s#*@}
  f="$OUT/philly-slices/philly-$gpus-$day.csv"
  if [[ -n "${PHILLY:-}" ]]; then
    mkdir -p "$OUT/philly-slices"
    python3 scripts/research/philly_slice.py "$PHILLY" "$day" "$gpus" "$f"
  fi
  replay "philly-$gpus-$day" --trace philly --jobs "$f" --gpus "$gpus" --gpus-per-node 8 \
    --round 300
done
python3 scripts/research/tables.py "$OUT" "$REF" "$(( $(date +%s) - start ))" > "$OUT/README.md"
echo "wrote $OUT/README.md"
