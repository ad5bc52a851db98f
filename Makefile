# Two commands do all the setup: `make demo` and `make test`.
# Both create .venv from pyproject.toml when it is missing or older than pyproject.toml.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export RAGAS_DO_NOT_TRACK := true

DEMO_GOLD := data/demo
DEMO_OUT  := runs/demo

.PHONY: demo test lint bench clean-demo venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/workbench validate $(DEMO_GOLD)
	$(BIN)/workbench agreement $(DEMO_GOLD)
	$(BIN)/workbench run --candidate data/candidates/rubric-judge@1.yaml --gold $(DEMO_GOLD) \
		--partition development --out $(DEMO_OUT)/rubric-judge@1/development
	$(BIN)/workbench run --candidate data/candidates/rubric-judge@2.yaml --gold $(DEMO_GOLD) \
		--partition development --out $(DEMO_OUT)/rubric-judge@2/development
	$(BIN)/workbench align --gold $(DEMO_GOLD) --partition development \
		--results $(DEMO_OUT)/rubric-judge@1/development/results.jsonl
	$(BIN)/workbench align --gold $(DEMO_GOLD) --partition development \
		--results $(DEMO_OUT)/rubric-judge@2/development/results.jsonl

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check workbench tests bench

bench: $(STAMP)
	$(BIN)/python bench/bench_align.py

clean-demo:
	rm -rf $(DEMO_OUT)
