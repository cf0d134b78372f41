# jupyter-mcp — the two commands a user needs:
#
#   make run     fresh clone -> .venv -> install -> build the labextension -> JupyterLab on notebooks/
#   make test    fresh clone -> everything the tests need -> the whole pytest suite
#
# Every step is a file target or a stamp under .venv/.stamps, so a second run reuses the venv and
# redoes only what changed. `make VERBOSE=1 ...` shows the output of the set-up steps.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
STAMPS := $(VENV)/.stamps
export PATH := $(BIN):$(PATH)
export VIRTUAL_ENV := $(VENV)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

PYTEST_TIMEOUT ?= 300
PYTEST_ARGS ?=

# Set-up steps print their output only when they fail (VERBOSE=1 shows it always).
ifeq ($(VERBOSE),1)
QUIET :=
else
QUIET := sh -c 'log=$$(mktemp); "$$@" >"$$log" 2>&1 && { rm -f "$$log"; exit 0; }; \
	rc=$$?; cat "$$log"; rm -f "$$log"; exit $$rc' quiet
endif

LABEXT_OUT := jupyter_mcp/labextension
LABEXT_BUILT := $(LABEXT_OUT)/package.json
LABEXT_NODE := labextension/node_modules/.jupyter-mcp-installed
LABEXT_SOURCES := $(shell find labextension/src labextension/style labextension/scripts -type f \
	2>/dev/null) labextension/package.json labextension/tsconfig.json jupyter_mcp/lab/protocol.json
# The MCP Apps view pages, built by the same jlpm build (scripts/build-views.mjs).
VIEWS_BUILT := $(foreach view,cell-outputs variables diff,jupyter_mcp/views/static/$(view).html)

.PHONY: help run test test-deps install labextension chromium kernels r-kernel npm-tools lint \
	format demos wheel clean

help:
	@echo "make run     JupyterLab with jupyter-mcp on notebooks/ (prints URL, token, curl line)"
	@echo "make test    everything the tests need, then the whole test suite"
	@echo "make lint    ruff check + format --check, mypy; eslint, prettier, stylelint --check"
	@echo "make demos   run the notebooks/ demos against a server and save their outputs"
	@echo "make wheel   build dist/jupyter_mcp_ide-*.whl (labextension included)"
	@echo "make clean   remove the venv, built assets and node_modules"

# --- Python ---------------------------------------------------------------------------------

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (need Python 3.10+)"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
		{ echo "error: $(PYTHON) is $$($(PYTHON) --version 2>&1); jupyter-mcp needs Python 3.10+"; exit 1; }
	@echo "==> creating .venv with $$($(PYTHON) --version)"
	@$(QUIET) $(PYTHON) -m venv $(VENV)

# The editable install: the build hook is skipped (SKIP_JUPYTER_BUILDER) because the
# labextension is built by its own target below. A reinstall first drops the `develop` link so
# pip never writes through it into jupyter_mcp/labextension.
$(STAMPS)/install: pyproject.toml | $(BIN)/python
	@echo "==> installing jupyter-mcp-ide (editable, with the test and collab extras) into .venv"
	@$(QUIET) $(BIN)/python -m pip install -q \
		"hatchling>=1.18" "hatch-jupyter-builder>=0.9" editables "jupyterlab>=4.6,<5"
	@if [ -L $(VENV)/share/jupyter/labextensions/jupyter-mcp ]; then \
		rm $(VENV)/share/jupyter/labextensions/jupyter-mcp; fi
	@SKIP_JUPYTER_BUILDER=1 $(QUIET) $(BIN)/python -m pip install -q --no-build-isolation -e ".[test,collab]"
	@mkdir -p $(STAMPS) && touch $@

install: $(STAMPS)/install

# --- the JupyterLab extension ---------------------------------------------------------------

$(LABEXT_NODE): labextension/package.json labextension/yarn.lock labextension/.yarnrc.yml \
		| $(STAMPS)/install
	@command -v node >/dev/null || { echo "error: node not found (need Node.js 20.19+)"; exit 1; }
	@echo "==> installing the labextension's npm dependencies (jlpm install)"
	@cd labextension && $(QUIET) $(BIN)/jlpm install
	@touch $@

$(LABEXT_BUILT) $(VIEWS_BUILT) &: $(LABEXT_SOURCES) $(LABEXT_NODE)
	@echo "==> building the labextension into $(LABEXT_OUT)/ and the views into jupyter_mcp/views/static/"
	@cd labextension && $(QUIET) $(BIN)/jlpm build:prod
	@touch $(LABEXT_BUILT) $(VIEWS_BUILT)

labextension: $(LABEXT_BUILT) $(VIEWS_BUILT)

# Point JupyterLab at the built assets (a link, so later rebuilds are picked up) and make sure
# the server extension is enabled.
$(STAMPS)/develop: $(STAMPS)/install $(LABEXT_BUILT) $(VIEWS_BUILT)
	@$(QUIET) $(BIN)/jupyter labextension develop --overwrite .
	@$(QUIET) $(BIN)/jupyter server extension enable --sys-prefix jupyter_mcp
	@touch $@

# --- make run -------------------------------------------------------------------------------

# PORT, JUPYTER_TOKEN and NOTEBOOK_DIR are read from the environment or the make command line;
# LAB_ARGS go to `jupyter lab`, e.g. make run LAB_ARGS="--JupyterMCP.read_only=True".
LAB_ARGS ?=
run: $(STAMPS)/develop
	@bash scripts/run-lab.sh $(LAB_ARGS)

