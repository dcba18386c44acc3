# gpuops.cuda_venv: set-up, tests, lint, build. `make help` lists the targets; docs/DEVELOPMENT.md
# explains them. Every target installs what it needs (tools venv, collections) on first use.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules --no-print-directory

# An interpreter >= 3.12 for the tools venv; empty: scripts/find_python.sh looks for one.
PYTHON ?=
BUILD := build
TOOLS := $(BUILD)/tools
BIN := $(CURDIR)/$(TOOLS)/bin
COLLECTIONS := $(BUILD)/collections
TOOLS_STAMP := $(TOOLS)/.stamp
COLLECTIONS_STAMP := $(COLLECTIONS)/.stamp
SELF_LINK := $(COLLECTIONS)/ansible_collections/gpuops/cuda_venv
# galaxy-importer and ansible-builder (make publish-check); the lowest ansible-core claimed (make sanity-min),
# on PYTHON_MIN or Python 3.12 (ansible-core 2.17 runs on a controller Python 3.10 to 3.12).
PUBLISH := $(BUILD)/publish
PUBLISH_STAMP := $(PUBLISH)/.stamp
TOOLS_MIN := $(BUILD)/tools-min
# cosmic-ray (make mutate), apart from the tools venv; MUTATE_AREAS: some of scripts/mutate.py's SCOPE (default all).
MUTATE_TOOLS := $(BUILD)/mutate-tools
MUTATE_STAMP := $(MUTATE_TOOLS)/.stamp
MUTATE_AREAS ?=
TOOLS_MIN_STAMP := $(TOOLS_MIN)/.stamp
PYTHON_MIN ?=

# Extra arguments, e.g. make unit PYTEST_ARGS='-k layout', make sanity SANITY_ARGS='--test pylint'.
PYTEST_ARGS ?=
PYTEST_XDIST ?= -n auto
SANITY_ARGS ?=
LINT_ARGS ?=

# The tools venv first: ansible, ansible-playbook, molecule... resolve to the pinned ones.
export PATH := $(BIN):$(PATH)

.PHONY: help setup tools collections shellcheck report-tools reliability-tools test-tools test unit sanity lint scenarios reliability molecule bench build demo clean
.PHONY: publish-tools tools-min sanity-min publish-check units-venv mutate mutate-tools mutate-report ee

help:
	@echo "make setup      tools venv ($(TOOLS)) and community collections ($(COLLECTIONS))"
	@echo "make test       unit, units-venv, sanity, sanity-min, lint, scenarios, reliability, build, publish-check, molecule, ee;"
	@echo "                stops at the first failure"
	@echo "make unit       pytest tests/unit"
	@echo "make units-venv ansible-test units --venv: tests/unit with only what tests/unit/requirements.txt declares"
	@echo "make sanity     ansible-test sanity on a copy in $(BUILD)/sanity, no ignore files"
	@echo "make sanity-min the same with the lowest ansible-core requires_ansible claims ($(TOOLS_MIN))"
	@echo "make lint       ansible-lint, production profile"
	@echo "make scenarios  pytest tests/scenarios"
	@echo "make reliability pytest tests/reliability: kills, full disk, bad input, security, fuzzing, load"
	@echo "make fuzz       the RECORD/METADATA/ELF fuzzers with FUZZ_EXAMPLES examples each"
	@echo "make acceptance the modules on real torch wheels from the configured index (opt-in, large download)"
	@echo "make molecule   molecule test --all (extensions/molecule: default, proxmox); MOLECULE_ARGS='-s default'"
	@echo "make ee         the Execution Environment built with podman (Debian base by debootstrap), repair.yml run in it"
	@echo "make bench      python -m tests.bench > $(BUILD)/bench.md"
	@echo "make mutate     cosmic-ray on the safety rules (copy of the tree), table in docs/MUTATION.md; MUTATE_AREAS='plan'"
	@echo "make build      collection tarball in $(BUILD)/dist, installed and smoke-tested"
	@echo "make publish-check galaxy-importer (Automation Hub settings), ansible-builder introspect and create"
	@echo "make demo       scripts/demo.sh; writes the HTML report to $(BUILD)/demo/report and prints its path"
	@echo "make clean      remove $(BUILD), tests/output, .pytest_cache"
	@echo "Variables: PYTHON=/path/to/python3.12 PYTEST_ARGS= PYTEST_XDIST='-n auto' SANITY_ARGS= LINT_ARGS="

