# shellcheck shell=bash disable=SC2034  # MVP_DRY_RUN, MVP_ARGS and the flags' values set here are read by the other library files and the scripts
# Flags: the one parser every script's flags go through, and --help (the
# usage is the calling script's header comment). A script declares what it
# takes beyond the common flags with mvp::flags::spec, next to its usage; every
# script gets the same shapes of ERROR line for the same mistakes.

# mvp::flags::spec WORD...: what the calling script takes beyond the common
# flags (MVP_FLAG_SPEC, read by mvp::flags::parse), stated beside its usage.
mvp::flags::spec() { MVP_FLAG_SPEC=("$@"); }

# mvp::flags::parse "$@": the common flags, wherever they stand (-h/--help,
# --dry-run, --config FILE, --runtime NAME, --shared-root PATH; the settings
# they give go to MVP_FLAG_SETTINGS for mvp::config::load), and those of
# MVP_FLAG_SPEC; the positional words are left, in order, in MVP_ARGS.
# A script's flag lands in MVP_FLAG[--name] (its value, 1 for a switch; a
# repeated flag keeps the last) and in MVP_FLAG_WORDS (as given, in order,
# a value after its flag: what a script hands on). MVP_FLAG_SPEC words:
#   --name         a switch
#   --name=WHAT    takes a value; without one: "--name needs WHAT"
#   NAME           one positional word (NAME only documents it)
#   NAME*          any number of positional words
#   NAME...        the rest: from the first positional word on, every word
#                  but a common flag is left untouched in MVP_ARGS (a command
#                  and its own arguments)
# An unknown flag or a positional word beyond the spec's is one ERROR line.
mvp::flags::parse() {
  local word positionals=0 many=0 rest=0 in_rest=0
  local -A takes=()
  for word in ${MVP_FLAG_SPEC[@]+"${MVP_FLAG_SPEC[@]}"}; do
    case $word in
      --*=*) takes[${word%%=*}]=${word#*=} ;;
      --*) takes[$word]="" ;;
      *...) rest=1 ;;
      *'*') many=1 ;;
      *) positionals=$((positionals + 1)) ;;
    esac
  done
  MVP_ARGS=() MVP_FLAG_SETTINGS=() MVP_FLAG_WORDS=()
  declare -gA MVP_FLAG=()
  while (($#)); do
    case $1 in
      -h|--help) mvp::flags::usage; exit 0 ;;
      --dry-run) MVP_DRY_RUN=1 ;;
      --config) (($# > 1)) || mvp::log::die "--config needs a file"; MVP_FLAG_SETTINGS+=("MVP_CONFIG=$2"); shift ;;
      --runtime) (($# > 1)) || mvp::log::die "--runtime needs a runtime name"; MVP_FLAG_SETTINGS+=("MVP_RUNTIME=$2"); shift ;;
      --shared-root) (($# > 1)) || mvp::log::die "--shared-root needs a path"; MVP_FLAG_SETTINGS+=("SHARED_ROOT=$2"); shift ;;
      *)
        if ((in_rest)); then
          MVP_ARGS+=("$1")
        elif [[ $1 == -?* && -n ${takes[$1]+set} ]]; then
          if [[ -n ${takes[$1]} ]]; then
            (($# > 1)) || mvp::log::die "$1 needs ${takes[$1]}"
            MVP_FLAG[$1]=$2
            MVP_FLAG_WORDS+=("$1" "$2")
            shift
          else
            MVP_FLAG[$1]=1
            MVP_FLAG_WORDS+=("$1")
          fi
        elif [[ $1 == -?* ]]; then
          mvp::log::die "unknown argument '$1'; see --help"
        elif ((rest || many || ${#MVP_ARGS[@]} < positionals)); then
          in_rest=$rest
          MVP_ARGS+=("$1")
        else
          mvp::log::die "unexpected argument '$1'; see --help"
        fi ;;
    esac
    shift
  done
}

# Prints the calling script's header comment (its usage), without the '# '.
mvp::flags::usage() {
  sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"
}
