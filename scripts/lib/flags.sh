# shellcheck shell=bash disable=SC2034  # MVP_DRY_RUN, MVP_ARGS and the flags' values set here are read by the other library files and the scripts
# Flags: the one parser every script's flags go through, and --help (the
# usage is the calling script's header comment).

# mvp::flags::parse "$@": takes the flags every script has and leaves the
# others, in order, in MVP_ARGS.
mvp::flags::parse() {
  MVP_ARGS=()
  MVP_FLAG_SETTINGS=()
  while (($#)); do
    case $1 in
      -h|--help) mvp::flags::usage; exit 0 ;;
      --dry-run) MVP_DRY_RUN=1 ;;
      --config) (($# > 1)) || mvp::log::die "--config needs a file"; MVP_FLAG_SETTINGS+=("MVP_CONFIG=$2"); shift ;;
      --runtime) (($# > 1)) || mvp::log::die "--runtime needs a runtime name"; MVP_FLAG_SETTINGS+=("MVP_RUNTIME=$2"); shift ;;
      --shared-root) (($# > 1)) || mvp::log::die "--shared-root needs a path"; MVP_FLAG_SETTINGS+=("SHARED_ROOT=$2"); shift ;;
      *) MVP_ARGS+=("$1") ;;
    esac
    shift
  done
}

# mvp::flags::switches FLAG...: a script that takes only these flags beyond the
# common ones: each word left in MVP_ARGS must be one of them; they are
# kept, in order, in MVP_SWITCHES (to hand to the helper).
mvp::flags::switches() {
  local arg
  MVP_SWITCHES=()
  for arg in "${MVP_ARGS[@]}"; do
    [[ " $* " == *" $arg "* ]] || mvp::log::die "unknown argument '$arg'; see --help"
    MVP_SWITCHES+=("$arg")
  done
}

# Prints the calling script's header comment (its usage), without the '# '.
mvp::flags::usage() {
  sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"
}
