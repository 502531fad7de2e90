#!/usr/bin/env bash
# benchmarks/cluster/cluster_mnist.py on a CUDA machine: the MNIST test images with tasks
# simulated in the real scheme (workers sort their tasks: --scheme sort), seeds 0-2, BayesSCDC
# with and without links (K=50, 30 epochs, 3 restarts, Adam 1e-3, link_weight 0.5),
# LinkClustering (K=15) and the workers' own groupings. About 7-8 minutes on an H100 (0.7-0.8 s
# per epoch, 6 fits of 90 epochs, plus about 15 s of LinkClustering per seed).
#
# The repository's .venv holds torch's CPU wheel (`make install`), so this uses the first
# python that has a torch with CUDA and the package's dependencies: $PYTHON if set, then
# /opt/torch/.venv/bin/python3, python3, .venv/bin/python; the package comes from src/
# (PYTHONPATH=src). Data: $CROWDBAYES_DATA, else .gpudata in the repository (copy
# $CROWDBAYES_DATA/clustering/mnist to .gpudata/clustering/mnist before sending the tree).
# The report goes to $OUT/cluster_mnist_tasks_gpu.md when $OUT is set, else to
# benchmarks/cluster/results/; it is rewritten after every fit, so a run cut short keeps what
# it measured. Extra arguments go to cluster_mnist.py (later options win: --seeds 0 --epochs 2).
#
#     benchmarks/cluster/gpu_mnist.sh
#     benchmarks/cluster/gpu_mnist.sh --seeds 0 --epochs 2    # a quick check of the setup
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root

# shellcheck source=../_gpu.sh
source benchmarks/_gpu.sh

use_cuda_python gpu_mnist.sh \
    "or run benchmarks/cluster/cluster_mnist.py on a CPU (slow: about 2.5 s per epoch)"
mnist_data_root gpu_mnist.sh
output="${OUT:-benchmarks/cluster/results}/cluster_mnist_tasks_gpu.md"
echo "gpu_mnist.sh: $py ($("$py" -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'))," \
    "report to $output" >&2
exec "$py" benchmarks/cluster/cluster_mnist.py --device cuda --threads 1 --scheme sort \
    --seeds 0 1 2 --epochs 30 --n-init 3 --learning-rate 1e-3 --link-weight 0.5 \
    --link-clusters 15 --link-n-init 5 --link-n-polish 2 \
    --output "$output" --rows "${output%.md}.json" "$@"
