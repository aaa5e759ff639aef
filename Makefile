# Every target bootstraps .venv itself; a fresh clone needs nothing else.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: index test check bench publish clean-venv agent-clis

# a download cut off mid-wheel (seen in CI) is resumed, and a failed install step tried once more
export PIP_RESUME_RETRIES ?= 20
PIP := $(BIN)/python -m pip install -q

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) --upgrade pip || $(PIP) --upgrade pip
	# the CPU build of torch first, so nothing later pulls a CUDA build
	$(PIP) "torch==2.13.0" || $(PIP) "torch==2.13.0"
	$(PIP) -e ".[dev]" || $(PIP) -e ".[dev]"
	touch $(STAMP)

index: $(STAMP)
	$(BIN)/funes index --auto
	$(BIN)/funes status
	$(BIN)/funes recall "why did we move off the streaming parser" -k 3

# make publish REMOTE=acme/mem (or FUNES_REMOTE=acme/mem); CREATE=1 creates the repo, private
REMOTE ?= $(FUNES_REMOTE)
publish: $(STAMP)
	@test -n "$(REMOTE)" || { echo "make publish: set REMOTE=owner/name (or FUNES_REMOTE)" >&2; exit 2; }
	$(BIN)/funes publish "$(REMOTE)" $(if $(CREATE),--create)

test: $(STAMP)
	$(BIN)/python -m pytest -q

# the rules CI enforces: format, lint, types (what is annotated), the layer map, the light CLI
check: $(STAMP)
	$(BIN)/ruff format --check pipeline tests bench
	$(BIN)/ruff check pipeline tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q tests/test_cli_light.py tests/test_docs.py

bench: $(STAMP)
	$(BIN)/python bench/embed_bench.py
	$(BIN)/python bench/index_bench.py
	$(BIN)/python bench/recall_latency.py --fusions mm:0.8,z:0.65,conf:0.7:4:0
	# every public suite in full (LoCoMo 1,982, LongMemEval oracle pooled 470, LongMemEval-S 36) and the dev set;
	# the vector caches make reruns cost indexing and recall only
	$(BIN)/python bench/quality.py --full --fusions rrf,z:0.65,conf:0.7:4:0,mm:0.8+1 --cache bench/out/quality/vectors.npz
	$(BIN)/python bench/devset_eval.py --fusions rrf,z:0.65,conf:0.7:4:0,mm:0.8+1 --variants tool=1,bridge=0

# Claude Code and Codex from npm, Hermes from PyPI, outside the project venv (tests/test_agent_clis.py finds them)
agent-clis:
	-timeout 150 npm install --prefix .agent-clis --no-audit --no-fund @openai/codex @anthropic-ai/claude-code >/dev/null 2>&1
	test -x .agent-clis/hermes-venv/bin/python || python3 -m venv .agent-clis/hermes-venv
	timeout 150 .agent-clis/hermes-venv/bin/pip install -q hermes-agent >/dev/null 2>&1

clean-venv:
	rm -rf $(VENV)
