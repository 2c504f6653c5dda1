# The two commands of a fresh machine: `make demo` (the main job on the local
# runtime, with the CPU stand-in for verl) and `make test` (every test tier).
# Both run `make setup` first; it is idempotent.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Debian packages the tests and the runbook use. chromium renders the nightly
# report in a test; jq and util-linux are used by the scripts themselves.
APT_PACKAGES := bats bats-support bats-assert jq shellcheck util-linux curl chromium
# The Slurm tier runs a real three-node Slurm on this host (tests/slurm).
APT_PACKAGES += slurmctld slurmd slurm-client munge
# The ssh runtime uses openssh-client; its tier runs real sshd servers (tests/ssh).
APT_PACKAGES += openssh-client openssh-server
# The compose tier (tests/compose): a real engine (podman, its Docker-API socket,
# runc, catatonit for `init: true`), the compose v1 CLI (docker-compose), the
# image build (mmdebstrap); docker.io only for its `docker` CLI when none is here.
APT_PACKAGES += podman runc catatonit uidmap slirp4netns docker-compose mmdebstrap
APT_PACKAGES += $(if $(shell command -v docker),,docker.io)

# The demo: synthetic GSM8K-format data, the CPU stand-in for verl laid over
# the real verl 0.9.1 tree (tests/fixtures/real_verl.sh) and a config.json-only
# model fixture, so it needs no GPU or Docker.
DEMO_ENV := MVP_RUNTIME=local MVP_GSM8K_SOURCE=synthetic MVP_VERL_SRC=.mvp/cache/verl-0.9.1-standin \
	MVP_MODEL_ID=mvp-fixtures/model-standin MVP_MODEL_SOURCE=tests/fixtures/model_standin CODE_ID=standin-demo

# The bring-up sequence, as scripts/lib/steps.sh defines it.
BRINGUP_STEPS := $(shell source scripts/lib/steps.sh && echo "$${MVP_BRINGUP_STEPS[@]}")

# Regenerates helpers/trainer/requirements.lock (pinned, hashed) from
# helpers/trainer/requirements.in; commit both.
lock-trainer:
	python3 helpers/trainer/lock.py

.PHONY: lock-trainer help setup test test-unit test-integration test-slurm test-compose test-ssh demo down bench

help:
	@echo "make setup | test | test-unit | test-integration | test-slurm | test-compose | test-ssh | demo | down | bench"

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
	tests/run tests/unit tests/integration tests/slurm tests/compose tests/ssh

test-unit: setup
	tests/run tests/unit

test-integration: setup
	tests/run tests/integration

test-slurm: setup
	tests/run tests/slurm

# The compose runtime on a real engine (root: it builds its image with mmdebstrap).
test-compose: setup
	tests/run tests/compose

# The ssh runtime: nodes with real sshd servers, reached only over ssh.
test-ssh: setup
	tests/run tests/ssh

demo: setup
	@echo "== make demo: the trainer is the CPU STAND-IN for verl (tests/fixtures/verl_standin over real verl 0.9.1's config); it trains nothing =="
	for s in $(BRINGUP_STEPS); do $(DEMO_ENV) scripts/$$s.sh || exit 1; done
	$(DEMO_ENV) scripts/30_prepare_data_and_model.sh
	$(DEMO_ENV) scripts/31_snapshot_verl_code.sh
	@id=$$($(DEMO_ENV) scripts/40_submit_ppo_epoch1.sh --wait | tail -n 1) && \
	  $(DEMO_ENV) scripts/50_status.sh; \
	  root=$$($(DEMO_ENV) scripts/50_status.sh --json 2>/dev/null | jq -r .shared_root.path); \
	  echo; echo "== job directory $$root/jobs/$$id (stand-in trainer; checkpoints hold no weights)"; \
	  find "$$root/jobs/$$id" -maxdepth 2 | sed "s|$$root/jobs/||" | sort
	@echo "== the cluster is still up: scripts/50_status.sh shows it, scripts/02_down.sh stops it"

down:
	scripts/02_down.sh

bench: setup
	bench/bringup.sh
	bench/submit.sh
	bench/prepare_data.sh
	bench/status.sh