# --- make test ------------------------------------------------------------------------------

# Browser tests need Debian's Chromium at $(CHROMIUM); without it they skip.
CHROMIUM ?= /usr/bin/chromium
# Wait for another apt (unattended upgrades, a second checkout's make test) to let go of
# dpkg's lock instead of failing at once.
APT_WAIT := -o DPkg::Lock::Timeout=600
chromium:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "==> installing Debian's chromium (apt-get)"; \
		DEBIAN_FRONTEND=noninteractive $(QUIET) apt-get $(APT_WAIT) update -q && \
		DEBIAN_FRONTEND=noninteractive $(QUIET) apt-get $(APT_WAIT) install -y -q chromium; \
	else \
		echo "note: $(CHROMIUM) is missing and cannot be installed here (needs root and"; \
		echo "      apt-get): the browser tests will be skipped."; \
	fi

# Everything the tests need before pytest starts. To add a set-up step (npm tools, ...), write
# its target and add a line `test-deps: your-target` next to it; do not add a recipe here.
test-deps: $(STAMPS)/develop chromium

# Kernels other than ipykernel that the kernel tests run notebooks in (the test extra installs
# them): xeus-python's wheel carries its kernelspec; bash_kernel's is written by its installer,
# into the venv as --sys-prefix does, so `jupyter kernelspec list` in .venv shows both.
$(STAMPS)/kernels: $(STAMPS)/install
	@echo "==> installing bash_kernel's kernelspec into .venv"
	@$(QUIET) $(BIN)/python -m bash_kernel.install --sys-prefix
	@touch $@
kernels: $(STAMPS)/kernels
test-deps: kernels

# IRkernel (R) from Debian, its kernelspec written into the venv by IRkernel itself; without
# root and apt-get the R tests are skipped.
R_KERNELSPEC := $(VENV)/share/jupyter/kernels/ir/kernel.json
r-kernel: $(STAMPS)/install
	@if [ -f $(R_KERNELSPEC) ]; then :; \
	elif [ -d /usr/lib/R/site-library/IRkernel ] || { [ "$$(id -u)" = 0 ] && \
			command -v apt-get >/dev/null; }; then \
		if [ ! -d /usr/lib/R/site-library/IRkernel ]; then \
			echo "==> installing Debian's IRkernel (apt-get)"; \
			DEBIAN_FRONTEND=noninteractive $(QUIET) apt-get $(APT_WAIT) update -q && \
			DEBIAN_FRONTEND=noninteractive $(QUIET) apt-get $(APT_WAIT) install -y -q \
				--no-install-recommends r-cran-irkernel; \
		fi && echo "==> installing IRkernel's kernelspec into .venv" && \
		$(QUIET) Rscript -e 'IRkernel::installspec(sys_prefix = TRUE)'; \
	else \
		echo "note: IRkernel is missing and cannot be installed here (needs root and apt-get):"; \
		echo "      the R kernel tests will be skipped."; \
	fi
test-deps: r-kernel

# The external programs the tests drive (MCP Inspector CLI, conformance suite, Node 22, and
# JupyterHub's configurable-http-proxy), from tests/npm-tools into .cache/npm-tools. Without npm
# the tests that need them skip.
NPM_TOOLS := $(CURDIR)/.cache/npm-tools
$(NPM_TOOLS)/.installed: tests/npm-tools/package.json tests/npm-tools/package-lock.json
	@if command -v npm >/dev/null; then \
		echo "==> installing the MCP Inspector, conformance suite and proxy into .cache/npm-tools"; \
		mkdir -p $(NPM_TOOLS) && cp $^ $(NPM_TOOLS)/ && \
		cd $(NPM_TOOLS) && $(QUIET) npm install --no-audit --no-fund && touch $@; \
	else \
		echo "note: npm not found: the Inspector, conformance and JupyterHub tests will be skipped."; \
	fi
npm-tools: $(NPM_TOOLS)/.installed
test-deps: npm-tools

# Lint first: a style finding (Python or TypeScript) stops the run before the slow suite.
test: test-deps lint
	@echo "==> pytest"
	@$(BIN)/python -m pytest -ra -p no:cacheprovider --timeout=$(PYTEST_TIMEOUT) $(PYTEST_ARGS)

# --- extras ---------------------------------------------------------------------------------

lint: $(STAMPS)/install $(LABEXT_NODE)
	$(BIN)/ruff check jupyter_mcp tests benchmarks examples
	$(BIN)/ruff format --check jupyter_mcp tests benchmarks examples
	$(BIN)/mypy
	cd labextension && $(BIN)/jlpm lint:check

format: $(STAMPS)/install $(LABEXT_NODE)
	$(BIN)/ruff check --fix jupyter_mcp tests benchmarks examples
	$(BIN)/ruff format jupyter_mcp tests benchmarks examples
	cd labextension && $(BIN)/jlpm lint

# Run every demo notebook against a real server and save its outputs into the notebook.
demos: $(STAMPS)/install
	JUPYTER_MCP_SAVE_DEMOS=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_demos.py

wheel: $(STAMPS)/install $(LABEXT_BUILT) $(VIEWS_BUILT)
	$(BIN)/python -m pip wheel --no-deps --no-build-isolation -w dist .

clean:
	rm -rf $(VENV) $(LABEXT_OUT) labextension/node_modules labextension/lib \
		labextension/tsconfig.tsbuildinfo labextension/.yarn labextension/.eslintcache \
		labextension/.stylelintcache dist build
