# Two commands: `make run` opens the workbench, `make test` runs the suite. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --compile -e '.[mindspore,serve,test]'
	$(PY) -m compileall -q workbench screens jobs
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/ms-workbench

test: $(STAMP)
	$(VENV)/bin/lint-imports --config pyproject.toml
	$(VENV)/bin/vermin --no-tips --violations -t=3.9- workbench jobs
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) bench/data_load.py
	$(PY) bench/startup.py

clean:
	rm -rf $(VENV)
