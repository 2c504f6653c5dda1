#!/usr/bin/env bash
# 61_bisect_regression.sh: finds the first commit of a verl git checkout
# (--repo, your fork) between --good and --bad that makes a nightly job worse,
# on the running cluster. Each probed commit becomes a code snapshot (31
# --git-repo; the checkout is never touched) and runs the nightly suite's job
# (--job, default grpo) or a JobSpec (--spec) for --steps training steps
# (default 2) with a fixed seed, through its submit script with --wait, as the
# nightly submits it. GOOD runs twice (its spread is the noise the figures are
# judged with; an earlier bisection's two, when it ran the same GOOD and job on
# this cluster within MVP_BISECT_REUSE_HOURS), then BAD, then a binary search
# along BAD's first-parent line: at most ceil(log2(commits)) + 3 probes. The
# runbook's reward functions are copied to user/code/ first, as 60 does (the
# suite's learn job reads user/code/learning_probe.py). Each probe is judged by the
# nightly's judge (its checks, and its figures against GOOD's), never by
# "the numbers differ".
#
# Stdout, key=value lines: report=<the bisection's directory>, one probe_N
# line per probe (commit, role, verdict, snapshot, job, reasons), and
# first_bad=<full sha> last; the commit's subject on stderr. The directory
# <SHARED_ROOT>/regressions/bisect-<time>/ holds report.md, report.html and
# bisect.json; the jobs' logs go to its bisect.log.
# A commit the runbook cannot test is skipped, as `git bisect skip`, never
# bad: no snapshot of it, a verl the CPU layer cannot serve (the preflight's
# refusal, exit 69, or the layer's MVP_CPU_LAYER_FAILED line in the driver log), a
# job the cluster did not admit (exit 75) or lost (LOST); the next probe is
# the commit nearest the middle that is not skipped. A crash of verl is bad.
# Exit: 0 found; 1 GOOD is not good or BAD is not bad, or skipped commits
# hide the first bad one ("first bad is one of A..B"; the ERROR line says
# which); 2 bad input (not a git checkout, an unknown rev, GOOD the same
# commit as BAD or not an ancestor of it, a bad --job, --spec or --steps).
# --dry-run lists the commits it would probe and submits
# nothing. Safe to re-run: each run is a new bisection; snapshots dedup.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "--repo DIR  the git checkout of verl (your fork) the commits are in" \
  "--good REV  a commit whose job is good" \
  "--bad REV  a later commit whose job is worse (GOOD must be in its history)" \
  "--job NAME  the nightly suite's job each probe runs (default grpo)" \
  "--spec JOBSPEC.yaml  a JobSpec each probe runs instead of a suite job" \
  "--steps K  training steps per probe (default 2)"

# probe DIR: snapshots and runs the commit `bisect next` named (in STEP),
# then has the helper judge it; prints its probe_N line.
probe() {
  local dir=$1 commit=${STEP[commit]} code="" sid="" out log why
  local -A answer=() no_job=()
  mvp::config::run_file bisect_log "$dir" log
  why=$(mktemp)
  mvp::log::step "probe of ${commit:0:12} (${STEP[role]})"
  # CODE_ID empty: each commit its own snapshot, git-<sha> (not one a caller or the config named; 60 exports its own).
  if out=$(env "${MVP_FLAG_SETTINGS[@]}" CODE_ID= "$MVP_REPO/scripts/31_snapshot_verl_code.sh" --porcelain \
    --git-repo "$REPO" --rev "$commit" 2>>"$log") && mvp::kv::read answer <<<"$out"; then
    code=${answer[code_id]:-}
  fi
  if [[ -n $code ]]; then
    sid=$(mvp::submit::probe STEP "$code" "$log" "$why")
  else
    mvp::log::warn "no snapshot of $commit (see $log)"
  fi
  # No job: why not (the submit's exit code), for the probe's skip or BAD.
  [[ ! -s $why ]] || mvp::kv::read no_job <"$why" || mvp::log::die "the probe's answer: $MVP_KV_ERROR"
  rm -f "$why"
  mvp::helper::run bisect record --dir "$dir" --commit "$commit" --code-id "$code" --submission-id "$sid" \
    --submit-rc "${no_job[submit_rc]:-}"
}

main() {
  mvp::config::init "$@"
  local -a args=(bisect start "${MVP_FLAG_WORDS[@]}")
  [[ $MVP_DRY_RUN == 1 ]] && args+=(--dry-run)
  local out dir
  local -A answer=()
  # A refusal is the helper's one ERROR line (exit 2 for bad input): nothing to add to it.
  out=$(mvp::helper::run "${args[@]}") || exit
  if [[ $MVP_DRY_RUN == 1 ]]; then
    printf '%s\n' "$out"
    return 0
  fi
  mvp::kv::read answer <<<"$out" || mvp::log::die "the helper's bisect answer: $MVP_KV_ERROR"
  dir=${answer[report]}
  REPO=$(cd "${MVP_FLAG[--repo]}" && pwd)
  # report=, then a probe_N line for each of GOOD's probes an earlier bisection lent (MVP_BISECT_REUSE_HOURS).
  printf '%s\n' "$out"
  mvp::submit::rewards
  declare -gA STEP=()
  while :; do
    STEP=()
    out=$(mvp::helper::run bisect next --dir "$dir") || exit
    mvp::kv::read STEP <<<"$out" || mvp::log::die "the helper's bisect answer: $MVP_KV_ERROR"
    [[ ${STEP[action]} == probe ]] || break
    probe "$dir" || exit
  done
  mvp::helper::run bisect finish --dir "$dir" || exit
}

main "$@"
