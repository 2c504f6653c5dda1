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
#   MVP_CONTRACT_DERIVED    NAME WHEN TEMPLATE of each `default.WHEN`, in order
#   MVP_CONTRACT_HELPER     NAME=VAR: what the Python helper gets, from which variable
#   MVP_CONTRACT_SETTINGS   the names of kind `setting` (a config file's names)
# A name that is not MVP_*, SHARED_ROOT or CODE_ID would be set by
# printf -v from a file: refused, as is a line the format does not know.
mvp::config::read_contract() {
  local file=$MVP_REPO/config/settings.contract line name="" value when kind=setting
  local -a lines=()
  MVP_CONTRACT_DEFAULTS=() MVP_CONTRACT_DERIVED=() MVP_CONTRACT_HELPER=() MVP_CONTRACT_SETTINGS=()
  mapfile -t lines <"$file" || mvp::log::die "cannot read $file; restore it from git"
  lines+=("END")
  for line in "${lines[@]}"; do
    case $line in
      "  doc"*|"  type"*|"#"*|"=="*|"") continue ;;
      "  default "*|"  default")
        value=${line#  default}
        MVP_CONTRACT_DEFAULTS+=("$name=${value#"${value%%[! ]*}"}") ;;
      "  default."[a-z*]*)
        value=${line#  default.} when=${line#  default.} when=${when%% *} value=${value#"$when"}
        MVP_CONTRACT_DERIVED+=("$name $when ${value#"${value%%[! ]*}"}") ;;
      "  helper "*)
        value=${line##* }
        case $line in *" from "*) ;; *) value=$name ;; esac
        case $value in *[!A-Z0-9_]*|[!A-Z_]*) mvp::config::contract_error "$file" "$line" "helper takes ATTR [from VARIABLE]" ;; esac
        MVP_CONTRACT_HELPER+=("$name=$value") ;;
      "  kind "*) kind=${line##* } ;;
      "  secret "*) ;;
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

