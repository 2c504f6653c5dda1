#!/usr/bin/env bats
# One flag spec per script (mvp::flags::spec) is what its parser accepts,
# the synopsis its --help prints first, and docs/scripts.md's flag sections
# (make docs/scripts). The checks run on a tree given as their argument, so
# that the tests below can prove each fails on a copy with a planted fault.

setup() {
  load ../test_helper/common
}

# check_docs ROOT: exit 1 (and a diff) when ROOT/docs/scripts.md is not what
# ROOT's scripts generate.
check_docs() {
  local root=$1
  diff -u "$root/docs/scripts.md" <("$root/scripts/libexec/scripts_doc.sh") ||
    { echo "docs/scripts.md is stale; run make docs/scripts"; return 1; }
}

# shown SYNOPSIS: "FLAG WHAT" per flag the synopsis shows (WHAT "-" for a
# switch): its entry lines and the common flags' line.
shown() {
  local line item
  while IFS= read -r line; do
    if [[ $line =~ ^\ \ (--[a-z0-9-]+)(\ ([^ ]+))?\ \  ]]; then
      echo "${BASH_REMATCH[1]} ${BASH_REMATCH[3]:--}"
    elif [[ $line == "Common flags: "* ]]; then
      line=${line#Common flags: } line=${line% (*}
      while IFS= read -r -d , item; do
        item=${item# }
        [[ $item == *' '* ]] && echo "$item" || echo "$item -"
      done <<<"$line,"
    fi
  done <<<"$1"
}

# probe SCRIPT FLAG: how the script's parser takes FLAG, never running the
# script: "refused", "switch" or "value" (two unknown words follow it: the
# first or the second is the one refused).
probe() {
  local out
  out=$("$1" "$2" --probe-first --probe-second 2>&1)
  case $out in
    "ERROR: unknown argument '$2'; see --help") echo refused ;;
    "ERROR: unknown argument '--probe-first'; see --help") echo switch ;;
    "ERROR: unknown argument '--probe-second'; see --help") echo value ;;
    *) echo "other: $out" ;;
  esac
}

# candidates ROOT SCRIPT SYNOPSIS: every word that could be a flag the script
# takes: what --help shows and every --word in the code (not the comments)
# of the script and, for 40-44, of submit.sh, which holds their spec. The
# common flags are one case of flags.sh for every script: only 00 probes them.
candidates() {
  local root=$1 script=$2 files=("$2") common='--(help|dry-run|config|runtime|shared-root)'
  grep -q MVP_SUBMIT_FLAGS "$script" && files+=("$root/scripts/lib/submit.sh")
  [[ $(basename "$script") == 00_* ]] && common=--help
  { shown "$3" | cut -d' ' -f1
    grep -hv '^[[:space:]]*#' "${files[@]}" | grep -oE -- '--[a-z][a-z0-9-]*'
  } | sort -u | grep -vxE -- "$common"
}

# check_flags ROOT [NN...]: one line per flag a numbered script's parser
# accepts that its --help does not show, or shows otherwise (switch, value,
# WHAT), exit 1 if any; for the scripts NN... only, when named.
check_flags() {
  local root=$1 script name help flag how want kind problems=0 only=${*:2}
  for script in "$root"/scripts/[0-9][0-9]_*.sh; do
    [[ -z $only || " $only " == *" $(basename "$script" | cut -c1-2) "* ]] || continue
    name=$(basename "$script")
    help=$("$script" --help) && help=${help%%$'\n\n'*}
    local -A show=()
    while read -r flag want; do show[$flag]=$want; done < <(shown "$help")
    while read -r flag; do
      how=$(probe "$script" "$flag")
      want=${show[$flag]-} kind=value
      [[ $want != - ]] || kind=switch
      if [[ $how == switch || $how == value ]] && [[ -z $want ]]; then
        echo "$name: $flag is accepted, but its --help does not show it"
      elif [[ $how != switch && $how != value ]] && [[ -n $want ]]; then
        echo "$name: its --help shows $flag, but the parser does not take it ($how)"
      elif [[ -n $want && $how != "$kind" ]]; then
        echo "$name: its --help shows $flag as a $kind, but the parser takes it as a $how"
      elif [[ $how == value && $(mvp_common_flag "$flag") == no && $("$script" "$flag" 2>&1) != "ERROR: $flag needs $want" ]]; then
        echo "$name: its --help shows $flag $want, but without a value the parser says: $("$script" "$flag" 2>&1)"
      else
        continue
      fi
      problems=1
    done < <(candidates "$root" "$script" "$help")
    unset show
  done
  return "$problems"
}

