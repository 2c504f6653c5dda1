#!/usr/bin/env bats
# The output contract between scripts and helpers: results a program reads
# are key=value lines made and read by one pair of functions per language
# (scripts/lib/kv.sh, helpers/mvp/worker/kv.py), never a person's wording; the ERR
# trap decides by exit code and call site, never by the failing command's text.

setup() {
  load ../test_helper/common
  PY=$MVP_REPO/.venv/bin/python
}

# in_lib SCRIPT: runs bash code with log.sh and kv.sh sourced, as every script has them.
in_lib() {
  bash -c 'set -Eeuo pipefail; source "$1/scripts/lib/log.sh"; source "$1/scripts/lib/kv.sh"; body() { '"$1"'
}; body' _ "$MVP_REPO"
}

kv_py() {
  PYTHONPATH=$MVP_REPO/helpers "$PY" -c "$1"
}

@test "kv.sh: what mvp::kv::emit writes, mvp::kv::read reads back: '=' and spaces in a value, the last of a repeated key" {
  run in_lib 'declare -A r=(); mvp::kv::read r < <(mvp::kv::emit code_id "git-abc" cmd "a=b c" submission_id one submission_id two)
    printf "%s|%s|%s\n" "${r[code_id]}" "${r[cmd]}" "${r[submission_id]}"'
  assert_success
  assert_output "git-abc|a=b c|two"
}

@test "kv.sh: mvp::kv::read refuses a line a person reads (a helper's wording), naming it" {
  run in_lib 'declare -A r=(); out=$(printf "submission_id=raysubmit_1\nJob raysubmit_1 submitted successfully\n")
    if mvp::kv::read r <<<"$out"; then echo "read it"; else echo "refused: $MVP_KV_ERROR"; fi'
  assert_success
  assert_output "refused: line 2 is not key=value: 'Job raysubmit_1 submitted successfully'"
}

@test "kv.sh: mvp::kv::emit refuses a value of two lines and a key that is not [a-z][a-z0-9_]*" {
  run --separate-stderr in_lib 'mvp::kv::emit note "$(printf "a\nb")"'
  assert_failure 1
  assert_equal "$stderr" "ERROR: mvp::kv::emit: the value of note spans lines; a value is one line"
  run --separate-stderr in_lib 'mvp::kv::emit "Code ID" x'
  assert_failure 1
  assert_output ""
  assert_equal "$stderr" "ERROR: mvp::kv::emit: 'Code ID' is not a key ([a-z][a-z0-9_]*)"
}

@test "kv.py: emit and parse are one pair; parse refuses a line that is not key=value" {
  run kv_py 'from mvp.worker import kv; import io
buf = io.StringIO(); kv.emit(("submission_id", "x-1"), ("summary", "NIGHTLY PASS a=b"), file=buf)
print(kv.parse(buf.getvalue()))
try:
    kv.parse("summary=ok\nNIGHTLY PASS nightly-1: 4/4 jobs passed every check")
except ValueError as exc:
    print("refused:", exc)
try:
    kv.line("summary", "two\nlines")
except ValueError as exc:
    print("refused:", exc)'
  assert_success
  assert_line "{'submission_id': 'x-1', 'summary': 'NIGHTLY PASS a=b'}"
  assert_line "refused: line 2: 'NIGHTLY PASS nightly-1: 4/4 jobs passed every check' is not a key=value line"
  assert_line "refused: the value of summary spans lines; a value is one line"
}

@test "kv: lines Python emits, bash reads, and lines bash emits, Python reads" {
  local lines
  lines=$(kv_py 'from mvp.worker import kv; kv.emit(("node_ids", "a,b"), ("summary", "x = y"))')
  run bash -c 'source "$1/scripts/lib/log.sh"; source "$1/scripts/lib/kv.sh"; declare -A r=(); mvp::kv::read r; echo "${r[node_ids]}|${r[summary]}"' _ "$MVP_REPO" <<<"$lines"
  assert_success
  assert_output "a,b|x = y"
  lines=$(bash -c 'source "$1/scripts/lib/log.sh"; source "$1/scripts/lib/kv.sh"; mvp::kv::emit code_id "src-1" note "a=b"' _ "$MVP_REPO")
  run kv_py "from mvp.worker import kv; import sys; print(kv.parse(sys.stdin.read()))" <<<"$lines"
  assert_success
  assert_output "{'code_id': 'src-1', 'note': 'a=b'}"
}

