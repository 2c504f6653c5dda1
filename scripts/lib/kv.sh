# shellcheck shell=bash
# The output contract between scripts and helpers. A result a program reads
# travels on stdout as key=value lines, made by mvp::kv::emit (Python:
# helpers/mvp/worker/kv.py's emit) and read by mvp::kv::read (Python: kv.parse),
# never by matching what a person reads, so rewording a message breaks no
# caller. A key is [a-z][a-z0-9_]*; a value is the rest of its line ('='
# included, never a newline); a list travels as one value, but a list of words
# (an argv) as mvp::kv::emit_words or kv.py's `words` makes it and
# mvp::kv::words or kv.py's `read_words` reads it back.

# mvp::kv::emit KEY VALUE [KEY VALUE...]: one key=value line per pair.
mvp::kv::emit() {
  while (($#)); do
    (($# > 1)) || mvp::log::die "mvp::kv::emit: key '$1' has no value"
    [[ $1 =~ ^[a-z][a-z0-9_]*$ ]] || mvp::log::die "mvp::kv::emit: '$1' is not a key ([a-z][a-z0-9_]*)"
    [[ $2 != *$'\n'* ]] || mvp::log::die "mvp::kv::emit: the value of $1 spans lines; a value is one line"
    printf '%s=%s\n' "$1" "$2"
    shift 2
  done
}

# mvp::kv::emit_words PREFIX WORD...: the words as kv.py's `words` makes
# them, one key=value line each: PREFIXargc=N, then PREFIXarg_I=the word, its
# backslashes, newlines and carriage returns escaped (\\, \n, \r), so a word
# may hold anything.
mvp::kv::emit_words() {
  local prefix=$1 word i=0
  shift
  mvp::kv::emit "${prefix}argc" "$#"
  for word; do
    word=${word//\\/\\\\}
    word=${word//$'\n'/\\n}
    word=${word//$'\r'/\\r}
    mvp::kv::emit "${prefix}arg_$i" "$word"
    i=$((i + 1))
  done
}

# mvp::kv::read NAME < LINES: key=value lines into the associative array
# NAME, which the caller declares (a repeated key: the last one wins; empty
# lines are skipped). A line that is anything else: returns 1 with
# MVP_KV_ERROR saying which line, for the caller's one ERROR line.
mvp::kv::read() {
  local -n _mvp_kv=$1
  local line n=0
  MVP_KV_ERROR=""
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    [[ -z $line ]] && continue
    if [[ ! $line =~ ^([a-z][a-z0-9_]*)=(.*)$ ]]; then
      # shellcheck disable=SC2034  # the callers read it
      MVP_KV_ERROR="line $n is not key=value: '${line:0:80}'"
      return 1
    fi
    # shellcheck disable=SC2004  # NAME is an associative array: the key is a string
    _mvp_kv[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
  done
  return 0
}

# mvp::kv::words ARRAY KV [PREFIX]: the words kv.py's `words` carried in the
# associative array KV (PREFIXargc, PREFIXarg_I; Python's reader is
# kv.read_words) into the array ARRAY, each unescaped (\\, \n, \r: printf %b,
# as no other backslash is left in a word).
mvp::kv::words() {
  local -n _mvp_words=$1 _mvp_from=$2
  local _mvp_prefix=${3-} _mvp_i _mvp_word
  _mvp_words=()
  for ((_mvp_i = 0; _mvp_i < ${_mvp_from[${_mvp_prefix}argc]:-0}; _mvp_i++)); do
    printf -v _mvp_word '%b' "${_mvp_from[${_mvp_prefix}arg_$_mvp_i]}"
    _mvp_words+=("$_mvp_word")
  done
}
