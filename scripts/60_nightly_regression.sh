#!/usr/bin/env bash
# 60_nightly_regression.sh: the v1.1 acceptance suite, unattended: brings the
# cluster up (00, 01, 20, 21), prepares data and model (30, skipped when
# present), snapshots the code (31; CODE_ID or the tree's commit), copies the
# runbook's reward functions (templates/rewards/) to the shared root's
# user/code/, submits the jobs of the suite file MVP_NIGHTLY_SUITE (default
# config/nightly.yaml: PPO twice, GRPO and SFT through 40, 40, 41, 42, and on
# CPU-profile nights the learning probe through 43; a JobSpec or a verl
# command line through 43) one after another (each needs every
# GPU), waits for each (MVP_JOB_TIMEOUT from its submission),
# judges every job against the v1.1 runbook spec (docs/spec.md) and writes
# <SHARED_ROOT>/regressions/<run id>/{nightly.log,plan.json,report.json,report.md,report.html}
# and regressions/index.html (every night, with trend charts); judges each
# job's figures against its own history too (check `regression`); tells
# MVP_NIGHTLY_MAIL_TO and the webhook of MVP_NIGHTLY_WEBHOOK_URL_FILE, once.
# With MVP_NIGHTLY_BISECT_REPO (a git checkout of verl), a failed night whose
# snapshot's commit descends from the last good night's is bisected first
# (61_bisect_regression.sh), and the mail names the first bad commit.
# With --control (MVP_NIGHTLY_CONTROL=1), before the suite the last good
# night's snapshot and tonight's each run a short probe, judged as a pair
# (report.json `control`): code worse than its control, or the machine slower.
# Keeps the newest MVP_NIGHTLY_KEEP runs and their job directories.
# --dry-run prints the plan and touches nothing.
#
# Exit: 0 when every check passed; 1 when one failed (the last stdout line
# names the failed jobs and checks: what cron mails); 75 when another run
# holds the lock. Safe in a crontab as is: any cwd, cron's bare environment,
# no TTY; a run never overlaps another. MVP_NIGHTLY_OVERRIDES="JOB:KEY=VALUE ..."
# gives a nightly job extra --override values (the tests make one fail with it).
# Resume fidelity (MVP_NIGHTLY_RESUME, default ppo2): that job's trainer is
# SIGKILLed once verl logged a step drawn at random, `--retry 1` resumes it,
# and the judge compares its resumed curve with the uninterrupted run (an
# earlier job of the night that submits the same: ppo1 for ppo2; else an
# extra run of the job, NAME_resumed, after it: grpo_resumed, sft_resumed).
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "--only JOBS  only these jobs, in this order: a comma list of the suite's job names (default suite: ppo1, ppo2, grpo, sft, and learn on CPU nights; ppo = ppo1,ppo2: a name that jobs' names extend with a number)" \
  "--control  a same-night control first (MVP_NIGHTLY_CONTROL=1): the last good night's snapshot and tonight's each run a short probe (grpo, 2 steps, fixed seed), judged as a pair"

# read_suite ONLY: the night's plan from the suite file (MVP_NIGHTLY_SUITE,
# helpers/mvp/nightly/suite.py, which refuses a bad file, --only,
# MVP_NIGHTLY_RESUME or MVP_NIGHTLY_OVERRIDES with one ERROR line): JOBS in
# order, RESUME_JOB (interrupted and resumed) and RESUME_REF (the
# uninterrupted run it is compared with, which runs before it), and SUITE,
# each job's job_NAME_* keys and resume_ckpt_keep_key (RESUME_JOB's verl key
# of its checkpoint limit).
read_suite() {
  local out
  out=$(mvp::helper::run nightly-suite --only "$1") || exit 1
  declare -gA SUITE=()
  mvp::kv::read SUITE <<<"$out" || mvp::log::die "the suite helper's answer: $MVP_KV_ERROR"
  read -ra JOBS <<<"${SUITE[jobs]}"
  RESUME_JOB=${SUITE[resume_job]} RESUME_REF=${SUITE[resume_ref]}
  [[ -z ${SUITE[resume_skip]} ]] || mvp::log::skip "${SUITE[resume_skip]}"
  return 0
}

