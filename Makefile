# Two commands: `make run` opens the workbench, `make test` runs the suite. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# The older-MindSpore leg: the job tests, with the jobs run by a second venv holding the oldest
# installable MindSpore build (the boards run 2.4.10, which has no wheel) and NumPy 1.23.
COMPAT_VENV ?= .venv-compat
COMPAT_PY := $(COMPAT_VENV)/bin/python
COMPAT_STAMP := $(COMPAT_VENV)/.installed
COMPAT_PACKAGES := mindspore-dev==2.5.0.dev20250202 numpy==1.23.5
# The job tests whose jobs import MindSpore or NumPy on a version-dependent path (device selection
# and read-back, profiler, probes, package scan, alignment, data, the monitor's reads of Adam's
# moment). Left to the main leg: export (MindIR/Lite, ~5 min) and test_profiling (its stand-in program builds a JobContext from
# workbench.config.layers, which needs pyyaml; the train job's profiler path is covered by test_train_profile).
COMPAT_TESTS := tests/jobs/test_train.py tests/jobs/test_train_profile.py tests/jobs/test_env_job.py \
	tests/jobs/test_align_job.py tests/jobs/test_data_job.py tests/jobs/test_monitor_weights.py

.PHONY: run test test-compat lint bench bench-quick clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --compile -e '.[mindspore,serve,test]'
	$(PY) -m compileall -q workbench screens jobs
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/ms-workbench

# Extra pytest arguments (.ci/run adds --durations=25).
PYTEST_ARGS ?=

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --config pyproject.toml
	$(VENV)/bin/vermin --no-tips --violations -t=3.9- workbench jobs
	$(PY) -m pytest $(PYTEST_ARGS)

$(COMPAT_STAMP): Makefile
	test -x $(COMPAT_PY) || $(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_PY) -m pip install --quiet --upgrade pip
	$(COMPAT_PY) -m pip install --quiet $(COMPAT_PACKAGES)
	touch $(COMPAT_STAMP)

# The tests run in .venv (pytest, textual); every job they start runs under .venv-compat
# (MS_WORKBENCH_PYTHON is the default of the config key `python`).
# A private lock folder: module-scoped job fixtures start before the per-test one exists.
test-compat: $(STAMP) $(COMPAT_STAMP)
	locks=$$(mktemp -d) && MS_WORKBENCH_LOCK_DIR=$$locks MS_WORKBENCH_PYTHON=$(abspath $(COMPAT_PY)) \
		$(PY) -m pytest $(PYTEST_ARGS) $(COMPAT_TESTS); rc=$$?; rm -rf $$locks; exit $$rc

# Every bench, one after another, into one scratch folder (bench/run_all.py: ~30 min on a quiet 2-core machine;
# bench-quick: tiny parameters, a check that every bench runs). docs/ is not written: BENCH_ARGS=--update-docs.
bench: $(STAMP)
	$(PY) bench/run_all.py $(BENCH_ARGS)

bench-quick: $(STAMP)
	$(PY) bench/run_all.py --quick $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(COMPAT_VENV)
