# L-ReAct course unit. Two commands on a fresh machine with Python 3.11:
#   make lab    set up everything and open the course in JupyterLab (the student's view)
#   make test   set up everything and run every test (what CI runs)
# For instructors:
#   make formgrader   JupyterLab at the repository root with nbgrader's formgrader enabled
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lreact-installed

.PHONY: setup lab formgrader test unit selfcheck release system-deps benchmark clean

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "L-ReAct needs Python 3.11 or newer, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-test.txt -e .
	@touch $(STAMP)

setup: $(STAMP)

# JupyterLab refuses to start as root unless told (containers, CI machines).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

# Students see no nbgrader instructor interface (no Formgrader menu, no "Create Assignment"
# sidebar; the Validate button stays): jupyter-config/student/ comes first on the config path.
# Instructors get all of nbgrader back with jupyter-config/instructor/.
STUDENT_CONFIG    := JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/student$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}"
INSTRUCTOR_CONFIG := JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/instructor$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}"

lab: setup
	$(STUDENT_CONFIG) $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ALLOW_ROOT)

formgrader: setup
	$(INSTRUCTOR_CONFIG) $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ALLOW_ROOT)

system-deps:
	@bash scripts/system-deps.sh

# Every test: the grading proofs (selfcheck), then the pytest suite (unit, notebooks, browser).
test: setup system-deps
	$(PY) -m autograder selfcheck
	$(PY) -m pytest -m "not selfcheck"

unit: setup
	$(PY) -m pytest -m "not slow and not browser"

selfcheck: setup
	$(PY) -m autograder selfcheck

release: setup
	$(PY) -m autograder release

benchmark: setup
	$(PY) -m scripts.benchmark_grading

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis artifacts .grading