@test "kv words: what kv.words carries, kv.read_words and mvp::kv::words read back exactly: spaces, quotes, '=', newlines, backslashes; each key=value line stays one line" {
  local emitted
  emitted=$(kv_py 'from mvp.worker import kv
words = ["--override", "a=b c", "it'"'"'s \"q\"", "two\nlines\n", "back\\slash \\n not a newline", "", "cr\r", "x=y=z"]
kv.emit(("spec", "s"), *kv.words("job_a_", words))
kv.emit(*kv.words("", ["only"]))')
  assert_equal "$(grep -c . <<<"$emitted")" 12
  run kv_py 'from mvp.worker import kv; import sys
found = kv.parse(sys.stdin.read())
print(repr(kv.read_words(found, "job_a_")), kv.read_words(found))
try:
    kv.read_words({"argc": "1", "arg_0": "a\\tb"})
except ValueError as exc:
    print("refused:", exc)
try:
    kv.read_words({"argc": "2", "arg_0": "a"})
except ValueError as exc:
    print("refused:", exc)' <<<"$emitted"
  assert_success
  assert_line --index 0 "['--override', 'a=b c', 'it\\'s \"q\"', 'two\\nlines\\n', 'back\\\\slash \\\\n not a newline', '', 'cr\\r', 'x=y=z'] ['only']"
  assert_line --index 1 "refused: '\\t' is not an escape of a word (\\\\, \\n, \\r)"
  assert_line --index 2 "refused: no word 'arg_1' of argc=2"
  run bash -c 'source "$1/scripts/lib/log.sh"; source "$1/scripts/lib/kv.sh"; declare -A r=(); mvp::kv::read r
    declare -a w=() one=(stale)
    mvp::kv::words w r job_a_; mvp::kv::words one r
    printf "<%s>\n" "${w[@]}" "${#one[@]}" "${one[@]}"' _ "$MVP_REPO" <<<"$emitted"
  assert_success
  assert_output "<--override>
<a=b c>
<it's \"q\">
<two
lines
>
<back\\slash \\n not a newline>
<>
<cr"$'\r'">
<x=y=z>
<1>
<only>"
}

@test "kv words: mvp::kv::emit_words writes what kv.words writes, line for line, whatever the words hold (spaces, quotes, '=', newlines, backslashes, carriage returns, an empty word)" {
  local words='["--override", "a=b c", "it'"'"'s \"q\"", "two\nlines\n", "back\\slash \\n not a newline", "", "cr\r", "x=y=z"]'
  kv_py "import sys; sys.stdout.write(''.join(w + '\0' for w in $words))" >"$BATS_TEST_TMPDIR/words"
  run in_lib 'local -a w; mapfile -d "" w; mvp::kv::emit_words node0_ "${w[@]}"' <"$BATS_TEST_TMPDIR/words"
  assert_success
  assert_output "$(kv_py "from mvp.worker import kv; kv.emit(*kv.words('node0_', $words))")"
}

@test "ERR trap: a call that returned 1 after its own ERROR line gets nothing added, whatever its last command's text" {
  # A stand-in for mvp::helper::run whose return is written otherwise than helper.sh's.
  run --separate-stderr in_lib 'answer() { echo "ERROR: the helper said no" >&2; local code=1; mvp::log::reported "$code"; return $((code)); }
    caller() { answer; echo "not reached"; }
    caller'
  assert_failure 1
  assert_equal "$stderr" "ERROR: the helper said no"
  assert_output ""
}

@test "ERR trap: the same call crashing (exit 2), and any other command failing with exit 1, are reported with their frames" {
  run --separate-stderr in_lib 'answer() { local code=2; mvp::log::reported "$code"; return "$code"; }
    answer'
  assert_failure 2
  assert_output ""
  [[ $stderr == "ERROR: command failed (exit 2): return \"\$code\""$'\n'"  at body"* ]]
  # An earlier answer of 1 (checked with ||) does not silence a later failure elsewhere.
  run --separate-stderr in_lib 'answer() { mvp::log::reported 1; return 1; }
    answer || true
    grep -q absent /dev/null'
  assert_failure 1
  [[ $stderr == "ERROR: command failed (exit 1): grep -q absent /dev/null"$'\n'"  at body"* ]]
}

@test "ERR trap: a helper's clean refusal through a script is its one ERROR line; log.sh names no command text" {
  mvp_isolate "$BATS_TEST_TMPDIR"
  # (A setting's form is config.sh's check; what only the helper knows, a run id, is the helper's.)
  run --separate-stderr env MVP_NIGHTLY_HISTORY_SINCE=bogus "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run
  assert_failure 1
  assert_output ""
  [[ $(grep -c '^ERROR' <<<"$stderr") == 1 ]]
  assert_equal "$(grep '^ERROR' <<<"$stderr")" "ERROR: MVP_NIGHTLY_HISTORY_SINCE='bogus' is not a nightly run id (nightly-YYYYmmddTHHMMSSZ)"
  run grep -n 'BASH_COMMAND ==' "$MVP_REPO/scripts/lib/log.sh"
  assert_failure
}

@test "scripts read no helper's or script's output by its last line or its wording" {
  cd "$MVP_REPO"
  # tail -n 1 of a script's output, or the text after its last newline, used as data.
  run grep -rnE "tail -n ?1|tail -1|##\*\\$'\\\\n'\}" scripts/
  # The one left: the last line of docker's stderr, shown to a person when the image check cannot run.
  assert_output --partial "runtime_compose.sh"
  [[ $(grep -vc "said##" <<<"$output") == 0 ]]
}
