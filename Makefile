# The two commands of a fresh machine: `make demo` (the main job, GRPO, on
# the local runtime: real verl 0.9.1 on CPU with a tiny model) and `make test`
# (every test tier). `make setup` (run by demo) installs what the demo needs
# and nothing else, as any user, and starts no daemon; `make setup-tests`
# (run by test and each tier) adds the test tiers' Debian packages (when root)
# and their Python packages. Both are idempotent. docs/setup.md says what
# each installs, how long it takes, and what runs as root.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The demo: REAL verl 0.9.1 (the PyPI wheel's tree, made by `make setup`, as
# the code snapshot) trains GRPO on CPU-only local nodes with the CPU profile
# and a tiny Qwen2-architecture model built here (no GPU, no hub, no Docker).
# MVP_GSM8K_SOURCE=synthetic: GSM8K-shaped problems made here; set it to hf
# (or a directory with train.jsonl/test.jsonl) for the real data set.
MVP_GSM8K_SOURCE ?= synthetic
DEMO_ENV := MVP_RUNTIME=local MVP_GSM8K_SOURCE=$(MVP_GSM8K_SOURCE) MVP_VERL_SRC=.mvp/cache/verl-0.9.1 CODE_ID=verl-0.9.1 \
	MVP_TRAINER_PROFILE=cpu MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2 MVP_GPUS_PER_WORKER=1

# The bring-up sequence, as scripts/lib/steps.sh defines it.
BRINGUP_STEPS := $(shell source scripts/lib/steps.sh && echo "$${MVP_BRINGUP_STEPS[@]}")

# Regenerates helpers/trainer/requirements.lock (pinned, hashed, for CPython
# 3.10-3.13 on x86_64 and aarch64) from helpers/trainer/requirements.in; each
# of those Pythons must be here (PATH or ~/.pyenv); about 12 minutes. Commit both.
lock-trainer:
	python3 helpers/trainer/lock.py

.PHONY: lock-trainer help setup setup-tests test test-unit test-integration test-real-verl test-slurm test-compose test-kuberay test-ssh demo down bench

help:
	@echo "make setup | setup-tests | test | test-unit | test-integration | test-real-verl | test-slurm | test-compose | test-kuberay | test-ssh | demo | down | bench | bench-detector | gpu-smoke | gpu-bundle | lock-trainer"

# The demo's system packages are checked, never installed (one ERROR line
# names what is missing and the command); the venv .venv/ and the real verl
# tree need no root.
SETUP_STEPS = scripts/libexec/system_packages.sh demo && scripts/12_install_py_deps.sh --runtime local && \
  tests/fixtures/real_verl.sh
setup:
	@$(SETUP_STEPS)

# The demo's Debian packages first (what the venv's build needs), then the
# tiers' other packages (apt: mostly download and unpack) beside setup (pip:
# the same) rather than before it: on a fresh machine the two waits overlap.
# (setup's steps by name, not $(MAKE) setup: make runs a line naming $(MAKE)
# even under --dry-run, and this one installs.)
setup-tests:
	@scripts/libexec/system_packages.sh tests-demo
	@scripts/libexec/system_packages.sh tests & apt=$$!; \
	  { $(SETUP_STEPS); }; rc=$$?; wait $$apt || rc=1; exit $$rc
	@source scripts/lib/common.sh && mvp::retry::download "pip install -r tests/requirements.txt" \
	  .venv/bin/python -m pip install -q --disable-pip-version-check -r tests/requirements.txt
	@tests/fixtures/real_verl.sh --release 0.9.0

test: setup-tests
	tests/run

test-unit: setup-tests
	tests/run tests/unit

test-integration: setup-tests
	tests/run tests/integration

# Real verl 0.9.1 trains through the runbook on CPU-only local nodes.
test-real-verl: setup-tests
	tests/run tests/real_verl

test-slurm: setup-tests
	tests/run tests/slurm

# The compose runtime on a real engine (root: it builds its image with mmdebstrap).
test-compose: setup-tests
	tests/run tests/compose

# What KubeRay would run (rendered RayJob -> pods as KubeRay v1.7.0 builds them), on podman.
test-kuberay: setup-tests
	tests/run tests/kuberay

# The ssh runtime: nodes with real sshd servers, reached only over ssh.
test-ssh: setup-tests
	tests/run tests/ssh