setup: tools collections

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): requirements/tools.txt requirements/sanity.txt scripts/bootstrap_tools.sh scripts/find_python.sh
	PYTHON="$(PYTHON)" scripts/bootstrap_tools.sh $(TOOLS)
	touch $@

collections: $(COLLECTIONS_STAMP)
	@test -L $(SELF_LINK) || { mkdir -p $(dir $(SELF_LINK)) && ln -s ../../../.. $(SELF_LINK); }

$(COLLECTIONS_STAMP): requirements/collections.txt scripts/fetch_collections.py | $(TOOLS_STAMP)
	$(BIN)/python scripts/fetch_collections.py requirements/collections.txt $(COLLECTIONS)
	touch $@

# ansible-test skips its shellcheck sanity test when the binary is missing: install it (Debian).
publish-tools: $(PUBLISH_STAMP)

mutate-tools: $(MUTATE_STAMP)

$(MUTATE_STAMP): requirements/mutate.txt scripts/bootstrap_tools.sh scripts/find_python.sh
	PYTHON="$(PYTHON)" scripts/bootstrap_tools.sh $(MUTATE_TOOLS) requirements/mutate.txt
	touch $@

$(PUBLISH_STAMP): requirements/publish.txt scripts/bootstrap_tools.sh scripts/find_python.sh
	PYTHON="$(PYTHON)" scripts/bootstrap_tools.sh $(PUBLISH) requirements/publish.txt
	touch $@

tools-min: $(TOOLS_MIN_STAMP)

$(TOOLS_MIN_STAMP): requirements/tools-min.txt scripts/bootstrap_tools.sh scripts/find_python.sh
	python="$(PYTHON_MIN)"; [ -n "$$python" ] || python=$$(scripts/find_python.sh 3.12) \
	  || { echo "make: $(TOOLS_MIN) needs Python 3.12 (ansible-core 2.17 runs on 3.10 to 3.12, the tools on 3.12+): set PYTHON_MIN=/path/to/python3.12" >&2; exit 1; }; \
	PYTHON="$$python" scripts/bootstrap_tools.sh $(TOOLS_MIN) requirements/tools-min.txt
	touch $@

shellcheck:
	@command -v shellcheck >/dev/null || scripts/apt_install.sh "sanity's tests" shellcheck

# The HTML report's tests draw graphs with Graphviz dot (unit, scenarios) and look at the pages in headless Chromium
# (scenarios): installed here with apt-get when missing (Debian).
report-tools:
	@missing=; command -v dot >/dev/null || missing="$$missing graphviz"; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing="$$missing chromium"; \
	scripts/apt_install.sh "the report tests" $$missing

# The durability test (tests/reliability/test_durability.py) reads the repair's syscalls with strace: installed here
# with apt-get when missing (Debian).
reliability-tools:
	@command -v strace >/dev/null || scripts/apt_install.sh "the reliability tests" strace

# What tests would otherwise skip (a skip under CI=true fails, tests/conftest.py): gcc with 32-bit support (test_elf's
# 32-bit ELF, gcc-multilib) and util-linux's setpriv, unshare and mount (permission cases as root, tmpfs and bind
# mounts): installed here with apt-get when missing (Debian).
test-tools:
	@missing=; command -v gcc >/dev/null || missing="$$missing gcc"; \
	echo 'int x;' | gcc -m32 -shared -x c -o /dev/null - 2>/dev/null || missing="$$missing gcc-multilib"; \
	for tool in setpriv unshare mount; do command -v $$tool >/dev/null || { missing="$$missing util-linux mount"; break; }; done; \
	for shell in fish tcsh; do command -v $$shell >/dev/null || missing="$$missing $$shell"; done; \
	scripts/apt_install.sh "the tests" $$missing

