# shellcheck shell=bash
# Submitting a JobSpec (40-44).

# mvp::submit cli|sdk JOBSPEC RAY_CONFIG|"" [HELPER ARGS...]: validates, makes
# the job directory and submits from the head (an empty RAY_CONFIG is
# templates/configs/dev.yaml; --configured-model: MVP_MODEL_ID's model
# instead of the JobSpec's). Takes --wait, --queue, --override KEY=VALUE,
# --reward-fn PATH[:NAME] and --resume-from ID[/global_step_N] from MVP_ARGS;
# prints the submission id last on stdout.
mvp::submit() {
  local via=$1 spec=$2 cfg=${3:-$MVP_REPO/templates/configs/dev.yaml} arg; shift 3
  local -a args=(submit --via "$via") rest=()
  local wait=0
  set -- "$@" "${MVP_ARGS[@]}"
  while (($#)); do
    case $1 in
      --wait) wait=1 ;;
      --queue) args+=(--queue) ;;
      --override) (($# > 1)) || mvp::die "--override needs KEY=VALUE"; args+=(--override "$2"); shift ;;
      --configured-model) args+=(--configured-model) ;;
      --reward-fn) (($# > 1)) || mvp::die "--reward-fn needs PATH[:NAME]"; args+=(--reward-fn "$2"); shift ;;
      --resume-from) (($# > 1)) || mvp::die "--resume-from needs a submission id"; args+=(--resume-from "$2"); shift ;;
      -*) mvp::die "unknown option '$1'; see --help" ;;
      *) rest+=("$1") ;;
    esac
    shift
  done
  ((${#rest[@]} == 0)) || mvp::die "unexpected argument '${rest[0]}'; see --help"
  for arg in "$spec" "$cfg"; do
    [[ -f $arg && -r $arg ]] || mvp::die "$arg does not exist or is not readable"
  done
  args+=(--jobspec-name "$spec" --ray-config-name "$cfg")
  [[ $MVP_DRY_RUN == 1 ]] && args+=(--check-only)
  mvp::rt::node_is_up "$MVP_HEAD_NODE" || mvp::die "the head node is not up; run scripts/01_up.sh and 20_start_head.sh"
  # The texts travel on stdin, never on argv (secrets, size): spec NUL config.
  local out rc=0
  out=$(mvp::helper "${args[@]}" < <(cat -- "$spec"; printf '\0'; cat -- "$cfg")) || rc=$?
  if ((rc == 0 && wait)) && [[ $MVP_DRY_RUN != 1 ]]; then
    # The wait runs on this host, not in the head: it outlives a head that
    # dies, and archives the job as LOST then. (The id is in the log above.)
    mvp::helper wait "${out##*$'\n'}" || rc=$?
  fi
  # The id last on stdout, also when something failed after Ray accepted the
  # job (the helper's ERROR line says what).
  [[ -z $out ]] || printf '%s\n' "$out"
  ((rc == 0)) || exit "$rc"
}
