# shellcheck shell=bash disable=SC2034  # MVP_DRY_RUN, MVP_ARGS and the flags' values set here are read by the other library files and the scripts
# Flags: the one parser every script's flags go through, and --help. A
# numbered script declares what it takes beyond the common flags with
# mvp::flags::spec, one entry per flag or positional word, each with what it
# does: that one declaration is what the parser accepts, the flag section of
# --help, and (through --help) docs/scripts.md (make docs/scripts). Every
# script gets the same shapes of ERROR line for the same mistakes.

# The common flags, as every script's --help names them (mvp::flags::parse
# takes them, wherever they stand).
MVP_FLAGS_COMMON=("--dry-run" "--config FILE" "--runtime NAME" "--shared-root PATH" "--help")

# mvp::flags::spec ENTRY...: what the calling script takes beyond the common
# flags (MVP_FLAG_SPEC). An entry is 'FORM  what it does' (two spaces or
# more before the description), FORM one of:
#   --name         a switch
#   --name WHAT    takes a value; without one: "--name needs WHAT"
#   NAME, [NAME]   one positional word (the name only documents it)
#   NAME...        the rest: from the first positional word on, every word
#                  but a common flag is left untouched in MVP_ARGS (a command
#                  and its own arguments)
#   -- NAME...     every word after a `--` is left untouched, common flags
#                  too, in MVP_COMMAND (a command line of another program's:
#                  43's verl command line); without this entry `--` is refused
# An entry without a description (the older form: --name=WHAT, NAME) is
# still parsed, for the libexec programs whose header documents their flags,
# but --help does not show it.
mvp::flags::spec() { MVP_FLAG_SPEC=("$@"); }

# mvp::flags::form ENTRY: the entry's FORM (FLAG_FORM) and description (FLAG_DOC, empty in the older form).
mvp::flags::form() {
  local entry=$1
  FLAG_FORM=${entry%%  *} FLAG_DOC=""
  if [[ $FLAG_FORM != "$entry" ]]; then
    FLAG_DOC=${entry#"$FLAG_FORM"}
    FLAG_DOC=${FLAG_DOC#"${FLAG_DOC%%[! ]*}"}
  elif [[ $entry == --*=* ]]; then
    FLAG_FORM="${entry%%=*} ${entry#*=}"
  fi
}

# mvp::flags::read_spec: MVP_FLAG_SPEC as the parser needs it: FLAG_TAKES
# (--name -> WHAT, "" for a switch), FLAG_POSITIONALS (how many), FLAG_REST (1: NAME...),
# FLAG_COMMAND (1: -- NAME...).
mvp::flags::read_spec() {
  local entry
  declare -gA FLAG_TAKES=()
  FLAG_POSITIONALS=0 FLAG_REST=0 FLAG_COMMAND=0
  for entry in ${MVP_FLAG_SPEC[@]+"${MVP_FLAG_SPEC[@]}"}; do
    mvp::flags::form "$entry"
    case $FLAG_FORM in
      '-- '*) FLAG_COMMAND=1 ;;
      --*' '*) FLAG_TAKES[${FLAG_FORM%% *}]=${FLAG_FORM#* } ;;
      --*) FLAG_TAKES[$FLAG_FORM]="" ;;
      *...|*...']') FLAG_REST=1 ;;
      *) FLAG_POSITIONALS=$((FLAG_POSITIONALS + 1)) ;;
    esac
  done
}