# job_words JOB: how JOB is submitted: SCRIPT (scripts/NAME.sh), SPEC (the
# JobSpec it is given: none or one word), FLAGS (--retry N when the suite
# says) and WORDS (--override pairs, then -- and a verl command line).
job_words() {
  local key=job_$1_ retries
  SCRIPT=scripts/${SUITE[${key}script]}.sh
  SPEC=() FLAGS=() WORDS=()
  [[ -z ${SUITE[${key}spec]} ]] || SPEC=("${SUITE[${key}spec]}")
  retries=${SUITE[${key}retries]}
  if [[ $1 == "$RESUME_JOB" ]]; then
    FLAGS=(--retry "$(( ${retries:-1} > 1 ? retries : 1 ))")
  elif [[ -n $retries ]]; then
    FLAGS=(--retry "$retries")
  fi
  mvp::kv::words WORDS SUITE "$key"
  return 0
}

# shown WORD...: the words as a person reads them (one with a space or a quote: quoted).
shown() {
  local w out=()
  for w in "$@"; do
    if [[ $w =~ ^[][A-Za-z0-9_./:=+,@%-]*$ ]]; then out+=("$w"); else out+=("$(printf '%q' "$w")"); fi
  done
  echo "${out[*]}"
}

# notify_plan: who hears of the night, in words (never the webhook's URL).
notify_plan() {
  local who=()
  [[ -n $MVP_NIGHTLY_MAIL_TO ]] && who+=("mail to $MVP_NIGHTLY_MAIL_TO")
  [[ -n $MVP_NIGHTLY_WEBHOOK_URL_FILE ]] && who+=("the webhook whose URL is in $MVP_NIGHTLY_WEBHOOK_URL_FILE")
  ((${#who[@]})) || who=("nobody (no MVP_NIGHTLY_MAIL_TO, no MVP_NIGHTLY_WEBHOOK_URL_FILE)")
  echo "${who[0]}${who[1]:+ and ${who[1]}}"
}

# step NAME CMD...: one step of the night; its output goes to the night's log.
step() {
  local name=$1; shift
  mvp::log::step "step $name"
  if ! "$@" >>"$LOG"; then
    FAILED_STEP=$name
    mvp::log::warn "step $name failed"
    return 1
  fi
}

run_steps() {
  local s
  for s in "${MVP_BRINGUP_STEPS[@]}"; do
    step "$s" "$MVP_REPO/scripts/$s.sh" || return 1
  done
  mvp::helper::run nightly inputs --run-dir "$RUN_NAME" --phase before
  step 30_prepare_data_and_model "$MVP_REPO/scripts/30_prepare_data_and_model.sh" || return 1
  mvp::helper::run nightly inputs --run-dir "$RUN_NAME" --phase after
  mvp::log::step "step 31_snapshot_verl_code"
  local -A answer=()
  local out
  if ! out=$("$MVP_REPO/scripts/31_snapshot_verl_code.sh" --porcelain) || ! mvp::kv::read answer <<<"$out"; then
    FAILED_STEP=31_snapshot_verl_code
    return 1
  fi
  CODE_USED=${answer[code_id]:-}
  export CODE_ID=$CODE_USED
  mvp::submit::rewards
  ((CONTROL == 0)) || control_pair


  # Every job asks for all the cluster's GPUs, and verl checks FREE GPUs and
  # fails rather than queue: one job after another, each waited for at most
  # MVP_JOB_TIMEOUT seconds from its own submission.
  local job
  for job in "${JOBS[@]}"; do
    submit_job "$job"
    IDS[$job]=$SUBMITTED
  done
}

# submit_job JOB: JOB submitted as the suite says and waited for (the
# resumed job interrupted, then resumed); SUBMITTED is its submission id
# ("" when the submit script gave none).
submit_job() {
  local job=$1 out
  local -A answer=()
  job_words "$job"
  if [[ $job == "$RESUME_JOB" ]]; then
    submit_interrupted "$job"
    return 0
  fi
  mvp::log::step "submitting $job ($(shown "$SCRIPT" "${SPEC[@]}" --wait "${FLAGS[@]}" "${WORDS[@]}")), at most ${MVP_JOB_TIMEOUT}s"
  # The submit script prints submission_id=ID once Ray has the job, whatever the job's end.
  out=$("$MVP_REPO/$SCRIPT" "${SPEC[@]}" --porcelain --wait "${FLAGS[@]}" "${WORDS[@]}") || true
  mvp::kv::read answer <<<"$out" || mvp::log::warn "$job: the submit script's answer: $MVP_KV_ERROR"
  SUBMITTED=${answer[submission_id]:-}
}

# control_pair: the same-night control (helpers/mvp/nightly/control.py): the
# last good night's snapshot, then tonight's, each through the probe job's
# submit script with --wait, as bisection's probes go; the helper judges the
# pair with the suite. No good night or no snapshot: one SKIP line.
control_pair() {
  local out role code sid
  local -A plan=()
  local -a spec=() words=()
  if ! out=$(mvp::helper::run nightly control --role plan --run-dir "$RUN_NAME") || ! mvp::kv::read plan <<<"$out"; then
    mvp::log::warn "no control: the helper could not plan one (see $LOG)"
    return 0
  fi
  if [[ -n ${plan[skip]:-} ]]; then
    mvp::log::skip "same-night control (${plan[skip]})"
    return 0
  fi
  [[ -z ${plan[spec]} ]] || spec=("${plan[spec]}")
  mvp::kv::words words plan
  for role in control candidate; do
    code=$CODE_USED
    [[ $role == candidate ]] || code=${plan[control_code_id]}
    mvp::log::step "control pair: the $role probe on snapshot $code ($(shown "scripts/${plan[script]}.sh" "${spec[@]}" --wait "${words[@]}"))"
    sid=$(mvp::submit::probe plan "$code" /dev/stderr)
    mvp::helper::run nightly control --role "$role" --run-dir "$RUN_NAME" --code-id "$code" \
      --submission-id "$sid" || mvp::log::warn "the $role probe was not recorded (see $LOG)"
  done
}

# submit_interrupted JOB: JOB with its trainer SIGKILLed once verl logged a
# step drawn at random from RESUME_REF's run (helpers/mvp/worker/stopper.py), and
# --retry 1 to resume it; sets SUBMITTED (the chain's last id) and STOP_AT.
submit_interrupted() {
  local job=$1 out
  local -A answer=()
  STOP_AT=0
  if [[ -z ${IDS[$RESUME_REF]:-} ]]; then
    mvp::log::warn "resume fidelity: $RESUME_REF was not submitted; $job runs uninterrupted"
  elif out=$(mvp::helper::run nightly stop-step --run-dir "$RUN_NAME" --reference "${IDS[$RESUME_REF]}") &&
    mvp::kv::read answer <<<"$out"; then
    STOP_AT=${answer[stop_at_step]}
  else
    mvp::log::warn "resume fidelity: no step drawn; $job runs uninterrupted"
  fi
  # verl's checkpoint limit (its key the suite helper's, from the workload
  # table), which the runbook honours across the resume
  # (helpers/mvp/jobs/planning/ckpt_keep.py); the night's own overrides come after it.
  WORDS=(--override "${SUITE[resume_ckpt_keep_key]}=1" "${WORDS[@]}")
  local how="uninterrupted"
  ((STOP_AT == 0)) || how="its trainer SIGKILLed once verl logged step $STOP_AT (drawn from ${answer[drawn_from]})"
  mvp::log::step "submitting $job ($(shown "$SCRIPT" "${SPEC[@]}" --wait "${FLAGS[@]}" "${WORDS[@]}")), $how, at most ${MVP_JOB_TIMEOUT}s per attempt"
  answer=()
  out=$(MVP_STOP_AT_STEP=${STOP_AT#0} "$MVP_REPO/$SCRIPT" "${SPEC[@]}" --porcelain --wait "${FLAGS[@]}" "${WORDS[@]}") || true
  mvp::kv::read answer <<<"$out" || mvp::log::warn "$job: the submit script's answer: $MVP_KV_ERROR"
  SUBMITTED=${answer[submission_id]:-}
}

# bisect_night: after a failed night, with MVP_NIGHTLY_BISECT_REPO set, 61
# between the last good night's commit and tonight's (the helper decides
# whether the night qualifies and says why not); its outcome goes beside the
# night's report (bisection.json), which the mail names.
bisect_night() {
  [[ -n $MVP_NIGHTLY_BISECT_REPO ]] || return 0
  local out
  local -A plan=() answer=()
  if ! out=$(mvp::helper::run bisect night --run-dir "$RUN_NAME") || ! mvp::kv::read plan <<<"$out"; then
    mvp::log::warn "no bisection: the helper could not plan one (see $LOG)"
    return 0
  fi
  if [[ -n ${plan[skip]:-} ]]; then
    mvp::log::skip "bisection (${plan[skip]})"
    return 0
  fi
  mvp::log::step "bisecting ${plan[good]:0:12}..${plan[bad]:0:12} in $MVP_NIGHTLY_BISECT_REPO with job ${plan[job]}"
  out=$("$MVP_REPO/scripts/61_bisect_regression.sh" --repo "$MVP_NIGHTLY_BISECT_REPO" --good "${plan[good]}" \
    --bad "${plan[bad]}" --job "${plan[job]}") || mvp::log::warn "the bisection found no first bad commit (see $LOG)"
  mvp::kv::read answer <<<"$out" || mvp::log::warn "61's answer: $MVP_KV_ERROR"
  [[ -z ${answer[report]:-} ]] || mvp::helper::run bisect told --run-dir "$RUN_NAME" --dir "${answer[report]}" || true
}

# check_settings: reads the suite (--only) and CONTROL (--control or
# MVP_NIGHTLY_CONTROL); a wrong setting, the judge's and the notification's
# included, is an ERROR now, not at the night's end.
check_settings() {
  local only=${MVP_FLAG[--only]:-}
  [[ -n $only || -z ${MVP_FLAG[--only]+set} ]] || mvp::log::die "--only needs a list, e.g. --only ppo,sft"
  read_suite "$only"
  # MVP_NIGHTLY_CONTROL and MVP_NIGHTLY_KEEP are of their contract types
  # (flag; int 1..): config.sh checked them.
  CONTROL=$MVP_NIGHTLY_CONTROL
  [[ ${MVP_FLAG[--control]:-0} != 1 ]] || CONTROL=1
  # The judge's and the notification's settings: wrong ones fail now, not at the night's end.
  mvp::helper::run notify --check
}

# print_plan REGRESSIONS: --dry-run's plan of the night, on stdout.
print_plan() {
  local regressions=$1 i lock report index
  mvp::config::run_file lock "$regressions" lock
  mvp::config::run_file index "$regressions" index
  mvp::config::run_file report "$regressions/$RUN_ID" report
  echo "plan of $RUN_ID (runtime $MVP_RUNTIME, shared root $SHARED_ROOT):"
  echo "  steps: ${MVP_BRINGUP_STEPS[*]} 30_prepare_data_and_model 31_snapshot_verl_code (CODE_ID=${CODE_ID:-from the tree}); the runbook's reward functions (templates/rewards/) copied to user/code/"
  ((CONTROL == 0)) || echo "  then the same-night control: the last good night's snapshot, then tonight's, each a probe of the suite's grpo (2 steps, seed 1), judged as a pair"
  for i in "${JOBS[@]}"; do
    job_words "$i"
    if [[ $i == "$RESUME_JOB" ]]; then
      echo "  then $i: $(shown "$SCRIPT" "${SPEC[@]}" --wait "${FLAGS[@]}" "${WORDS[@]}"), its trainer SIGKILLed after a step drawn at random from $RESUME_REF's (resume fidelity)"
      continue
    fi
    echo "  then $i: $(shown "$SCRIPT" "${SPEC[@]}" --wait "${FLAGS[@]}" "${WORDS[@]}") (at most ${MVP_JOB_TIMEOUT}s from its submission${SUITE[job_${i}_checks]:+; judged on ${SUITE[job_${i}_checks]//,/, } only})"
  done
  ((MVP_NIGHTLY_RERUN == 0)) || echo "  a job whose only failed check is regression runs once more; the check fails only if the rerun's fails too"
  echo "  judge every job (and against its last $MVP_NIGHTLY_HISTORY good nights), write ${report%.*}.{json,md,html} and $index"
  [[ -z $MVP_NIGHTLY_BISECT_REPO ]] || echo "  when the night fails and its commit descends from the last good night's in $MVP_NIGHTLY_BISECT_REPO: 61_bisect_regression.sh between the two, with the first failed job"
  echo "  then tell $(notify_plan), once, when the night $([[ $MVP_NIGHTLY_NOTIFY_ON == always ]] && echo ends || echo fails)"
  echo "  keep the newest $MVP_NIGHTLY_KEEP runs and their job directories (lock: $lock)"
}

# run_locked REGRESSIONS ARG...: runs the night again (this script with
# ARG...) as a child of flock, which holds the lock for it; exits with its
# status (MVP_LOCKED_EXIT, with one ERROR line, when another run holds it).
run_locked() {
  local lock rc=0
  mvp::config::run_file lock "$1" lock
  shift
  MVP_NIGHTLY_HOLDS_LOCK=1 mvp::run::with_lock "$lock" "$0" "$@" || rc=$?
  if ((rc == MVP_LOCKED_EXIT)); then
    echo "ERROR: another nightly run holds $lock; not starting (exit $MVP_LOCKED_EXIT)" >&2
  fi
  exit "$rc"
}

# judge_night REGRESSIONS: prunes old nights, judges every job, bisects a
# failed night, tells whoever hears of it and prints the summary line (what
# cron mails); NIGHT_RC is the judge's exit status (0: every check passed).
judge_night() {
  local regressions=$1 summary job head_host report index
  local -A verdict=()
  local -a judged=()
  for job in "${JOBS[@]}"; do
    judged+=(--job "$job=${IDS[$job]:-}")
    [[ -z ${SUITE[job_${job}_checks]} ]] || judged+=(--checks "$job=${SUITE[job_${job}_checks]}")
    [[ -z ${SUITE[job_${job}_rises]} ]] || judged+=(--rises "$job")
  done
  [[ -z $RESUME_JOB ]] || judged+=(--resume "$RESUME_JOB=$RESUME_REF:$STOP_AT")
  # The head's host name as its submissions record it: the node's name on
  # local and compose, whatever the platform named the container on ssh.
  head_host=$(mvp::rt::exec "$MVP_HEAD_NODE" uname -n 2>/dev/null) || head_host=""
  # Retention first, so the index written by the judge shows pruned nights as such.
  mvp::helper::run nightly retention --run-dir "$RUN_NAME" >>"$LOG" || true
  judged=(--run-dir "$RUN_NAME" --started "$STARTED" --code-id "$CODE_USED" --failed-step "$FAILED_STEP" --head-host "$head_host" "${judged[@]}")
  ask_judge
  if [[ -n ${verdict[rerun]:-} ]]; then
    rerun_jobs "${verdict[rerun]}"
    ask_judge
  fi
  summary=${verdict[summary]:-}
  mvp::config::run_file report_md "$RUN_DIR" report
  mvp::config::run_file index "$regressions" index
  mvp::log::info "report: $report, index: $index"
  ((NIGHT_RC == 0)) || bisect_night
  mvp::helper::run notify --run-dir "$RUN_NAME" || mvp::log::warn "the notification step failed; see $LOG"
  [[ -n $summary ]] || summary="NIGHTLY FAIL $RUN_ID: the judge did not run; see $LOG"
  echo "$summary"
}

# ask_judge: the judge's answer to its words `judged` (judge_night's) read
# into judge_night's `verdict`; NIGHT_RC is its exit status.
ask_judge() {
  local out
  NIGHT_RC=0 verdict=()
  out=$(mvp::helper::run nightly judge "${judged[@]}") || NIGHT_RC=$?
  mvp::kv::read verdict <<<"$out" || mvp::log::warn "the judge's answer: $MVP_KV_ERROR"
}

# rerun_jobs "JOB...": each job the judge names (its one failed check
# regression, MVP_NIGHTLY_RERUN=1) submitted once more, as the first time;
# adds --rerun JOB=ID to `judged`, the judge's words. The resumed job draws
# its own step to be interrupted at; the night's STOP_AT stays its first run's.
rerun_jobs() {
  local job stop_at=$STOP_AT
  for job in $1; do
    mvp::log::step "rerunning $job: its check regression alone failed; the night fails only if the rerun's fails too"
    submit_job "$job"
    judged+=(--rerun "$job=$SUBMITTED")
  done
  STOP_AT=$stop_at
}

main() {
  local -a original_args=("$@")
  mvp::config::init "$@"
  check_settings
  RUN_ID=nightly-$(date -u +%Y%m%dT%H%M%SZ)
  local regressions
  regressions=$(mvp::config::layout regressions)
  if [[ $MVP_DRY_RUN == 1 ]]; then
    print_plan "$regressions"
    return 0
  fi

  [[ -d $MVP_HOST_SHARED_DIR ]] || mvp::log::die "shared root $MVP_HOST_SHARED_DIR does not exist; mount it or run scripts/00_prereq_check.sh"
  [[ ${MVP_NIGHTLY_HOLDS_LOCK:-0} == 1 ]] || run_locked "$regressions" "${original_args[@]}"
  RUN_DIR=$regressions/$RUN_ID
  mkdir "$RUN_DIR"
  mvp::config::run_file log "$RUN_DIR" LOG
  STARTED=$(date -u +%FT%TZ)
  echo "$RUN_ID: log $LOG"
  # Everything the steps say goes to the night's log; to the terminal too when there is one.
  if [[ -t 2 ]]; then exec 2> >(tee -a "$LOG" >&2); else exec 2>>"$LOG"; fi
  mvp::log::info "nightly $RUN_ID: jobs ${JOBS[*]}${MVP_NIGHTLY_OVERRIDES:+, overrides $MVP_NIGHTLY_OVERRIDES}"
  FAILED_STEP="" CODE_USED="" STOP_AT=0
  declare -gA IDS=()
  # The run directory as the helper takes it, wherever it runs: relative to the shared root.
  RUN_NAME=$(mvp::nodes::shared_name "$RUN_DIR")
  run_steps || true
  judge_night "$regressions"
  ((NIGHT_RC == 0)) || return 1
}

main "$@"