# Each step in turn, timed; the first failure stops the run.
STEP = start=$$SECONDS; $(MAKE) $(1); echo "== make $(1): passed in $$((SECONDS - start)) s"

test: setup
	@$(call STEP,unit)
	@$(call STEP,units-venv)
	@$(call STEP,sanity)
	@$(call STEP,sanity-min)
	@$(call STEP,lint)
	@$(call STEP,scenarios)
	@$(call STEP,reliability)
	@$(call STEP,build)
	@$(call STEP,publish-check)
	@$(call STEP,molecule)
	@$(call STEP,ee)

unit: setup report-tools test-tools
	$(BIN)/python -m pytest $(PYTEST_XDIST) tests/unit $(PYTEST_ARGS)

# The unit tests as ansible-test runs them for a collection: a fresh venv with ansible-test's pins and
# tests/unit/requirements.txt only (scripts/units.py; the same copy and offline get-pip as sanity).
UNITS_ARGS ?=
units-venv: tools report-tools test-tools
	$(BIN)/python scripts/units.py $(UNITS_ARGS)

sanity: tools shellcheck
	$(BIN)/python scripts/sanity.py $(SANITY_ARGS)

# The same sanity tests with the lowest ansible-core that meta/runtime.yml's requires_ansible admits.
sanity-min: tools-min shellcheck
	$(TOOLS_MIN)/bin/python scripts/sanity.py $(SANITY_ARGS)

lint: setup
	$(BIN)/ansible-lint $(LINT_ARGS)

# pytest exits 5 when it collects nothing: allowed here until scenarios are written.
# The modules, roles and playbooks through real Ansible on stand-in CUDA venvs.
scenarios: setup report-tools test-tools
	$(BIN)/python -m pytest $(PYTEST_XDIST) tests/scenarios $(PYTEST_ARGS)

# Kills at every phase boundary, full disk, hanging installer, bad-input catalogue, security, fuzzing, load,
# durability under strace (docs/RELIABILITY.md).
reliability: setup reliability-tools test-tools
	$(BIN)/python -m pytest $(PYTEST_XDIST) tests/reliability $(PYTEST_ARGS)

# The RECORD/METADATA/ELF readers fuzzed with many more examples than `make test` runs (docs/RELIABILITY.md);
# failing examples are kept in $(BUILD)/hypothesis and replay first. make fuzz FUZZ_EXAMPLES=100000
FUZZ_EXAMPLES ?= 20000
.PHONY: fuzz
fuzz: setup
	CUDA_VENV_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest $(PYTEST_XDIST) tests/reliability/test_fuzz_readers.py $(PYTEST_ARGS)

# Molecule 26 in collection mode: run from the root (galaxy.yml), scenarios in extensions/molecule/ (docs/TESTING.md).
# A temporary ANSIBLE_HOME holds molecule's ephemeral directories; on exit, fake Proxmox nodes left there are stopped.
# The proxmox scenario needs root, debootstrap and sshd: installed here with apt-get when missing (Debian).
MOLECULE_ARGS ?= --all
MOLECULE_TIMEOUT ?= 1800
molecule: setup
	@if [ ! -d extensions/molecule ]; then echo "make molecule: no extensions/molecule/ yet, nothing to run"; exit 0; fi; \
	scripts/need_packages.sh molecule debootstrap=debootstrap lxc-attach=lxc /usr/sbin/sshd=openssh-server \
	  podman=podman runc=runc; \
	home=$$(mktemp -d "$${TMPDIR:-/tmp}/gpuops-cuda_venv-molecule.XXXXXX"); \
	trap 'for s in $$(find "$$home" -maxdepth 4 -type d -name fake-proxmox); do tests/fake_proxmox/node.sh stop "$$s" || true; done; rm -rf "$$home"' EXIT; \
	ANSIBLE_HOME=$$home ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/$(COLLECTIONS) \
	  timeout --foreground --kill-after=30 $(MOLECULE_TIMEOUT) $(BIN)/molecule test $(MOLECULE_ARGS)

