# Two commands do all the setup: `make demo` and `make test`.
# Both create .venv from pyproject.toml when it is missing or older than pyproject.toml.
# EXTRAS: the optional dependency groups installed into .venv (CI: `make test EXTRAS=test,ray`,
# so the Ray executor's tests run); .venv is reinstalled when it was made with other EXTRAS.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
EXTRAS ?= test
# The extras .venv was installed with (a stamp from before EXTRAS existed is empty: test).
STAMP_EXTRAS := $(or $(strip $(shell cat $(STAMP) 2>/dev/null)),test)
export RAGAS_DO_NOT_TRACK := true
# Byte code is cached, under .venv rather than beside the sources, even where the environment
# sets PYTHONDONTWRITEBYTECODE (an empty value turns it off): the suite starts hundreds of Python
# processes (CLI runs, notebook kernels, pytest runs), and without a cache each one compiles
# what it imports again; pytest alone spends ~9 s per process rewriting the test modules.
export PYTHONPYCACHEPREFIX ?= $(abspath $(VENV))/pycache
export PYTHONDONTWRITEBYTECODE :=

DEMO_GOLD := data/demo
DEMO_OUT  := runs/demo

.PHONY: demo test test-fast lint bench clean-demo venv FORCE

# `make venv` also compiles again the modules changed since (compileall skips the current ones):
# a stale .pyc is recompiled in memory at every start under PYTHONDONTWRITEBYTECODE=1.
venv: $(STAMP)
	env -u PYTHONPYCACHEPREFIX $(BIN)/python -m compileall -q -j 0 workbench

$(STAMP): pyproject.toml $(if $(filter $(EXTRAS),$(STAMP_EXTRAS)),,FORCE)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# Byte code beside the installed files (pip compiles what it installs, the editable package
	@# is compiled here), not under the cache prefix this Makefile sets: a command run directly
	@# (.venv/bin/workbench, as the README shows) reads it even under PYTHONDONTWRITEBYTECODE=1,
	@# common in containers (bench/bench_cli.py --no-bytecode measures the difference).
	env -u PYTHONPYCACHEPREFIX $(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	env -u PYTHONPYCACHEPREFIX $(BIN)/python -m compileall -q -j 0 workbench
	@echo '$(EXTRAS)' > $(STAMP)

DEMO_CACHE := $(DEMO_OUT)/.cache
# Two endings: rubric-judge@2 fails its controls (held-out data is not used); rubric-judge@3
# fixes those failures and is held to the demo policy, which the demo's sample sizes can meet.
DEMO_CANDIDATES := rubric-judge@2 rubric-judge@3
DEMO_POLICY := data/policies/support-release@3.yaml
DEMO_CERT_GOLD := $(DEMO_OUT)/gold
# The demo LLM judge talks to the local fake server, which binds a free port and exports its URL
# as WORKBENCH_DEMO_LLM_URL (the candidate's endpoint.base_url_env); the key is a placeholder,
# read from the environment like a real one and never written anywhere.
export DEMO_LLM_API_KEY ?= demo-placeholder-key

demo: $(STAMP)
	@chmod -R u+w $(DEMO_OUT) 2>/dev/null || true
	@rm -rf $(DEMO_OUT)
	$(BIN)/workbench validate $(DEMO_GOLD)
	$(BIN)/workbench agreement $(DEMO_GOLD)
	@for judge in rubric-judge@1 rubric-judge@2 rubric-judge@3; do \
		$(BIN)/workbench run --candidate data/candidates/$$judge.yaml --gold $(DEMO_GOLD) \
			--partition development --out $(DEMO_OUT)/$$judge/development --cache $(DEMO_CACHE) || exit $$?; \
	done
	$(BIN)/workbench fake-llm --port 0 --export WORKBENCH_DEMO_LLM_URL --latency 0.05 --responder workbench.demo.fake_llm:respond \
		--require-api-key-env DEMO_LLM_API_KEY -- \
		$(BIN)/workbench run --candidate data/candidates/support-llm-judge@1.yaml --gold $(DEMO_GOLD) \
		--partition development --out $(DEMO_OUT)/support-llm-judge@1/development --cache $(DEMO_CACHE) \
		--concurrency 16 --budget-usd 0.50
	@for judge in rubric-judge@1 rubric-judge@2 rubric-judge@3 support-llm-judge@1; do \
		echo; echo "=== $$judge ==="; \
		$(BIN)/workbench align --gold $(DEMO_GOLD) --partition development \
			--results $(DEMO_OUT)/$$judge/development/results.jsonl || exit $$?; \
	done
	@# Certify a fresh copy under runs/, so data/demo itself is never touched. The held-out uses
	@# go to the project's ledger (workbench.yaml: held_out_ledger, under runs/), which identifies
	@# them by content: on a second `make demo` certify refuses the same held-out cases without a
	@# reason (held_out_reuse, nothing recorded), and the demo says so and certifies again with
	@# one; certify then prints how often the held-out content was used before.
	@cp -R $(DEMO_GOLD) $(DEMO_CERT_GOLD)
	@for judge in $(DEMO_CANDIDATES); do \
		echo; echo "=== certification of $$judge under $(DEMO_POLICY) (controls first, then held-out, once) ==="; \
		set -- --candidate data/candidates/$$judge.yaml --policy $(DEMO_POLICY) --gold $(DEMO_CERT_GOLD) \
			--reports $(DEMO_OUT)/reports; \
		out=$$($(BIN)/workbench certify "$$@" 2>&1); status=$$?; \
		if [ $$status -eq 2 ] && printf '%s' "$$out" | grep -q held_out_reuse; then \
			echo "The held-out content was used by an earlier make demo (held_out_reuse): certifying again, with the reason recorded."; \
			$(BIN)/workbench certify "$$@" --rerun-reason "make demo re-run"; status=$$?; \
		else printf '%s\n' "$$out"; fi; \
		if [ $$status -eq 2 ]; then exit 2; fi; \
		echo "(exit $$status: 0 certified, 1 quality failed, 3 evaluation incomplete, 4 review required)"; \
	done
	@echo
	$(BIN)/workbench verify $(DEMO_OUT)/reports --gold $(DEMO_CERT_GOLD)
	$(BIN)/workbench reports --reports $(DEMO_OUT)/reports --ledger
	@echo; echo "Open the reports: $(DEMO_OUT)/reports/rubric-judge/2/1/report.html and $(DEMO_OUT)/reports/rubric-judge/3/1/report.html"

# The suite runs on pytest-xdist workers (two more than the cores, as many as the available
# memory holds; why and the measurements: tests/_workers.py; PYTEST_WORKERS=2 or 0 to choose), a
# test module per worker at a time (--dist loadscope), so module fixtures (a certified report, a
# JupyterLab server) are built once. The modules that mostly wait go first, then those with
# notebook and browser tests (tests/_schedule.py turns off xdist's reordering by test count), so
# no long module starts last. The 15 slowest tests are listed at the end (DURATIONS=60 for more:
# pytest reads PYTEST_ADDOPTS before this command line, so a --durations there would lose).
PYTEST_WORKERS ?= $(shell $(PYTHON) tests/_workers.py 2>/dev/null || echo auto)
DURATIONS ?= 15
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadscope --durations=$(DURATIONS)
# The suite's scratch files (gold copies, runs, reports and ledgers: ~13,000 files, with an fsync
# per evidence append) go to a RAM-backed tmpfs when the machine has one with room: /dev/shm with
# 4 GiB free (a container's 64 MiB /dev/shm is passed over). That takes a fifth of the suite's
# system CPU and ~7% of its wall time on the 2-core machine of bench/README.md ("Test suite").
# Only failed tests keep their directories there (RAM). TEST_TMPDIR= keeps the system's default.
# Probed once, when a test recipe first expands it (not on every make, as := would).
TEST_TMPDIR ?= $(eval TEST_TMPDIR := $(shell $(PYTHON) -c "import os; d = '/dev/shm'; ok = os.path.isdir(d) and os.access(d, os.W_OK); s = os.statvfs(d) if ok else None; print(os.path.join(d, f'workbench-tests-{os.getuid()}') if s and s.f_bavail * s.f_frsize >= 4 << 30 else '')" 2>/dev/null))$(TEST_TMPDIR)
PYTEST = $(if $(TEST_TMPDIR),mkdir -p $(TEST_TMPDIR) && TMPDIR=$(TEST_TMPDIR) )$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) $(if $(TEST_TMPDIR),-o tmp_path_retention_policy=failed)

