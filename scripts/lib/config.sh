# shellcheck shell=bash disable=SC2034  # the settings set here are read by the other library files and the scripts
# Configuration. Every setting is declared once, in config/settings.contract
# (type, defaults, doc). Precedence, lowest first: the contract's defaults,
# the config file (--config, MVP_CONFIG or config/local.env), the
# environment, the flags; then a setting still empty gets the contract's
# default for this runtime (or profile), in mvp::config::derive.
MVP_SETTINGS_PATTERN='^(MVP_[A-Z0-9_]+|SHARED_ROOT|CODE_ID)$'

mvp::config::source_file() {
  local file=$1 line
  [[ -f $file && -r $file ]] || mvp::log::die "config file $file is missing or unreadable; fix the path in MVP_CONFIG or --config"
  # Only NAME=value lines: a config file is settings, not a program.
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
    [[ $line =~ ^[A-Z_][A-Z0-9_]*= ]] || mvp::log::die "$file: '$line' is not a NAME=value line"
  done <"$file"
  # shellcheck disable=SC1090  # the file is the user's config, checked above
  source "$file"
}

# Reads config/settings.contract into MVP_CONTRACT_* (bash itself, no
# process: this runs in every script, on the submit and status hot paths;
# globs and expansions only, as a regex is compiled anew each time it runs):
#   MVP_CONTRACT_DEFAULTS   NAME=VALUE of each setting's `default`
#   MVP_CONTRACT_DERIVED    NAME WHEN TEMPLATE of each `default.WHEN` of a setting, in order
#   MVP_CONTRACT_COMPUTED   the same for the internal names (what the runtime does not compute)
#   MVP_CONTRACT_TYPES      NAME TYPE...: each setting's type
#   MVP_CONTRACT_DEFAULT_OF NAME -> its `default`, for the type check
#   MVP_CONTRACT_HELPER     NAME=VAR: what the Python helper gets, from which variable
#   MVP_CONTRACT_SETTINGS   the names of kind `setting` (a config file's names)
#   MVP_CONTRACT_FILLED     NAME -> 1 once derive_defaults filled it (it was empty)
# A name that is not MVP_*, SHARED_ROOT or CODE_ID would be set by
# printf -v from a file: refused, as is a line the format does not know.
# An entry's kind, when given, is its first line (settings.py refuses any
# other order), so each line is placed as it is read: one pass, no function
# per entry.
mvp::config::read_contract() {
  local file=$MVP_REPO/config/settings.contract line name="" value when kind=setting
  local -a lines=()
  MVP_CONTRACT_DEFAULTS=() MVP_CONTRACT_DERIVED=() MVP_CONTRACT_COMPUTED=() MVP_CONTRACT_TYPES=()
  MVP_CONTRACT_HELPER=() MVP_CONTRACT_SETTINGS=()
  declare -gA MVP_CONTRACT_DEFAULT_OF=() MVP_CONTRACT_FILLED=()
  mapfile -t lines <"$file" || mvp::log::die "cannot read $file; restore it from git"
  lines+=("END")
  for line in "${lines[@]}"; do
    case $line in
      "  doc"*|"  secret "*|"#"*|"=="*|"") continue ;;
      "  type "*)
        [[ $kind == internal || $name == *"*"* ]] && continue
        value=${line#  type} MVP_CONTRACT_TYPES+=("$name ${value#"${value%%[! ]*}"}") ;;
      "  default "*|"  default")
        value=${line#  default} value=${value#"${value%%[! ]*}"}
        MVP_CONTRACT_DEFAULT_OF[$name]=$value
        MVP_CONTRACT_DEFAULTS+=("$name=$value") ;;
      "  default."[a-z*]*)
        value=${line#  default.} when=${line#  default.} when=${when%% *} value=${value#"$when"}
        value="$name $when ${value#"${value%%[! ]*}"}"
        if [[ $kind == internal ]]; then MVP_CONTRACT_COMPUTED+=("$value"); else MVP_CONTRACT_DERIVED+=("$value"); fi ;;
      "  helper "*)
        value=${line##* }
        case $line in *" from "*) ;; *) value=$name ;; esac
        case $value in *[!A-Z0-9_]*|[!A-Z_]*) mvp::config::contract_error "$file" "$line" "helper takes ATTR [from VARIABLE]" ;; esac
        MVP_CONTRACT_HELPER+=("$name=$value") ;;
      "  kind "*) kind=${line##* } ;;
      *)
        case $line in
          END|SHARED_ROOT|CODE_ID|MVP_[A-Z0-9_*]*)
            case $line in *[!A-Z0-9_*]*) mvp::config::contract_error "$file" "$line" "not a setting's name (MVP_*, SHARED_ROOT, CODE_ID)" ;; esac ;;
          " "*) mvp::config::contract_error "$file" "$line" "not a KEY VALUE line of the contract" ;;
          *) mvp::config::contract_error "$file" "$line" "not a setting's name (MVP_*, SHARED_ROOT, CODE_ID)" ;;
        esac
        [[ -n $name && $kind == setting ]] && MVP_CONTRACT_SETTINGS+=("$name")
        name=$line kind=setting ;;
    esac
  done
}