# The Execution Environment built with ansible-builder and podman on a Debian base image made by debootstrap, then
# repair.yml run inside it against the fake Proxmox node's LXC containers (scripts/ee.py; docs/EXECUTION_ENVIRONMENT.md).
ee: build publish-tools
	@scripts/need_packages.sh ee podman=podman runc=runc debootstrap=debootstrap lxc-attach=lxc /usr/sbin/sshd=openssh-server
	$(BIN)/python scripts/ee.py $(BUILD)/ee $$(ls $(CURDIR)/$(BUILD)/dist/gpuops-cuda_venv-*.tar.gz)

bench: setup
	PYTHONPATH=$(CURDIR)/$(COLLECTIONS) $(BIN)/python -m tests.bench $(BENCH_ARGS) | tee $(BUILD)/bench.md

# Build the tarball, install it into an empty collections dir, and read a module's doc from there.
build: tools
	rm -rf $(BUILD)/dist
	$(BIN)/ansible-galaxy collection build --output-path $(BUILD)/dist
	@tarball=$$(ls $(CURDIR)/$(BUILD)/dist/gpuops-cuda_venv-*.tar.gz); \
	tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/gpuops-cuda_venv-install.XXXXXX"); trap 'rm -rf "$$tmp"' EXIT; \
	cd $$tmp; export -n ANSIBLE_CONFIG; export ANSIBLE_COLLECTIONS_PATH=$$tmp ANSIBLE_NOCOLOR=1; \
	$(BIN)/ansible-galaxy collection install --offline --no-deps -p $$tmp $$tarball; \
	$(BIN)/ansible-doc gpuops.cuda_venv.cuda_venv_facts >doc.txt; \
	grep -qF "> MODULE gpuops.cuda_venv.cuda_venv_facts ($$tmp/" doc.txt || { cat doc.txt; echo "make build: ansible-doc found no gpuops.cuda_venv.cuda_venv_facts in $$tarball" >&2; exit 1; }; \
	head -n 3 doc.txt; \
	$(BIN)/python -m venv --without-pip $$tmp/venv; \
	$(BIN)/ansible localhost -m gpuops.cuda_venv.cuda_venv_facts -a "path=$$tmp/venv anchor=pip gpu=false" >run.txt || { cat run.txt; exit 1; }; \
	grep -q '"code": "ANCHOR_NOT_INSTALLED"' run.txt || { cat run.txt; echo "make build: the installed module did not diagnose a venv" >&2; exit 1; }; \
	echo "make build: $$tarball installs; ansible-doc reads gpuops.cuda_venv.cuda_venv_facts from it and the module runs"

# The tarball through galaxy-importer with Automation Hub's settings (any warning fails), and the Execution
# Environment: ansible-builder introspect on the installed tarball, ansible-builder create (scripts/publish_check.sh).
publish-check: publish-tools
	scripts/publish_check.sh $(PUBLISH) $(BUILD)/publish-check

# Mutation testing of the safety rules on a copy of the tree; the table goes to docs/MUTATION.md. Not part of test.
mutate: setup mutate-tools
	$(BIN)/python scripts/mutate.py $(CURDIR)/$(MUTATE_TOOLS) $(BIN)/python $(MUTATE_AREAS)

# The table again from the sessions earlier runs left in build/mutate (nothing run).
mutate-report: setup
	$(BIN)/python scripts/mutate.py $(CURDIR)/$(MUTATE_TOOLS) $(BIN)/python --report $(MUTATE_AREAS)

demo: setup
	scripts/demo.sh

clean:
	rm -rf $(BUILD) tests/output .pytest_cache

# Opt-in, not part of `make test`: real torch stacks (about 8.0 GB of wheels, fetched once with pip as this machine
# configures it into CUDA_VENV_ACCEPTANCE_CACHE, default build/acceptance-cache), every incident state built,
# diagnosed and repaired; the table goes to build/acceptance-results/table.md. See docs/ACCEPTANCE.md.
.PHONY: acceptance
acceptance: setup
	$(BIN)/python tests/acceptance/acceptance_fetch.py
	CUDA_VENV_ACCEPTANCE=1 $(BIN)/python -m pytest -p no:xdist -v -rxXfE tests/acceptance $(PYTEST_ARGS)