test: $(STAMP)
	$(PYTEST)

# Everything but the tests that launch chromium or execute a notebook (certification included);
# `make test` runs those too.
test-fast: $(STAMP)
	$(PYTEST) -m "not browser and not notebook"

# What CI enforces on the code: formatting, lint (lines <= 100; complexity <= 10 and <= 50
# statements a function, pyproject.toml), mypy --strict on workbench/, and no function over 80
# lines but those bench/long_functions.txt lists (that list only shrinks).
lint: $(STAMP)
	$(BIN)/ruff format --check workbench tests bench
	$(BIN)/ruff check workbench tests bench
	$(BIN)/mypy
	$(BIN)/python bench/code_size.py --check

bench: $(STAMP)
	$(BIN)/python bench/bench_cli.py
	$(BIN)/python bench/bench_align.py
	$(BIN)/python bench/bench_align_cold.py
	$(BIN)/python bench/bench_import.py
	$(BIN)/python bench/bench_evidence.py
	$(BIN)/python bench/bench_runs.py
	$(BIN)/python bench/bench_engine.py
	$(BIN)/python bench/bench_ranking.py
	$(BIN)/python bench/bench_llmbar.py
	$(BIN)/python bench/bench_certify.py
	$(BIN)/python bench/bench_patches.py
	$(BIN)/python bench/bench_charts.py
	$(BIN)/python bench/bench_widget.py
	$(BIN)/python bench/bench_tests.py --by-process

clean-demo:
	@chmod -R u+w $(DEMO_OUT) 2>/dev/null || true
	rm -rf $(DEMO_OUT)

# Forces the .venv stamp when EXTRAS differ from the ones it was installed with.
FORCE:
