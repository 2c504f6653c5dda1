# shellcheck shell=bash
# Submitting a JobSpec (40-44).

# The flags of 40-44, in mvp::flags::spec's form: their --help and docs/scripts.md.
# shellcheck disable=SC2034  # 40-44 read it
MVP_SUBMIT_FLAGS=(
  "--wait  wait for the job (at most MVP_JOB_TIMEOUT s, then stop it); exit 0 only if it SUCCEEDED"
  "--queue  GPUs held by other jobs: wait for them (at most MVP_JOB_TIMEOUT s), not refuse"
  "--override KEY=VALUE  one more trainer override (repeatable), e.g. trainer.total_training_steps=5"
  "--reward-fn PATH[:NAME]  the reward function: a file under <SHARED_ROOT>/user/code/ (NAME default compute_score)"
  "--resume-from ID[/global_step_N]  start from that job's (latest) checkpoint, in a new job directory"
  "--retry N  with --wait: a FAILED or LOST job goes on from its newest checkpoint in a new job, at most N times, until one makes no progress (overrides the JobSpec's retries)"
  "--porcelain  print submission_id=ID lines (key=value) for a program to read"
)

# mvp::submit::run cli|sdk JOBSPEC|"" RAY_CONFIG|"" [HELPER ARGS...]: validates, makes
# the job directory and submits from the head (the words after 43's `--`,
# MVP_COMMAND, are a verl command line, which may stand for the JobSpec: then
# JOBSPEC may be empty; an empty RAY_CONFIG is
# templates/configs/dev.yaml; --configured-model: MVP_MODEL_ID's model
# instead of the JobSpec's). Takes --wait, --queue, --override KEY=VALUE,
# --reward-fn PATH[:NAME], --resume-from ID[/global_step_N] and --retry N
# from MVP_FLAG_WORDS (--retry overrides the JobSpec's `retries`); prints the
# submission id last on stdout (with retries, each job's id, the last job's
# last); with --porcelain, as submission_id=ID lines (mvp::kv::emit) for a
# program to read with mvp::kv::read.
mvp::submit::run() {
  local via=$1 spec=$2 cfg=${3:-$MVP_REPO/templates/configs/dev.yaml} arg; shift 3
  local -a args=(submit --via "$via")
  local wait=${MVP_FLAG[--wait]:-0} retries=${MVP_FLAG[--retry]-} porcelain=${MVP_FLAG[--porcelain]:-0}
  # A number here (bash counts with it); its range is the helper's (jobspec.check_retries, as a JobSpec's retries).
  [[ -z ${MVP_FLAG[--retry]+set} || $retries =~ ^[0-9]+$ ]] ||
    mvp::log::die "--retry needs a number of resumptions, e.g. --retry 3"
  mvp::submit::helper_words args "$@"
  ((${retries:-0} == 0 || wait)) || mvp::log::die "--retry resumes a job that failed, which only --wait sees; add --wait"
  for arg in "$spec" "$cfg"; do
    [[ -z $arg && $arg == "$spec" || -f $arg && -r $arg ]] || mvp::log::die "$arg does not exist or is not readable"
  done
  args+=(--jobspec-name "${spec:-the command line}" --ray-config-name "$cfg")
  [[ $MVP_DRY_RUN == 1 ]] && args+=(--check-only)
  mvp::rt::node_is_up "$MVP_HEAD_NODE" || mvp::log::die "the head node is not up; run scripts/01_up.sh and 20_start_head.sh"
  local rc=0 first attempt from
  mvp::submit::once "$spec" "$cfg" "$wait" "$porcelain" "$retries" "${args[@]}" || rc=$?
  first=$SUBMITTED_ID retries=$SUBMITTED_LEFT
  for ((attempt = 1; attempt <= retries && rc != 0; attempt++)); do
    # The helper's wait decided: a job Ray took that ended FAILED or LOST, and
    # a chain that made progress, has resume_from (else its ERROR line said why).
    from=$SUBMITTED_RESUME_FROM
    [[ -n $from ]] || break
    mvp::log::step "retry $attempt of $retries: job $SUBMITTED_ID ended $SUBMITTED_STATUS; resuming from $from"
    rc=0
    # Ids are never reused: the chain's jobs are named after its first.
    mvp::submit::once "$spec" "$cfg" "$wait" "$porcelain" "$((retries - attempt))" "${args[@]}" \
      --resume-from "$from" --submission-id "$first-r$attempt" || rc=$?
  done
  ((rc == 0)) || exit "$rc"
}

# mvp::submit::helper_words ARRAY WORD...: appends to the array named ARRAY
# what the helper takes of WORD... and of MVP_FLAG_WORDS (not --wait or
# --porcelain, which run acts on; --retry N, which run acts on too, for the
# helper to check as it checks a JobSpec's retries) and MVP_COMMAND's words.
mvp::submit::helper_words() {
  local -n _mvp_words=$1
  local arg
  shift
  # What the helper takes, in the order given (words parsed already).
  set -- "$@" "${MVP_FLAG_WORDS[@]}"
  while (($#)); do
    case $1 in
      --wait|--porcelain) ;;
      --retry|--override|--reward-fn|--resume-from) _mvp_words+=("$1" "$2"); shift ;;
      *) _mvp_words+=("$1") ;;
    esac
    shift
  done
  # Each word as one argument of its own (=: a word may start with -).
  for arg in ${MVP_COMMAND[@]+"${MVP_COMMAND[@]}"}; do
    _mvp_words+=("--command-word=$arg")
  done
}

