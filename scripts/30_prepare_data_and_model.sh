#!/usr/bin/env bash
# 30_prepare_data_and_model.sh: GSM8K parquet for RL (datasets/gsm8k/) and SFT
# (datasets/gsm8k_sft/) and the model (common/models/<MVP_MODEL_ID>) on the
# shared root. Source: MVP_GSM8K_SOURCE (hf | a directory with train.jsonl and
# test.jsonl | synthetic); model: the Hugging Face hub, or MVP_MODEL_SOURCE (a
# directory, or tiny: a tiny Qwen2 model and tokenizer built here);
# MVP_SKIP_MODEL=1 skips it.
#
# Safe to re-run: what is present and matches its MANIFEST.json is a SKIP.
# Every file is written under a temp name and renamed.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "--force  rebuild the data even where it matches its MANIFEST.json" \
  "--model ID_OR_DIR  a Hugging Face id (ORG/NAME, into common/models/ORG/NAME) or a local model directory (into common/models/<its name>), instead of MVP_MODEL_ID/MVP_MODEL_SOURCE; HF_TOKEN (gated models) reaches the download on stdin, never argv or a file"

main() {
  mvp::config::init "$@"
  local -a args=(prepare)
  [[ ${MVP_FLAG[--force]:-0} == 1 ]] && args+=(--force)
  [[ -z ${MVP_FLAG[--model]:-} ]] || prepare_model_flag "${MVP_FLAG[--model]}"
  # A relative source directory is relative to where the user stands.
  if [[ $MVP_GSM8K_SOURCE != hf && $MVP_GSM8K_SOURCE != synthetic && $MVP_GSM8K_SOURCE != /* ]]; then
    MVP_GSM8K_SOURCE=$(cd "$MVP_GSM8K_SOURCE" 2>/dev/null && pwd) ||
      mvp::log::die "MVP_GSM8K_SOURCE directory does not exist; use hf, synthetic or a directory with train.jsonl and test.jsonl"
  fi
  if [[ -n $MVP_MODEL_SOURCE && $MVP_MODEL_SOURCE != tiny && $MVP_MODEL_SOURCE != /* ]]; then
    MVP_MODEL_SOURCE=$(cd "$MVP_MODEL_SOURCE" 2>/dev/null && pwd) ||
      mvp::log::die "MVP_MODEL_SOURCE directory does not exist; use tiny or a model directory"
  fi
  # The token travels on the helper's stdin (printf is a builtin: no argv).
  [[ -z ${HF_TOKEN:-} ]] || args+=(--token-stdin)
  if [[ $MVP_DRY_RUN == 1 ]]; then
    mvp::run::cmd mvp::helper::run "${args[@]}"
    return 0
  fi
  if [[ -n ${HF_TOKEN:-} ]]; then
    mvp::helper::run "${args[@]}" < <(printf '%s' "$HF_TOKEN")
  else
    mvp::helper::run "${args[@]}"
  fi
}

# prepare_model_flag ID_OR_DIR: --model as the settings it stands for.
# shellcheck disable=SC2034  # settings: mvp::helper::env hands them to the helper
prepare_model_flag() {
  if [[ -d $1 ]]; then
    MVP_MODEL_SOURCE=$(cd "$1" && pwd)
    MVP_MODEL_ID=${MVP_MODEL_SOURCE##*/}
  else
    [[ $1 != [/.~]* ]] || mvp::log::die "--model $1: no such directory; give a model directory or a Hugging Face id (ORG/NAME)"
    MVP_MODEL_ID=$1 MVP_MODEL_SOURCE=""
  fi
  MVP_SKIP_MODEL=0
}

main "$@"