# A setting still empty after every layer gets the contract's default.RUNTIME
# (or default.PROFILE), else its default.*: the first rule that matches.
mvp::config::derive_defaults() {
  local rule name when template
  local -A filled=()
  for rule in "${MVP_CONTRACT_DERIVED[@]}"; do
    name=${rule%% *} rule=${rule#* } when=${rule%% *} template=${rule#* }
    [[ -z ${!name-} && -z ${filled[$name]-} ]] || continue
    [[ $when == '*' || $when == "$MVP_RUNTIME" || $when == "$MVP_TRAINER_PROFILE" ]] || continue
    mvp::config::expand "$template"
    printf -v "$name" '%s' "$REPLY"
    filled[$name]=1
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

# The runtimes are the files scripts/lib/runtime_<name>.sh.
mvp::config::runtimes() {
  local f names=()
  for f in "$MVP_REPO"/scripts/lib/runtime_*.sh; do f=${f##*/runtime_}; names+=("${f%.sh}"); done
  echo "${names[*]}"
}

# Fills the settings whose empty value means "derived" and checks the rest.
mvp::config::derive() {
  [[ $MVP_RUNTIME =~ ^[a-z]+$ && -f $MVP_REPO/scripts/lib/runtime_$MVP_RUNTIME.sh ]] ||
    mvp::log::die "MVP_RUNTIME='$MVP_RUNTIME' is not a runtime; set it to one of: $(mvp::config::runtimes)"
  [[ $MVP_WORKERS =~ ^[1-9][0-9]?$ ]] || mvp::log::die "MVP_WORKERS='$MVP_WORKERS' must be a whole number from 1 to 99"
  [[ $MVP_GPUS_PER_WORKER =~ ^[0-9]+$ ]] || mvp::log::die "MVP_GPUS_PER_WORKER='$MVP_GPUS_PER_WORKER' must be a whole number"
  MVP_DEFAULT_SHARED=$MVP_REPO/.mvp/shared
  MVP_VENV=$MVP_REPO/.venv
  mvp::config::read_version
  mvp::config::derive_defaults
  # Node names; a runtime whose nodes have names of their own (slurm) renames them.
  MVP_HEAD_NODE=mvp11-ray-head
  MVP_NODES=("$MVP_HEAD_NODE")
  local i
  for ((i = 0; i < MVP_WORKERS; i++)); do MVP_NODES+=("mvp11-ray-worker-$i"); done
  # shellcheck source=runtime_local.sh
  source "$MVP_REPO/scripts/lib/runtime_$MVP_RUNTIME.sh"
  mvp::rt::derive
  [[ $MVP_TRAINER_PROFILE =~ ^(gpu|cpu|gpu-smoke)$ ]] || mvp::log::die "MVP_TRAINER_PROFILE='$MVP_TRAINER_PROFILE' must be gpu, cpu or gpu-smoke"
  [[ $MVP_RAY_AUTH =~ ^(token|off)$ ]] || mvp::log::die "MVP_RAY_AUTH='$MVP_RAY_AUTH' must be token or off"
  # The Ray token: one 0600 file on the shared storage (mvp::ray::auth_token).
  MVP_RAY_TOKEN_FILE=$SHARED_ROOT/secrets/ray_auth_token
  MVP_HOST_RAY_TOKEN_FILE=$MVP_HOST_SHARED_DIR/secrets/ray_auth_token
  [[ $SHARED_ROOT == /* ]] || mvp::log::die "SHARED_ROOT='$SHARED_ROOT' must be an absolute path"
  [[ $MVP_HEAD_IP =~ ^([0-9]+\.){3}[0-9]+$ ]] || mvp::log::die "MVP_HEAD_IP='$MVP_HEAD_IP' is not an IPv4 address"
  mvp::config::derive_worker_ips
  mvp::config::derive_verl_src
  mvp::rt::node_ray_dirs
  mvp::config::check_job_settings
  mvp::config::check_passthrough
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

# The settings the jobs' bookkeeping reads, each checked (one ERROR line).
mvp::config::check_job_settings() {
  [[ $MVP_LOST_AFTER_S =~ ^[0-9]+$ ]] || mvp::log::die "MVP_LOST_AFTER_S='$MVP_LOST_AFTER_S' must be a whole number of seconds"
  [[ $MVP_LOG_SYNC_SECONDS =~ ^[0-9]+$ ]] ||
    mvp::log::die "MVP_LOG_SYNC_SECONDS='$MVP_LOG_SYNC_SECONDS' must be a whole number of seconds (0: no copy while a job runs)"
  # A file name under <SHARED_ROOT>/clusters and admission/.
  [[ $MVP_CLUSTER_NAME =~ ^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$ ]] ||
    mvp::log::die "MVP_CLUSTER_NAME='$MVP_CLUSTER_NAME' must be 1-128 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"
  [[ $MVP_ADMISSION_CLAIM_S =~ ^[0-9]+$ ]] ||
    mvp::log::die "MVP_ADMISSION_CLAIM_S='$MVP_ADMISSION_CLAIM_S' must be a whole number of seconds"
  [[ $MVP_MIN_FREE_MB =~ ^[0-9]+$ ]] || mvp::log::die "MVP_MIN_FREE_MB='$MVP_MIN_FREE_MB' must be a whole number"
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
# one owner is helpers/mvp/redact.py's SECRET_NAME (the worker loads redact.py
# alone, with no contract beside it): read from that line by bash itself, no
# process, and only when a passthrough name needs it.
mvp::config::secret_name_rule() {
  local line file=$MVP_REPO/helpers/mvp/redact.py
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

# mvp::config::shared_name HOST_PATH: a path under this host's shared dir as
# its name relative to the shared root (regressions/<run id>), the form the
# helper takes and resolves on whichever side it runs; mvp::config::node_path
# HOST_PATH: the same path as the nodes see it. The one host<->node mapping.
mvp::config::shared_name() {
  [[ $1 == "$MVP_HOST_SHARED_DIR"/* ]] || mvp::log::die "$1 is not under the shared root $MVP_HOST_SHARED_DIR"
  echo "${1#"$MVP_HOST_SHARED_DIR"/}"
}
mvp::config::node_path() {
  local name
  name=$(mvp::config::shared_name "$1") || exit
  echo "$SHARED_ROOT/$name"
}

# mvp::config::layout NAME: the host's path of the shared-root directory NAME, from
# shared-layout.txt (generated from helpers/mvp/layout.py).
mvp::config::layout() {
  local name rel _
  while read -r name rel _; do
    [[ $name == "$1" ]] && { echo "$MVP_HOST_SHARED_DIR/$rel"; return 0; }
  done <"$MVP_REPO/shared-layout.txt"
  mvp::log::die "shared-layout.txt names no directory '$1'"
}
