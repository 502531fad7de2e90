# Shell functions of the GPU launchers; sourced by benchmarks/cluster/gpu_mnist.sh and
# benchmarks/active/gpu_cluster_next.sh.
#
# cuda_python: prints the first python that has a torch with CUDA and the package's
# dependencies (numpy, pandas, scipy): $PYTHON if set, then /opt/torch/.venv/bin/python3,
# python3, .venv/bin/python (the repository's .venv holds torch's CPU wheel, so it rarely
# qualifies); returns 1 when none has. The package itself comes from src/ (PYTHONPATH=src).
cuda_python() {
    local candidate
    for candidate in "${PYTHON:-}" /opt/torch/.venv/bin/python3 python3 .venv/bin/python; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import numpy, pandas, scipy, torch, sys
sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

# mnist_data_root NAME: exports CROWDBAYES_DATA (default: .gpudata in the repository, a folder
# that must look like ../shared/data: labels/ and prefs/ are made empty, clustering/mnist holds
# the test images copied there before the tree is sent) and exits 2, naming the launcher NAME,
# when the MNIST test images are not there.
mnist_data_root() {
    if [ -z "${CROWDBAYES_DATA:-}" ]; then
        export CROWDBAYES_DATA="$PWD/.gpudata"
        mkdir -p "$CROWDBAYES_DATA/labels" "$CROWDBAYES_DATA/prefs"
    fi
    if [ ! -f "$CROWDBAYES_DATA/clustering/mnist/t10k-images-idx3-ubyte.gz" ]; then
        echo "$1: no MNIST test images under CROWDBAYES_DATA=$CROWDBAYES_DATA" \
            "(clustering/mnist/t10k-*-idx*-ubyte.gz); copy them to .gpudata/clustering/mnist" >&2
        exit 2
    fi
}

# use_cuda_python NAME [HINT]: sets py to cuda_python's choice, puts src/ first on PYTHONPATH
# and BLAS at one thread; exits 2, naming the launcher NAME (and HINT), when no python has
# CUDA.
use_cuda_python() {
    if ! py=$(cuda_python); then
        echo "$1: no python here has a torch with CUDA (and numpy, pandas, scipy): tried" \
            "\$PYTHON, /opt/torch/.venv/bin/python3, python3, .venv/bin/python. Set PYTHON" \
            "to one${2:+, $2}." >&2
        exit 2
    fi
    export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
    export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
}
