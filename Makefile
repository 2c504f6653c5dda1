# The two commands of a fresh machine: `make demo` (the main job, GRPO, on
# the local runtime: real verl 0.9.1 on CPU with a tiny model) and `make test`
# (every test tier). Both run `make setup` first; it is idempotent.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Debian packages the tests and the runbook use. chromium renders the nightly
# report in a test; jq and util-linux are used by the scripts themselves;
# GNU parallel is what `bats --jobs` needs (tests/run: the unit tier two files at a time).
APT_PACKAGES := bats parallel bats-support bats-assert jq shellcheck util-linux curl chromium
# The Slurm tier runs a real three-node Slurm on this host (tests/slurm).
APT_PACKAGES += slurmctld slurmd slurm-client munge
# The ssh runtime uses openssh-client; its tier runs real sshd servers (tests/ssh).
APT_PACKAGES += openssh-client openssh-server
# The compose tier (tests/compose): a real engine (podman, its Docker-API socket,
# runc, catatonit for `init: true`), the compose v1 CLI (docker-compose), the
# image build (mmdebstrap); docker.io only for its `docker` CLI when none is here.
APT_PACKAGES += podman runc catatonit uidmap slirp4netns docker-compose mmdebstrap
APT_PACKAGES += $(if $(shell command -v docker),,docker.io)

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

# Regenerates helpers/trainer/requirements.lock (pinned, hashed) from
# helpers/trainer/requirements.in; commit both.
lock-trainer:
	python3 helpers/trainer/lock.py

.PHONY: lock-trainer help setup test test-unit test-integration test-real-verl test-slurm test-compose test-kuberay test-ssh demo down bench

help:
	@echo "make setup | test | test-unit | test-integration | test-real-verl | test-slurm | test-compose | test-kuberay | test-ssh | demo | down | bench"

setup:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done | xargs); \
	if [[ -z $$missing ]]; then echo "SKIP: Debian packages (all of $(APT_PACKAGES) are installed)"; \
	elif [[ $$(id -u) == 0 ]]; then \
	  echo "-----> installing $$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else echo "ERROR: missing Debian packages: $$missing; run: sudo apt-get install $$missing" >&2; exit 1; fi
	@scripts/12_install_py_deps.sh --runtime local
	@.venv/bin/python -m pip install -q -r tests/requirements.txt
	@tests/fixtures/real_verl.sh

test: setup
	tests/run

test-unit: setup
	tests/run tests/unit

test-integration: setup
	tests/run tests/integration

# Real verl 0.9.1 trains through the runbook on CPU-only local nodes.
test-real-verl: setup
	tests/run tests/real_verl

test-slurm: setup
	tests/run tests/slurm

# The compose runtime on a real engine (root: it builds its image with mmdebstrap).
test-compose: setup
	tests/run tests/compose

# What KubeRay would run (rendered RayJob -> pods as KubeRay v1.7.0 builds them), on podman.
test-kuberay: setup
	tests/run tests/kuberay

# The ssh runtime: nodes with real sshd servers, reached only over ssh.
test-ssh: setup
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
	  status=$$(jq -r .status "$$root/jobs/$$id/result.json") && echo "== job $$id: $$status" && [[ $$status == SUCCEEDED ]]
	@echo "== the cluster is still up: scripts/50_status.sh shows it, make down stops it"

down:
	scripts/02_down.sh

# Every benchmark, then one table: each measure's goal and its ratio against
# the plain Ray CLI (or the raw way) measured in the same run.
bench: setup
	@table=$$(mktemp) && export MVP_BENCH_TABLE=$$table && \
	  bench/bringup.sh && bench/submit.sh && bench/log_keepers.sh && bench/prepare_data.sh && bench/status.sh && bench/real_verl.sh; \
	  rc=$$?; echo; bench/table.sh "$$table" || rc=1; rm -f "$$table"; exit $$rc

# docs/settings.md is generated from config/settings.contract (the one
# declaration of every setting); tests/unit/settings_contract.bats fails
# when it is stale. python3 alone: the command needs only the standard library.
.PHONY: docs/settings
docs/settings:
	PYTHONPATH=helpers python3 -m mvp settings --markdown >docs/settings.md.tmp && mv docs/settings.md.tmp docs/settings.md

# The GPU smoke that travels (docs/first-gpu-night.md): on any host with one
# NVIDIA GPU, 2 GRPO steps of the tiny model with real verl 0.9.1 on it (one
# worker, the local runtime); it prints s/step and peak GPU memory and refuses
# in one line where there is no GPU. BUNDLE=DIR installs an offline bundle
# first. `make gpu-bundle` writes that bundle for an air-gapped GPU host that
# has only Python $(PYTHON_VERSION) and torch (.mvp/gpu-bundle/cpXY; it refuses above
# 55 MiB; HOST_HAS=numpy,pandas leaves out what the host already has).
PYTHON_VERSION ?= 3.12
.PHONY: gpu-smoke gpu-bundle
gpu-smoke:
	scripts/libexec/gpu_smoke.sh $(if $(BUNDLE),--bundle $(BUNDLE))

gpu-bundle:
	scripts/libexec/gpu_bundle.sh --python $(PYTHON_VERSION) $(if $(HOST_HAS),--host-has $(HOST_HAS))
