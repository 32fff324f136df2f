# Every target creates .venv on first use. STUDY=<dir> picks the study (default: the flagship at the root).
PYTHON ?= python3
VENV   := .venv
STUDY  ?= .
# EXECUTOR=ray runs score and stats as Ray tasks (RAY_ADDRESS=<cluster>, else a local instance); empty: the config's
EXECUTOR ?=
RAY_ADDRESS ?=
EXEC_ARGS := $(if $(EXECUTOR),--executor $(EXECUTOR)) $(if $(RAY_ADDRESS),--ray-address $(RAY_ADDRESS))
# WORKERS=N scores N arms at once in N processes (local) or gives a local Ray instance N CPUs; empty: the config's
WORKERS ?=
WORKER_ARGS := $(if $(WORKERS),--workers $(WORKERS))
# llama.cpp for any x86-64 with AVX2 (a plain portable build has no SIMD and decodes ~10x slower)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
RUN    := $(VENV)/bin/python -m harness
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-12)

.PHONY: help venv test demo all status config data select freeze estimate build-arms score answer judge-sample stats audit report rehearse bench

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/' | expand -t 14

$(STAMP):
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# the CPU build of torch first, from local disk; a plain `torch` requirement would pull a CUDA build
	$(VENV)/bin/python -m pip install --quiet torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(VENV)/bin/python -m pip install --quiet -e '.[test,bench,plugins]'
	rm -f $(VENV)/.installed-*
	touch $@

# Byte-compile the package and tests once: where PYTHONDONTWRITEBYTECODE is set, every process the suite or
# a stage starts would otherwise compile each module it imports from source again
BYTECODE := $(VENV)/bin/python -m compileall -q harness tests benchmarks > /dev/null

venv: $(STAMP)  ## create the virtual environment and install pinned dependencies

# TEST_WORKERS=N runs the suite in N processes (pytest-xdist; default: one per core); the 25 slowest tests are listed
TEST_WORKERS ?= auto
# mypy (about half a minute of one core) runs beside the suite, its output held until the suite ends; the
# target fails if either does
test: $(STAMP)  ## lint (ruff), then type-check (mypy) beside the suite run in parallel; lists the 25 slowest tests
	$(VENV)/bin/python -m ruff check harness tests benchmarks
	$(BYTECODE)
	@echo "$(VENV)/bin/python -m mypy (beside the suite; its output follows the suite's)"
	@$(VENV)/bin/python -m mypy > $(VENV)/mypy.log 2>&1 & types=$$!; \
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup --durations=25 tests; \
	suite=$$?; wait $$types; typed=$$?; cat $(VENV)/mypy.log; \
	test $$suite -eq 0 -a $$typed -eq 0

demo: $(STAMP)  ## run the demo studies end to end (estimate, build-arms, score, answer, stats, audit, report): demo, then handbook
	$(BYTECODE)
	$(MAKE) --no-print-directory estimate build-arms score answer stats audit report STUDY=examples/demo
	$(MAKE) --no-print-directory build-arms score stats audit report STUDY=examples/handbook

# the stage order is harness.pipeline.stages.STAGES; `harness run-all` stops at the first failing stage and names it
all: $(STAMP)  ## every stage in order: select, freeze, estimate, build-arms, score, answer, stats, audit, report
	$(RUN) run-all --study $(STUDY) --rescore $(RESCORE) $(EXEC_ARGS) $(WORKER_ARGS)

status: $(STAMP)  ## show the grid: chunk sets, cells scored / missing / stale, and the next target to run
	$(RUN) status --study $(STUDY)

config: $(STAMP)  ## check configs/study.yaml and print the effective config (defaults filled in)
	$(RUN) config --study $(STUDY)

data: $(STAMP)  ## fetch every declared source that is missing, verify the rest (data/SOURCES.lock)
	$(RUN) fetch --study $(STUDY)

select: $(STAMP)  ## draw the seeded selection into selection/selection.json
	$(RUN) select --study $(STUDY)

freeze: $(STAMP)  ## write frozen_config.json (hashes of every input that can move a result)
	$(RUN) freeze --study $(STUDY)

estimate: $(STAMP)  ## before paying: calls, tokens and dollars of every paid arm, checked against the spend cap
	$(RUN) estimate --study $(STUDY)

build-arms: $(STAMP)  ## build every arm's chunk set (LLM calls cached)
	$(RUN) build-arms --study $(STUDY)

score: $(STAMP)  ## rank every arm under every retriever and write per-question results
	$(RUN) score --study $(STUDY) $(EXEC_ARGS) $(WORKER_ARGS)

answer: $(STAMP)  ## the fixed reader answers the configured cells from B source tokens; the judge scores nuggets (LLM calls cached)
	$(RUN) answer --study $(STUDY)

judge-sample: $(STAMP)  ## export a seeded sample of judge verdicts for the human spot check (results/judges/spot_check.csv)
	$(RUN) judge-sample --study $(STUDY) --out $(STUDY)/results/judges/spot_check.csv

stats: $(STAMP)  ## run the plan's families: verdict tables and forest plots
	$(RUN) stats --study $(STUDY) $(EXEC_ARGS)

# RESCORE=K: cells re-run from the frozen inputs and compared byte for byte (harness audit --rescore; `all`: every cell)
RESCORE ?= 3
audit: $(STAMP)  ## recompute every family and compare with the released statistics; re-run RESCORE seeded cells
	$(RUN) audit --study $(STUDY) $(if $(filter-out 0,$(RESCORE)),--rescore $(RESCORE))

report: $(STAMP)  ## the study report: results/report/index.html (self-contained), report.md, tables/, figures/
	$(RUN) report --study $(STUDY)

# SCALE=small|paper; the twin goes to $(REHEARSAL)/<study>-<scale> (a rerun resumes there)
SCALE ?= small
REHEARSAL ?= /tmp/harness-rehearsal
rehearse: $(STAMP)  ## the whole study on a simulated twin (data and models simulated): stage times, memory, blocked tests
	$(RUN) rehearse --study $(STUDY) --out $(REHEARSAL)/$(notdir $(abspath $(STUDY)))-$(SCALE) --scale $(SCALE) $(if $(EXECUTOR),--executor $(EXECUTOR)) $(if $(WORKERS),--score-workers $(WORKERS))

# every benchmark runs to the end and prints each goal as met / NOT met; only an error fails the target
bench: $(STAMP)  ## run every benchmark and print its figures and goals (QUICK=1: tiny sizes, seconds)
	@failed=""; for b in benchmarks/bench_*.py; do echo "== $$b"; \
	  $(VENV)/bin/python $$b $(if $(QUICK),--quick) || failed="$$failed $$b"; done; \
	if [ -n "$$failed" ]; then echo "bench: errors in$$failed"; exit 1; fi
