#!/usr/bin/env bash
# 42_submit_sft_minimal.sh: submits templates/jobspecs/sft.yaml (SFT on Ray with GSM8K messages for a few steps) from the
# head with `ray job submit`, the driver on a worker. Code: the snapshot
# CODE_ID (default: the newest); model: common/models/$MVP_MODEL_ID.
#
# Prints the submission id as the last line on stdout (--porcelain: as a
# submission_id=ID line, key=value for programs).
# Every run submits a new job with a new id and a new job directory.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "${MVP_SUBMIT_FLAGS[@]}"

# The whole script is one submission of its template.
main() { mvp::config::init "$@" && mvp::submit::run cli "$MVP_REPO/templates/jobspecs/sft.yaml" "" --configured-model; }

main "$@"