# mvp::flags::parse "$@": the common flags, wherever they stand (-h/--help,
# --dry-run, --config FILE, --runtime NAME, --shared-root PATH; the settings
# they give go to MVP_FLAG_SETTINGS for mvp::config::load), and those of
# MVP_FLAG_SPEC; the positional words are left, in order, in MVP_ARGS, and
# with a `-- NAME...` entry the words after `--` in MVP_COMMAND.
# A script's flag lands in MVP_FLAG[--name] (its value, 1 for a switch; a
# repeated flag keeps the last) and in MVP_FLAG_WORDS (as given, in order,
# a value after its flag: what a script hands on).
# An unknown flag or a positional word beyond the spec's is one ERROR line.
mvp::flags::parse() {
  local in_rest=0
  mvp::flags::read_spec
  MVP_ARGS=() MVP_FLAG_SETTINGS=() MVP_FLAG_WORDS=() MVP_COMMAND=()
  declare -gA MVP_FLAG=()
  while (($#)); do
    if [[ $1 == -- ]] && ((FLAG_COMMAND && !in_rest)); then
      MVP_COMMAND=("${@:2}")
      break
    fi
    case $1 in
      -h|--help) mvp::flags::usage; exit 0 ;;
      --dry-run) MVP_DRY_RUN=1 ;;
      --config) (($# > 1)) || mvp::log::die "--config needs a file"; MVP_FLAG_SETTINGS+=("MVP_CONFIG=$2"); shift ;;
      --runtime) (($# > 1)) || mvp::log::die "--runtime needs a runtime name"; MVP_FLAG_SETTINGS+=("MVP_RUNTIME=$2"); shift ;;
      --shared-root) (($# > 1)) || mvp::log::die "--shared-root needs a path"; MVP_FLAG_SETTINGS+=("SHARED_ROOT=$2"); shift ;;
      *)
        if ((in_rest)); then
          MVP_ARGS+=("$1")
        elif [[ $1 == -?* && -n ${FLAG_TAKES[$1]+set} ]]; then
          mvp::flags::take "$@" || shift
        elif [[ $1 == -?* ]]; then
          mvp::log::die "unknown argument '$1'; see --help"
        elif ((FLAG_REST || ${#MVP_ARGS[@]} < FLAG_POSITIONALS)); then
          in_rest=$FLAG_REST
          MVP_ARGS+=("$1")
        else
          mvp::log::die "unexpected argument '$1'; see --help"
        fi ;;
    esac
    shift
  done
}

# mvp::flags::take FLAG [VALUE...]: one of the script's flags into MVP_FLAG
# and MVP_FLAG_WORDS; returns 1 when it took the next word as its value.
mvp::flags::take() {
  if [[ -z ${FLAG_TAKES[$1]} ]]; then
    MVP_FLAG[$1]=1
    MVP_FLAG_WORDS+=("$1")
    return 0
  fi
  (($# > 1)) || mvp::log::die "$1 needs ${FLAG_TAKES[$1]}"
  MVP_FLAG[$1]=$2
  MVP_FLAG_WORDS+=("$1" "$2")
  return 1
}

# mvp::flags::usage: --help: for a numbered script, the synopsis made from
# its spec (no blank line in it) and a blank line; then the calling script's
# header comment (what it does), without the '# '. The libexec programs'
# headers name their flags themselves.
mvp::flags::usage() {
  if [[ $(basename "$0") == [0-9][0-9]_*.sh ]]; then
    mvp::flags::synopsis
    echo
  fi
  sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"
}

# mvp::flags::synopsis: "Usage: scripts/NAME POSITIONAL... [FLAGS]" in the
# order the parser takes them (with a NAME... entry the flags come first:
# from the first positional word on, every word is the command's own), one
# line per documented entry of the spec (FORM, then what it does), and the
# common flags.
mvp::flags::synopsis() {
  local entry width=0 words="" line tail="" rest=0
  local -a lines=()
  for entry in ${MVP_FLAG_SPEC[@]+"${MVP_FLAG_SPEC[@]}"}; do
    mvp::flags::form "$entry"
    [[ -n $FLAG_DOC ]] || continue
    [[ $FLAG_FORM != '-- '* ]] || tail=" [$FLAG_FORM]"
    [[ $FLAG_FORM == -* ]] || words+=" $FLAG_FORM"
    [[ $FLAG_FORM == -* || $FLAG_FORM != *...* ]] || rest=1
    ((${#FLAG_FORM} <= width)) || width=${#FLAG_FORM}
    lines+=("$FLAG_FORM" "$FLAG_DOC")
  done
  if ((rest)); then
    echo "Usage: scripts/$(basename "$0") [FLAGS]$words$tail"
  else
    echo "Usage: scripts/$(basename "$0")$words [FLAGS]$tail"
  fi
  for ((line = 0; line < ${#lines[@]}; line += 2)); do
    printf '  %-*s  %s\n' "$width" "${lines[line]}" "${lines[line + 1]}"
  done
  printf -v line '%s, ' "${MVP_FLAGS_COMMON[@]}"
  echo "Common flags: ${line%, } (docs/scripts.md)"
}
