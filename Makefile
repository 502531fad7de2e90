# Two commands for a newcomer on a fresh machine: `make demo` and `make test`.
# Both create a virtual environment in .venv and install everything they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_VERSION ?= 2.13.0

.PHONY: demo test test-fast lint docs install clean

# setup.py builds the C kernels (annotators/_confusion_kernel.c, plackett_luce/_pair_kernel.c, data/_csv_ids.c)
# in place
$(STAMP): pyproject.toml setup.py src/crowdbayes/annotators/_confusion_kernel.c \
		src/crowdbayes/models/plackett_luce/_pair_kernel.c src/crowdbayes/data/_csv_ids.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: its CPU wheel; any other torch requirement pulls CUDA packages
	$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# the answers and worker estimates go to demo/; the summary (with the accuracy) to the terminal
demo: $(STAMP)
	mkdir -p demo
	$(BIN)/crowdbayes labels fit --dataset rte --model hierarchical --seed 0 \
		-o demo/rte_tasks.csv --workers-out demo/rte_workers.csv --force

# style, formatting, and the import layers of pyproject.toml's [tool.importlinter]
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports

# the documentation site, in strict mode: a warning (a broken link, a page left out of the
# navigation, a docstring mkdocstrings cannot read) fails it; tests/test_docs.py runs its code
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

THREADS := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# test processes (pytest-xdist); each test file runs whole in one process, so its fixtures
# (a Dask cluster, a fitted model) are built once
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadfile

# everything (CI)
test: lint docs
	$(THREADS) $(BIN)/python -m pytest -q $(PARALLEL)

# everything but the tests marked slow (real data, long fits): a couple of minutes
test-fast: lint
	$(THREADS) $(BIN)/python -m pytest -q $(PARALLEL) -m "not slow"

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
	find src -name '*.so' -delete