# mvp::submit::once SPEC CFG WAIT PORCELAIN LEFT HELPER_ARGS...: one submission
# (and its wait); prints the id (PORCELAIN=1: as submission_id=ID) and sets
# SUBMITTED_ID, SUBMITTED_LEFT (the retries left after this job: LEFT, or
# when LEFT is empty the JobSpec's `retries`) and, after a wait,
# SUBMITTED_STATUS (how the job ended: the wait's status=) and, with retries
# left, SUBMITTED_RESUME_FROM (where its chain goes on: the wait's
# resume_from=, empty when it is not to be retried). Under --dry-run, prints
# the helper's check (the resolved JobSpec as JSON) instead.
mvp::submit::once() {
  local spec=$1 cfg=$2 wait=$3 porcelain=$4 left=$5; shift 5
  # The texts travel on stdin, never on argv (secrets, size): spec NUL config.
  local out rc=0
  out=$(mvp::helper::run "$@" < <([[ -z $spec ]] || cat -- "$spec"; printf '\0'; cat -- "$cfg")) || rc=$?
  SUBMITTED_ID="" SUBMITTED_LEFT=0 SUBMITTED_STATUS="" SUBMITTED_RESUME_FROM=""
  if [[ $MVP_DRY_RUN == 1 ]]; then
    [[ -z $out ]] || printf '%s\n' "$out"
    return "$rc"
  fi
  # The helper answers submission_id=ID once Ray has the job, also when it
  # fails after that (its ERROR line says what).
  local -A answer=()
  mvp::kv::read answer <<<"$out" || mvp::log::die "the helper's submit answer: $MVP_KV_ERROR"
  SUBMITTED_ID=${answer[submission_id]:-}
  [[ -n $left ]] || left=$(mvp::submit::spec_retries "${answer[retries]:-0}" "$SUBMITTED_ID" "$wait")
  SUBMITTED_LEFT=$left
  if ((rc == 0 && wait)); then
    # The wait runs on this host, not in the head: it outlives a head that
    # dies, and archives the job as LOST then. (The id is in the log above.)
    # With retries left it also says where the chain goes on: one process an attempt.
    local -a point=()
    if ((left > 0)); then point=(--retry-point); fi
    out=$(mvp::helper::run wait "$SUBMITTED_ID" "${point[@]}") || rc=$?
    answer=()
    mvp::kv::read answer <<<"$out" || mvp::log::die "the helper's wait answer: $MVP_KV_ERROR"
    SUBMITTED_STATUS=${answer[status]:-} SUBMITTED_RESUME_FROM=${answer[resume_from]:-}
  fi
  # The id last on stdout, also when something failed after Ray accepted the job.
  if [[ -n $SUBMITTED_ID ]]; then
    if ((porcelain)); then mvp::kv::emit submission_id "$SUBMITTED_ID"; else printf '%s\n' "$SUBMITTED_ID"; fi
  fi
  return "$rc"
}

# mvp::submit::spec_retries N ID WAIT: N, the `retries` of the JobSpec job ID
# was submitted with (the helper's answer); 0 without --wait, which alone
# sees a failure (said once, on stderr).
mvp::submit::spec_retries() {
  local n=$1
  [[ $n =~ ^[0-9]+$ ]] || n=0
  if ((n > 0 && !$3)); then
    mvp::log::warn "the JobSpec asks for retries: $n, which only --wait sees; job $2 will not be retried"
    n=0
  fi
  echo "$n"
}

# mvp::submit::probe PLAN CODE LOG [WHY]: submits, with --wait, the probe job
# that the helper's key=value answer PLAN (an associative array, by name:
# script, spec, and the words kv.py's `words` carried) describes, on snapshot
# CODE (61's bisection probes, 60's control pair); the submit script's stderr
# goes to LOG (/dev/stderr: the caller's). Prints the job's submission id
# (the submit script prints it once Ray has the job, whatever the job's end),
# or nothing when Ray never had it; then, with WHY (a file), WHY gets the
# key=value line submit_rc=<the submit script's exit code>: why no job.
mvp::submit::probe() {
  local -n _probe_plan=$1
  local code=$2 log=$3 why=${4:-} out rc=0
  local -a spec=() words=()
  local -A answer=()
  [[ -z ${_probe_plan[spec]} ]] || spec=("${_probe_plan[spec]}")
  mvp::kv::words words _probe_plan
  out=$(env "${MVP_FLAG_SETTINGS[@]}" CODE_ID="$code" "$MVP_REPO/scripts/${_probe_plan[script]}.sh" "${spec[@]}" \
    --porcelain --wait "${words[@]}" 2>>"$log") || rc=$?
  mvp::kv::read answer <<<"$out" || mvp::log::warn "the probe's submit script's answer: $MVP_KV_ERROR"
  echo "${answer[submission_id]:-}"
  [[ -z $why || -n ${answer[submission_id]:-} ]] || mvp::kv::emit submit_rc "$rc" >"$why"
}

# mvp::submit::rewards: the runbook's reward functions (templates/rewards/*.py)
# in the shared root's user/code/, where a JobSpec's reward_fn_path finds them
# (the suite's learning probe names user/code/learning_probe.py): 60 before
# its jobs, 61 before its probes. A file already the same is left as it is.
mvp::submit::rewards() {
  local dir f
  dir=$(mvp::config::layout user_code)
  mkdir -p "$dir"
  for f in "$MVP_REPO"/templates/rewards/*.py; do
    if cmp -s "$f" "$dir/${f##*/}"; then
      mvp::log::skip "user/code/${f##*/} (the same as templates/rewards/${f##*/})"
    else
      cp "$f" "$dir/" && mvp::log::info "templates/rewards/${f##*/} copied to user/code/"
    fi
  done
}