demo: setup
	@echo "== make demo: REAL verl 0.9.1 trains GRPO on CPU (MVP_TRAINER_PROFILE=cpu) with a tiny random-weight model built here"
	for s in $(BRINGUP_STEPS); do $(DEMO_ENV) scripts/$$s.sh || exit 1; done
	$(DEMO_ENV) scripts/30_prepare_data_and_model.sh
	$(DEMO_ENV) scripts/31_snapshot_verl_code.sh
	@root=$$($(DEMO_ENV) scripts/50_status.sh --json 2>/dev/null | jq -r .shared_root.path) && \
	  mkdir -p "$$root/user/code" && cp templates/rewards/shaped_gsm8k.py "$$root/user/code/" && \
	  echo "== GRPO: 3 steps on both workers, reward templates/rewards/shaped_gsm8k.py (in user/code/); about 2 minutes" && \
	  id=$$($(DEMO_ENV) scripts/41_submit_grpo_epoch1.sh --reward-fn user/code/shaped_gsm8k.py | tail -n 1) && \
	  echo "== verl's step metrics as they come (scripts/51_logs.sh $$id --steps --follow)" && \
	  $(DEMO_ENV) scripts/51_logs.sh "$$id" --steps --follow && \
	  echo && $(DEMO_ENV) scripts/51_logs.sh "$$id" --steps && \
	  echo && echo "== verl's checkpoints in $$root/jobs/$$id/checkpoints (FSDP shards; go on with 41 --resume-from $$id)" && \
	  (cd "$$root/jobs/$$id/checkpoints" && find . -maxdepth 3 | sort | sed 's|^\./||' | sed 1d) && \
	  echo && $(DEMO_ENV) scripts/50_status.sh && \
	  status=$$($(DEMO_ENV) scripts/50_status.sh "$$id" --porcelain | sed -n 's/^status=//p') && \
	  echo "== job $$id: $$status" && [[ $$status == SUCCEEDED ]]
	@echo "== the cluster is still up: scripts/50_status.sh shows it, make down stops it"

down:
	scripts/02_down.sh

# Every benchmark, then one table: each measure's goal and its ratio against
# the plain Ray CLI (or the raw way) measured in the same run.
bench: setup-tests
	@table=$$(mktemp) && export MVP_BENCH_TABLE=$$table && \
	  bench/bringup.sh && bench/submit.sh && bench/log_keepers.sh && bench/prepare_data.sh && bench/status.sh && bench/real_verl.sh; \
	  rc=$$?; echo; bench/table.sh "$$table" || rc=1; rm -f "$$table"; exit $$rc

# The nightly judge's error rates, measured: the corpus of real verl runs
# (tests/fixtures/detector/, recorded by bench/detector/record.sh, hours)
# replayed through the judge in seconds. Prints the table, then key=value
# lines, and writes config/detector.json, which the nightly's reports quote,
# and docs/nightly.md's measured table; tests/unit/detector.bats fails when
# either is not what the replay says.
.PHONY: bench-detector
bench-detector:
	PYTHONPATH=helpers $(if $(wildcard .venv/bin/python),.venv/bin/python,python3) -m mvp detector --write config/detector.json --docs docs/nightly.md

# docs/settings.md is generated from config/settings.contract (the one
# declaration of every setting); tests/unit/settings_contract.bats fails
# when it is stale. python3 alone: the command needs only the standard library.
.PHONY: docs/settings
docs/settings:
	PYTHONPATH=helpers python3 -m mvp settings --markdown >docs/settings.md.tmp && mv docs/settings.md.tmp docs/settings.md

# docs/scripts.md's flag sections are generated from each script's flag
# spec (mvp::flags::spec, the source of its --help too); the prose around
# them is kept. tests/unit/scripts_doc.bats fails when it is stale.
.PHONY: docs/scripts
docs/scripts:
	scripts/libexec/scripts_doc.sh >docs/scripts.md.tmp && mv docs/scripts.md.tmp docs/scripts.md

# docs/troubleshooting.md's table of every ERROR line, read from the code
# (tests/test_helper/error_lines.py); tests/unit/troubleshooting.bats fails
# when a line has no row.
.PHONY: docs/troubleshooting
docs/troubleshooting:
	python3 tests/test_helper/error_lines.py . --write

# helpers/mvp/places.txt, where each of the helper's commands runs, is
# generated from the place each declares beside its add_parser in
# helpers/mvp/__main__.py; scripts/lib/helper.sh reads it without starting
# Python, and tests/unit/helper_commands.bats fails when it is stale.
.PHONY: helpers/mvp/places
helpers/mvp/places:
	python3 tests/test_helper/helper_places.py . --write

# The GPU smoke that travels (docs/first-gpu-night.md): on any host with one
# NVIDIA GPU, 2 GRPO steps of the tiny model with real verl 0.9.1 on it (one
# worker, the local runtime); it prints s/step and peak GPU memory and refuses
# in one line where there is no GPU. BUNDLE=DIR installs an offline bundle
# first. `make gpu-bundle` writes that bundle for an air-gapped GPU host that
# has only Python $(PYTHON_VERSION) and torch (.mvp/gpu-bundle/cpXY, in checksummed
# parts; HOST_HAS=numpy,pandas leaves out what the host already has; MAX_MIB=N
# refuses a bundle that, the checkout's tracked files counted, is above N MiB).
PYTHON_VERSION ?= 3.12
.PHONY: gpu-smoke gpu-bundle
gpu-smoke:
	scripts/libexec/gpu_smoke.sh $(if $(BUNDLE),--bundle $(BUNDLE))

gpu-bundle:
	scripts/libexec/gpu_bundle.sh --python $(PYTHON_VERSION) $(if $(HOST_HAS),--host-has $(HOST_HAS)) $(if $(MAX_MIB),--max-mib $(MAX_MIB))
