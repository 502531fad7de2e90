#!/usr/bin/env bash
# benchmarks/active/cluster_next_replay.py --data mnist-test on a CUDA machine (issue 43,
# item 4: `cluster next` with a deep model): one process per seed and arm, side by side on
# one GPU (torch threads 1 each), each fitting the whole pool first (its target) and then its
# arm's curve, BayesSCDC with 30 epochs and one start per fit. Each process rewrites its curves
# CSV after every fit and is stopped after $LIMIT seconds (default 480), so a run cut short
# keeps what it measured. Output under $OUT (default /tmp/cluster_next_gpu): curves_s*_*.csv,
# log_s*_*.txt, run.txt (the machine, the command, each process's exit status: 124 when the
# limit stopped it) and gpu.csv (nvidia-smi every 20 s). A device that sends back only a few
# files may need the logs moved out of $OUT before the call ends.
# Merge them where the repository lives:
#
#     .venv/bin/python benchmarks/active/cluster_next_replay.py --data mnist-test \
#         --epochs 30 --n-init 1 --device cuda --fractions <the same> \
#         --from-csv <OUT>/curves_s*_*.csv --notes <notes.md> \
#         --output benchmarks/active/results/cluster_next_replay_mnist_test.md
#
# SEEDS (default "0 1 2 3") and FRACTIONS (the schedule) may be set; extra arguments go to
# every process (later options win: --epochs 2 --subsample 2000 for a quick check). Python and
# data as benchmarks/cluster/gpu_mnist.sh finds them (benchmarks/_gpu.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root

# shellcheck source=../_gpu.sh
source benchmarks/_gpu.sh

use_cuda_python gpu_cluster_next.sh
mnist_data_root gpu_cluster_next.sh
out="${OUT:-/tmp/cluster_next_gpu}"
mkdir -p "$out"
seeds="${SEEDS:-0 1 2 3}"
fractions="${FRACTIONS:-0.02 0.05 0.1 0.15 0.2 0.3 0.4 0.5 0.6 0.7 0.85}"
limit="${LIMIT:-480}"
{
    date -u "+%Y-%m-%d %H:%M UTC"
    "$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, torch.cuda.get_device_name())'
    echo "seeds: $seeds; fractions: $fractions; limit: $limit s; extra arguments: $*"
} > "$out/run.txt"
monitor=""
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 20 \
        > "$out/gpu.csv" 2>&1 &
    monitor=$!
    trap 'kill "$monitor" 2>/dev/null || true' EXIT
fi
fits=() names=()
for seed in $seeds; do
    for arm in random next; do
        # shellcheck disable=SC2086  # the fractions are words
        timeout "$limit" "$py" benchmarks/active/cluster_next_replay.py --data mnist-test \
            --device cuda --seeds "$seed" --arms "$arm" --epochs 30 --n-init 1 \
            --fractions $fractions --curves "$out/curves_s${seed}_${arm}.csv" "$@" \
            > "$out/log_s${seed}_${arm}.txt" 2>&1 &
        fits+=($!) names+=("s${seed}_${arm}")
    done
done
for i in "${!fits[@]}"; do  # a fit stopped by the limit (exit 124) leaves its curve so far
    status=0
    wait "${fits[$i]}" || status=$?
    echo "${names[$i]}: exit $status" >> "$out/run.txt"
done
echo "gpu_cluster_next.sh: done; curves in $out" >&2