# mvp_common_flag FLAG: yes for a flag every script takes (its ERROR words are the parser's own).
mvp_common_flag() {
  case $1 in --dry-run|--config|--runtime|--shared-root) echo yes ;; *) echo no ;; esac
}

copy_tree() {
  local dest=$BATS_TEST_TMPDIR/tree
  mkdir -p "$dest"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/config" "$MVP_REPO/docs" "$MVP_REPO/shared-layout.txt" "$dest/"
  echo "$dest"
}

@test "scripts doc: docs/scripts.md is exactly what the scripts' flag specs generate (make docs/scripts)" {
  run check_docs "$MVP_REPO"
  assert_success
}

@test "scripts doc: a flag spec changed without make docs/scripts fails the docs check; the prose around is kept" {
  local tree
  tree=$(copy_tree)
  sed -i 's/"--json  the same report as JSON, for programs"/"--json  the report as JSON"/' "$tree/scripts/50_status.sh"
  run check_docs "$tree"
  assert_failure
  assert_output --partial "+  --json"
  assert_output --partial "the report as JSON"
  assert_output --partial "docs/scripts.md is stale; run make docs/scripts"
  # What the page says beyond the flags is the page's own: regenerating keeps it.
  "$tree/scripts/libexec/scripts_doc.sh" >"$tree/new.md"
  grep -qF "The bring-up order (\`MVP_BRINGUP_STEPS\`" "$tree/new.md"
  grep -qF "the report as JSON" "$tree/new.md"
}

@test "scripts doc: every flag a script's parser accepts is on its --help, as it takes it (switch, or the WHAT it needs), and nothing else is" {
  run check_flags "$MVP_REPO"
  assert_output ""
  assert_success
}

@test "scripts doc: a planted flag accepted but undocumented, or shown but refused, fails the flag check naming script and flag" {
  local tree
  tree=$(copy_tree)
  # A spec entry without what it does (the older form): parsed, not shown.
  sed -i 's/^mvp::flags::spec "\${MVP_SUBMIT_FLAGS\[@\]}"$/& --planted-switch "--planted-value=N"/' "$tree/scripts/41_submit_grpo_epoch1.sh"
  # A common flag --help names that the parser does not take.
  sed -i 's/^MVP_FLAGS_COMMON=(/&"--verbose" /' "$tree/scripts/lib/flags.sh"
  run check_flags "$tree" 00 41 50
  assert_failure
  assert_line "41_submit_grpo_epoch1.sh: --planted-switch is accepted, but its --help does not show it"
  assert_line "41_submit_grpo_epoch1.sh: --planted-value is accepted, but its --help does not show it"
  assert_line "00_prereq_check.sh: its --help shows --verbose, but the parser does not take it (refused)"
  refute_line --partial "50_status.sh: --planted"
}

@test "flags: the synopsis is the spec: usage line with the positional words, one aligned line per entry, the common flags; an entry without a description is parsed but not shown" {
  run bash -c 'source "$1/scripts/lib/common.sh"
    mvp::flags::spec "JOBSPEC  the spec" "--wait  wait for it" "--override KEY=VALUE  one more" "[ARGS...]  the rest" --hidden
    mvp::flags::synopsis; echo; mvp::flags::parse --hidden --override a=b x.yaml --wait y
    echo "${MVP_FLAG[--hidden]} ${MVP_FLAG[--override]} ${MVP_ARGS[*]}"' scripts/99_example.sh "$MVP_REPO"
  assert_success
  # The spec passes words through ([ARGS...]): its flags come first, as the
  # parse below shows (--wait after x.yaml is one of the words passed on).
  assert_output "Usage: scripts/99_example.sh [FLAGS] JOBSPEC [ARGS...]
  JOBSPEC               the spec
  --wait                wait for it
  --override KEY=VALUE  one more
  [ARGS...]             the rest
Common flags: --dry-run, --config FILE, --runtime NAME, --shared-root PATH, --help (docs/scripts.md)

1 a=b x.yaml --wait y"
}