# mvp::config::contract_error FILE LINE WHAT: the one ERROR line, with the
# line's number (looked up only here, off the hot path).
mvp::config::contract_error() {
  local n=0 line
  while IFS= read -r line; do
    ((++n))
    [[ $line == "$2" ]] && break
  done <"$1"
  mvp::log::die "$1:$n: '$2' is $3"
}

# mvp::config::expand TEMPLATE: TEMPLATE with each {NAME} replaced by NAME's
# value, in REPLY (no subshell).
mvp::config::expand() {
  local rest=$1 ref
  REPLY=""
  while [[ $rest == *"{"*"}"* ]]; do
    REPLY+=${rest%%"{"*}
    rest=${rest#*"{"} ref=${rest%%"}"*} rest=${rest#*"}"}
    case $ref in ""|[0-9]*|*[!A-Za-z0-9_]*) mvp::log::die "config/settings.contract: '{$ref}' is not {NAME} of a variable" ;; esac
    REPLY+=${!ref-}
  done
  REPLY+=$rest
}

# mvp::config::derive_defaults LIST: a name still empty after every layer
# gets the contract's default.RUNTIME (or default.PROFILE), else its
# default.*: the first rule of LIST (MVP_CONTRACT_DERIVED or _COMPUTED) that
# matches; MVP_CONTRACT_FILLED says which names it filled.
mvp::config::derive_defaults() {
  local -n rules_of=$1
  local rule name when template
  for rule in ${rules_of[@]+"${rules_of[@]}"}; do
    name=${rule%% *} rule=${rule#* } when=${rule%% *} template=${rule#* }
    [[ -z ${!name-} && -z ${MVP_CONTRACT_FILLED[$name]-} ]] || continue
    [[ $when == '*' || $when == "$MVP_RUNTIME" || $when == "$MVP_TRAINER_PROFILE" ]] || continue
    mvp::config::expand "$template"
    printf -v "$name" '%s' "$REPLY"
    MVP_CONTRACT_FILLED[$name]=1
  done
}

mvp::config::load() {
  local name
  local -A from_env=()
  while IFS= read -r name; do
    [[ $name =~ $MVP_SETTINGS_PATTERN ]] && from_env[$name]=${!name}
  done < <(compgen -e)

  mvp::config::read_contract
  for name in "${MVP_CONTRACT_DEFAULTS[@]}"; do printf -v "${name%%=*}" '%s' "${name#*=}"; done
  local file=${from_env[MVP_CONFIG]:-} setting
  for setting in "${MVP_FLAG_SETTINGS[@]}"; do [[ $setting == MVP_CONFIG=* ]] && file=${setting#MVP_CONFIG=}; done
  [[ -z $file && -f $MVP_REPO/config/local.env ]] && file=$MVP_REPO/config/local.env
  if [[ -n $file ]]; then
    mvp::config::source_file "$file"
    MVP_CONFIG_LOADED=$file
  else
    MVP_CONFIG_LOADED="$MVP_REPO/config/settings.contract's defaults (no local.env)"
  fi
  for name in "${!from_env[@]}"; do printf -v "$name" '%s' "${from_env[$name]}"; done
  for setting in "${MVP_FLAG_SETTINGS[@]}"; do printf -v "${setting%%=*}" '%s' "${setting#*=}"; done
  mvp::config::derive
}

# Fills the settings whose empty value means "derived", checks every one
# against its contract type, then the runtime's values.
mvp::config::derive() {
  MVP_DEFAULT_SHARED=$MVP_REPO/.mvp/shared
  MVP_VENV=$MVP_REPO/.venv
  mvp::config::read_version
  mvp::config::derive_defaults MVP_CONTRACT_DERIVED
  mvp::config::check_types
  [[ -f $MVP_REPO/scripts/lib/runtime_$MVP_RUNTIME.sh ]] ||
    mvp::log::die "MVP_RUNTIME='$MVP_RUNTIME' has no scripts/lib/runtime_$MVP_RUNTIME.sh; restore it from git"
  # A runtime whose nodes have names of their own (slurm) renames them.
  mvp::nodes::name_all
  local rule
  # The internal names the contract gives per runtime: what the runtime's
  # derive computes, else the contract's (never a value from outside).
  for rule in ${MVP_CONTRACT_COMPUTED[@]+"${MVP_CONTRACT_COMPUTED[@]}"}; do printf -v "${rule%% *}" '%s' ""; done
  # shellcheck source=runtime_local.sh
  source "$MVP_REPO/scripts/lib/runtime_$MVP_RUNTIME.sh"
  mvp::rt::derive
  mvp::config::derive_defaults MVP_CONTRACT_COMPUTED
  mvp::config::check_types MVP_HEAD_IP
  [[ $MVP_HOST_SEES_NODE_FILES == 0 || $MVP_HOST_SHARED_DIR == "$SHARED_ROOT" ]] ||
    mvp::log::die "MVP_HOST_SHARED_DIR='$MVP_HOST_SHARED_DIR' is not SHARED_ROOT ($SHARED_ROOT): on $MVP_RUNTIME this host sees the shared storage where the nodes do; leave MVP_HOST_SHARED_DIR empty"
  # The Ray token: one 0600 file in the layout's secrets/ (mvp::ray::auth_token).
  mvp::config::layout secrets MVP_HOST_RAY_TOKEN_FILE
  MVP_HOST_RAY_TOKEN_FILE+=/ray_auth_token
  mvp::nodes::path "$MVP_HOST_RAY_TOKEN_FILE" MVP_RAY_TOKEN_FILE
  mvp::config::derive_worker_ips
  mvp::config::derive_verl_src
  mvp::rt::node_ray_dirs
  mvp::config::check_passthrough
}

# mvp::config::check_types [NAME...]: every setting's value (or NAME's) is
# of its type in the contract, the one check of a setting's form: else one
# ERROR line naming the setting, what it must be and where to fix it. A
# value that is the contract's own default is not checked again (each is of
# its type: settings_contract.bats), so an empty one passes where the
# default is empty; a script checks ~15 values, not ~100.
mvp::config::check_types() {
  local entry name value rc
  for entry in "${MVP_CONTRACT_TYPES[@]}"; do
    name=${entry%% *} value=${!name-}
    [[ $value != "${MVP_CONTRACT_DEFAULT_OF[$name]-}" ]] || continue
    (($# == 0)) || [[ " $* " == *" $name "* ]] || continue
    rc=0
    # shellcheck disable=SC2086  # TYPE's words (one-of's choices, int's range) are separate arguments
    mvp::config::of_type "$value" ${entry#* } || rc=$?
    ((rc == 0)) && continue
    ((rc == 1)) || mvp::log::die "config/settings.contract: $name's type '${entry#* }' is not one config.sh knows; fix the contract"
    mvp::log::die "$name='$value' must be $REPLY; fix it where it is set: config file, environment or flag (config/settings.contract: type ${entry#* })"
  done
}

# mvp::config::of_type VALUE TYPE [WORDS...]: 0 when VALUE is of the
# contract's TYPE, 1 (REPLY: what it must be) when not, 2 for a TYPE unknown
# here. Empty is of the text-like types only. settings.py's CONVERT reads
# every value that passes here.
mvp::config::of_type() {
  local v=$1 type=$2
  shift 2
  [[ -n $v ]] || case $type in text|word|words|path|file|pairs) return 0 ;; esac
  case $type in
    text|words|path|file) return 0 ;;
    word) REPLY="one word, no blank"; [[ $v != *[[:space:]]* ]] ;;
    abspath) REPLY="an absolute path"; [[ $v == /* ]] ;;
    int) mvp::config::of_int "$v" "${1-}" ;;
    seconds) REPLY="a number of seconds, e.g. 30 or 0.5"; [[ $v == [0-9]* && $v != *[!0-9.]* && $v != *.*.* && $v != *. ]] ;;
    flag) REPLY="0 or 1"; [[ $v == [01] ]] ;;
    one-of) mvp::config::of_choices "$v" "$@" ;;
    pairs) REPLY="KEY=VALUE words"; [[ " $v" =~ ^(\ +[^ =]+=[^ ]*)+\ *$ ]] ;;
    ipv4) REPLY="an IPv4 address"; [[ $v =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]] ;;
    url) REPLY="a URL, http://... or https://..."; [[ $v == http://?* || $v == https://?* ]] ;;
    name) REPLY="1-128 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"
      [[ $v =~ ^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$ ]] ;;
    dns) REPLY="a DNS name: a-z, 0-9, '.' and '-', starting and ending with a letter or digit"
      [[ $v =~ ^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$ ]] ;;
    size) REPLY="a size such as 16g: a number, then b, k, m or g"; [[ $v =~ ^[0-9]+[bkmgBKMG]?$ ]] ;;
    *) return 2 ;;
  esac
}

# mvp::config::of_int VALUE [MIN..[MAX]]: a whole number, in the range when given.
mvp::config::of_int() {
  local v=$1 range=${2-} min max
  min=${range%%..*} max=${range#*..}
  REPLY="a whole number"
  [[ -z $range ]] || REPLY+=${max:+" from $min to $max"}
  [[ -z $range || -n $max ]] || REPLY+=" >= $min"
  [[ -n $v && $v != *[!0-9]* && ${#v} -le 18 ]] || return 1
  [[ -z $range ]] || ((10#$v >= min)) || return 1
  [[ -z $range || -z $max ]] || ((10#$v <= max))
}

# mvp::config::of_choices VALUE WORD...: VALUE is one of the WORDs.
mvp::config::of_choices() {
  local v=$1 w
  shift
  [[ -n $v && $v != *" "* && " $* " == *" $v "* ]] && return 0
  REPLY=$1
  for w in "${@:2:$#-2}"; do REPLY+=", $w"; done
  (($# < 2)) || REPLY+=" or ${!#}"
  return 1
}

# MVP_RUNBOOK_VERSION: the runbook's version (the first line of VERSION),
# the default tag of its image (72, 71).
mvp::config::read_version() {
  MVP_RUNBOOK_VERSION=""
  [[ -r $MVP_REPO/VERSION ]] && { read -r MVP_RUNBOOK_VERSION <"$MVP_REPO/VERSION" || true; }
  [[ $MVP_RUNBOOK_VERSION =~ ^[0-9A-Za-z][0-9A-Za-z._-]*$ ]] ||
    mvp::log::die "$MVP_REPO/VERSION must hold the runbook's version (e.g. 1.1.0) on its first line"
}

# MVP_WORKER_IP_LIST: one address per worker, from MVP_WORKER_IPS or, when
# it is empty, the addresses after MVP_HEAD_IP's.
mvp::config::derive_worker_ips() {
  local i
  if [[ -z $MVP_WORKER_IPS ]]; then
    local prefix=${MVP_HEAD_IP%.*} last=${MVP_HEAD_IP##*.}
    for ((i = 1; i <= MVP_WORKERS; i++)); do MVP_WORKER_IPS+="${MVP_WORKER_IPS:+ }$prefix.$((last + i))"; done
  fi
  read -r -a MVP_WORKER_IP_LIST <<<"$MVP_WORKER_IPS"
  ((${#MVP_WORKER_IP_LIST[@]} == MVP_WORKERS)) ||
    mvp::log::die "MVP_WORKER_IPS has ${#MVP_WORKER_IP_LIST[@]} addresses for MVP_WORKERS=$MVP_WORKERS; give one per worker or leave it empty"
}

# MVP_NODE_VERL_SRC and MVP_HOST_VERL_SRC: the source tree to snapshot, as
# the head node sees it (and as this host sees it: 00 checks it here for
# compose). MVP_VERL_SRC empty: MVP_VERL_DIR; relative: in the runbook.
mvp::config::derive_verl_src() {
  local src=${MVP_VERL_SRC:-}
  if [[ -z $src ]]; then
    MVP_NODE_VERL_SRC=$MVP_NODE_VERL_DIR MVP_HOST_VERL_SRC=$MVP_VERL_DIR
  elif [[ $src == /* ]]; then
    MVP_NODE_VERL_SRC=$src MVP_HOST_VERL_SRC=$src
  else
    MVP_NODE_VERL_SRC=$MVP_NODE_REPO/$src MVP_HOST_VERL_SRC=$MVP_REPO/$src
  fi
}

# MVP_JOB_ENV_PASSTHROUGH names no secret: passed-through values travel on
# the command line that runs the helper; a secret must come in a JobSpec's
# env_vars (stdin, then Ray's GCS store).
mvp::config::check_passthrough() {
  mvp::config::job_env_names
  local name secret=()
  [[ -z $MVP_JOB_ENV_NAMES ]] || mvp::config::secret_name_rule
  for name in $MVP_JOB_ENV_NAMES; do
    if [[ ${name^^} =~ $MVP_SECRET_NAME_RULE ]]; then secret+=("$name"); fi
  done
  ((${#secret[@]} == 0)) ||
    mvp::log::die "MVP_JOB_ENV_PASSTHROUGH matches ${secret[*]}, a secret by its name; it would sit on a command line, so put it in the JobSpec's env_vars instead"
}

# MVP_SECRET_NAME_RULE: the regexp a secret's name matches (upper case). Its
# one owner is helpers/mvp/worker/redact.py's SECRET_NAME (the worker loads redact.py
# alone, with no contract beside it): read from that line by bash itself, no
# process, and only when a passthrough name needs it.
mvp::config::secret_name_rule() {
  local line file=$MVP_REPO/helpers/mvp/worker/redact.py
  while IFS= read -r line; do
    [[ $line == 'SECRET_NAME = re.compile(r"'* ]] || continue
    line=${line#*\"} MVP_SECRET_NAME_RULE=${line%%\"*}
    return 0
  done <"$file"
  mvp::log::die "$file has no SECRET_NAME = re.compile(r\"...\") line; restore it from git"
}

# MVP_JOB_ENV_NAMES: the names (words) that match MVP_JOB_ENV_PASSTHROUGH
# among the config's and the environment's variables (set ones only), found
# once per script. Each glob's literal prefix narrows Bash's own list first
# (compgen -v PREFIX): every submission runs this, and matching each pattern
# against every variable cost ~10 ms.
mvp::config::job_env_names() {
  local name pattern patterns=()
  local -A seen=()
  MVP_JOB_ENV_NAMES=""
  read -r -a patterns <<<"$MVP_JOB_ENV_PASSTHROUGH"
  for pattern in ${patterns[@]+"${patterns[@]}"}; do
    while IFS= read -r name; do
      # shellcheck disable=SC2053  # the pattern is a glob on purpose
      [[ $name == $pattern && -n ${!name} && -z ${seen[$name]-} ]] || continue
      seen[$name]=1
      MVP_JOB_ENV_NAMES+="${MVP_JOB_ENV_NAMES:+ }$name"
    done < <(compgen -v -- "${pattern%%[*?[]*}" || true)
  done
  return 0
}

# mvp::config::init "$@": flags, then configuration (which sources the runtime).
mvp::config::init() {
  mvp::flags::parse "$@"
  mvp::config::load
  [[ ${MVP_QUIET_CONFIG:-0} == 1 ]] || mvp::log::info "config: $MVP_CONFIG_LOADED (runtime $MVP_RUNTIME, shared root $SHARED_ROOT)"
}

# mvp::config::answer VALUE [VAR]: VALUE into the variable VAR, else on stdout.
mvp::config::answer() {
  if [[ -n $2 ]]; then printf -v "$2" '%s' "$1"; else echo "$1"; fi
}

# mvp::config::layout NAME [VAR]: the host's path of the shared-root directory
# NAME, from shared-layout.txt (generated from helpers/mvp/core/layout.py); into
# VAR when given.
mvp::config::layout() {
  local name rel _
  while read -r name rel _; do
    [[ $name == "$1" ]] && { mvp::config::answer "$MVP_HOST_SHARED_DIR/$rel" "${2-}"; return 0; }
  done <"$MVP_REPO/shared-layout.txt"
  mvp::log::die "shared-layout.txt names no directory '$1'"
}

# mvp::config::run_file NAME DIR [VAR]: the path of the nightly's file NAME in
# DIR (regressions/, or a night's or a bisection's directory in it), from
# shared-layout.txt's table of helpers/mvp/core/rundir.py's FILES; into VAR
# when given.
mvp::config::run_file() {
  local line on=0 rel
  while IFS= read -r line; do
    [[ $line == *"(rundir.FILES"* ]] && on=1
    if ((on)) && [[ $line =~ ^#\ +([a-z_]+)\ +([^#]*[^# ])\ +# && ${BASH_REMATCH[1]} == "$1" ]]; then
      rel=${BASH_REMATCH[2]}
      mvp::config::answer "$2/${rel##*/}" "${3-}"
      return 0
    fi
  done <"$MVP_REPO/shared-layout.txt"
  mvp::log::die "shared-layout.txt names no run-directory file '$1'"
}
