#!/usr/bin/env bats
# The nightly's notifications (helpers/mvp/nightly/notify.py) against a real HTTP
# server on 127.0.0.1 (tests/test_helper/webhook_receiver.py) and a sendmail
# receiver that keeps what sendmail would be given: once per night, bounded
# retries, the webhook URL kept secret, settings refused before the night.

setup() {
  load ../test_helper/common
  RUN=$BATS_TEST_TMPDIR/regressions/nightly-20261125T023000Z
  export SHARED_ROOT=$BATS_TEST_TMPDIR
  mkdir -p "$RUN"
  night false
  export MVP_NIGHTLY_NOTIFY_ON=failure MVP_NIGHTLY_MAIL_TO="" MVP_NIGHTLY_SENDMAIL=/usr/sbin/sendmail
  export MVP_NIGHTLY_WEBHOOK_URL_FILE="" MVP_NIGHTLY_NOTIFY_TRIES=3 MVP_NIGHTLY_NOTIFY_PAUSE_S=0.2
  export MVP_NIGHTLY_HISTORY=7 MVP_NIGHTLY_MIN_HISTORY=3 MVP_NIGHTLY_TOLERANCE="step_s=10" MVP_NIGHTLY_HISTORY_SINCE=""
  export MVP_NIGHTLY_BAND_K=5 MVP_NIGHTLY_BAND_STEPS=2 MVP_NIGHTLY_BAND_FLOOR=2
  export MVP_NIGHTLY_BISECT_REPO=""
  SECRET=T0KEN$RANDOM$RANDOM
}

teardown() {
  [[ -z ${RECEIVER_PID:-} ]] || kill "$RECEIVER_PID" 2>/dev/null || true
}

# night PASSED: the judged night's report.json and report.md.
night() {
  jq -n --argjson passed "$1" '{run_id: "nightly-20261125T023000Z", passed: $passed,
    summary: (if $passed then "NIGHTLY PASS nightly-20261125T023000Z: 1/1 jobs passed every check"
              else "NIGHTLY FAIL nightly-20261125T023000Z: 1/2 jobs failed: grpo [regression]" end),
    jobs: [{name: "grpo", checks: [{name: "succeeded_in_time", passed: true},
                                   {name: "regression", passed: (if $passed then null else false end)}]},
           {name: "sft", checks: [{name: "regression", passed: null}]}]}' >"$RUN/report.json"
  echo "# Nightly regression nightly-20261125T023000Z" >"$RUN/report.md"
}

# receiver FAIL_FIRST [WATCH]: a webhook on 127.0.0.1 whose URL (with SECRET in its path) is in a 0600 file;
# with WATCH, each POST records the command lines holding WATCH while it is open.
receiver() {
  RECEIVER_WATCH=${2:-} python3 "$MVP_REPO/tests/test_helper/webhook_receiver.py" "$BATS_TEST_TMPDIR/port" "$BATS_TEST_TMPDIR/posts" "$1" &
  RECEIVER_PID=$!
  mvp_wait_until 10 "the webhook receiver listening" test -s "$BATS_TEST_TMPDIR/port"
  (umask 077 && echo "http://127.0.0.1:$(<"$BATS_TEST_TMPDIR/port")/hooks/$SECRET" >"$BATS_TEST_TMPDIR/url")
  export MVP_NIGHTLY_WEBHOOK_URL_FILE=$BATS_TEST_TMPDIR/url
}

notify() {
  run --separate-stderr env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -m mvp notify "$@"
}

@test "notify: a failed night is POSTed once as JSON (text, run_id, failed jobs and checks, report); a second call sends nothing" {
  receiver 0
  notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  assert_equal "$stderr" "notified by webhook (1 try)"
  run jq -c '[.path, .type, (.body | fromjson | [.text, .run_id, .passed, .failed, .report])]' "$BATS_TEST_TMPDIR/posts"
  assert_output "[\"/hooks/$SECRET\",\"application/json\",[\"NIGHTLY FAIL nightly-20261125T023000Z: 1/2 jobs failed: grpo [regression]\\n$RUN/report.html\",\"nightly-20261125T023000Z\",false,[{\"job\":\"grpo\",\"checks\":[\"regression\"]}],\"$RUN/report.html\"]]"
  notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  assert_equal "$stderr" "SKIP: this night was told already ($RUN/notified.json)"
  [[ $(wc -l <"$BATS_TEST_TMPDIR/posts") == 1 ]]
  jq -e '.sent.webhook == {ok: true, tries: 1}' "$RUN/notified.json"
}

@test "notify: a webhook answering HTTP 500 twice gets the message on the 3rd try; one that always fails is tried MVP_NIGHTLY_NOTIFY_TRIES times, one WARNING, exit 0" {
  receiver 2
  notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  assert_equal "$stderr" "notified by webhook (3 tries)"
  run jq -r '.status' "$BATS_TEST_TMPDIR/posts"
  assert_output $'500\n500\n200'
  kill "$RECEIVER_PID"; rm -f "$BATS_TEST_TMPDIR/posts" "$BATS_TEST_TMPDIR/port" "$RUN/notified.json"
  receiver 99
  SECONDS=0
  MVP_NIGHTLY_NOTIFY_TRIES=4 notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  assert_equal "$stderr" "WARNING: webhook notification failed after 4 tries: HTTP 500"
  [[ $(wc -l <"$BATS_TEST_TMPDIR/posts") == 4 ]]
  ((SECONDS < 10))
  jq -e '.sent.webhook == {ok: false, tries: 4, error: "HTTP 500"}' "$RUN/notified.json"
}

@test "notify: the webhook URL's secret is in no log line, notified.json or argv, even when the host refuses the connection" {
  (umask 077 && echo "http://127.0.0.1:9/hooks/$SECRET" >"$BATS_TEST_TMPDIR/url")
  MVP_NIGHTLY_WEBHOOK_URL_FILE=$BATS_TEST_TMPDIR/url MVP_NIGHTLY_NOTIFY_TRIES=2 notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  [[ $stderr == "WARNING: webhook notification failed after 2 tries: [Errno 111] Connection refused" ]]
  run grep -rl "$SECRET" "$RUN"
  assert_output ""
  # While the POST is open, no process of this machine (the helper, anything
  # it started) has the URL's secret on its command line: the helper is given
  # the file's name, never the URL.
  rm "$RUN/notified.json"
  receiver 0 "$SECRET"
  notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  run jq -c '[.path == "/hooks/'"$SECRET"'", .argv_with_watch]' "$BATS_TEST_TMPDIR/posts"
  assert_output '[true,[]]'
}

@test "notify: mail goes through MVP_NIGHTLY_SENDMAIL -t -oi: To the addresses, Subject the night's verdict line, report.md as the body" {
  local sendmail=$BATS_TEST_TMPDIR/sendmail
  printf '#!/bin/sh\necho "$@" >"%s/argv"\ncat >"%s/mail"\n' "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR" >"$sendmail"
  chmod +x "$sendmail"
  MVP_NIGHTLY_MAIL_TO="ops@example.com oncall@example.com" MVP_NIGHTLY_SENDMAIL=$sendmail notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  assert_equal "$stderr" "notified by mail (1 try)"
  assert_equal "$(<"$BATS_TEST_TMPDIR/argv")" "-t -oi"
  grep -qx "To: ops@example.com, oncall@example.com" "$BATS_TEST_TMPDIR/mail"
  grep -qxF "Subject: NIGHTLY FAIL nightly-20261125T023000Z: 1/2 jobs failed: grpo [regression]" "$BATS_TEST_TMPDIR/mail"
  grep -qx "# Nightly regression nightly-20261125T023000Z" "$BATS_TEST_TMPDIR/mail"
  # A sendmail that fails is tried again, then named.
  printf '#!/bin/sh\necho "queue full" >&2\nexit 75\n' >"$sendmail"
  rm "$RUN/notified.json"
  MVP_NIGHTLY_MAIL_TO=ops@example.com MVP_NIGHTLY_SENDMAIL=$sendmail MVP_NIGHTLY_NOTIFY_TRIES=2 notify --run-dir regressions/nightly-20261125T023000Z
  assert_equal "$stderr" "WARNING: mail notification failed after 2 tries: sendmail exited 75: queue full"
}

@test "notify: a night that passed tells nobody with MVP_NIGHTLY_NOTIFY_ON=failure, and is told with always" {
  night true
  receiver 0
  notify --run-dir regressions/nightly-20261125T023000Z
  assert_success
  assert_equal "$stderr" "SKIP: no notification: the night passed and MVP_NIGHTLY_NOTIFY_ON=failure"
  [[ ! -e $BATS_TEST_TMPDIR/posts ]]
  rm "$RUN/notified.json"
  MVP_NIGHTLY_NOTIFY_ON=always notify --run-dir regressions/nightly-20261125T023000Z
  assert_equal "$stderr" "notified by webhook (1 try)"
  jq -e '.body | fromjson | .passed == true and .failed == []' "$BATS_TEST_TMPDIR/posts"
}

@test "notify --check: a URL file others may read, a missing sendmail, a bad tolerance, band or NOTIFY_ON, a bisection repo that is no git checkout is one ERROR line, exit 1" {
  echo "http://127.0.0.1:9/hooks/$SECRET" >"$BATS_TEST_TMPDIR/url"
  chmod 644 "$BATS_TEST_TMPDIR/url"
  MVP_NIGHTLY_WEBHOOK_URL_FILE=$BATS_TEST_TMPDIR/url notify --check
  assert_failure 1
  assert_equal "$stderr" "ERROR: MVP_NIGHTLY_WEBHOOK_URL_FILE=$BATS_TEST_TMPDIR/url may be read by others (mode 644); the URL is a secret: chmod 600 $BATS_TEST_TMPDIR/url"
  MVP_NIGHTLY_MAIL_TO=ops@example.com MVP_NIGHTLY_SENDMAIL=/nonexistent/sendmail notify --check
  assert_failure 1
  [[ $stderr == "ERROR: MVP_NIGHTLY_MAIL_TO is set but MVP_NIGHTLY_SENDMAIL=/nonexistent/sendmail is not an executable; "* ]]
  MVP_NIGHTLY_TOLERANCE="speed=10" notify --check
  assert_equal "$stderr" "ERROR: MVP_NIGHTLY_TOLERANCE: 'speed=10' is not FIGURE=PERCENT with FIGURE one of step_s, throughput, final_score, best_score, final_loss, peak_memory_gb"
  MVP_NIGHTLY_HISTORY_SINCE=yesterday notify --check
  assert_equal "$stderr" "ERROR: MVP_NIGHTLY_HISTORY_SINCE='yesterday' is not a nightly run id (nightly-YYYYmmddTHHMMSSZ)"
  MVP_NIGHTLY_BAND_K=wide notify --check
  assert_equal "$stderr" "ERROR: MVP_NIGHTLY_BAND_K=wide, MVP_NIGHTLY_BAND_FLOOR=2, MVP_NIGHTLY_BAND_STEPS=2: K must be a number > 0, FLOOR a percent >= 0, STEPS a whole number >= 1"
  MVP_NIGHTLY_BAND_STEPS=0 notify --check
  assert_failure 1
  [[ $stderr == "ERROR: MVP_NIGHTLY_BAND_K=5, MVP_NIGHTLY_BAND_FLOOR=2, MVP_NIGHTLY_BAND_STEPS=0: "* ]]
  MVP_NIGHTLY_BISECT_REPO=$BATS_TEST_TMPDIR notify --check
  assert_equal "$stderr" "ERROR: MVP_NIGHTLY_BISECT_REPO=$BATS_TEST_TMPDIR is not a git checkout; point it at a git clone of verl (your fork) on this host, or leave it empty (no bisection)"
  notify --check
  assert_success
  # The script refuses before it starts a night (and in --dry-run); NOTIFY_ON's
  # and NOTIFY_TRIES' form is their contract type, checked by config.sh.
  local bad
  for bad in "MVP_NIGHTLY_NOTIFY_ON=sometimes|failure or always" "MVP_NIGHTLY_NOTIFY_TRIES=0|a whole number >= 1"; do
    run --separate-stderr env "${bad%%|*}" "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run --config "$MVP_REPO/tests/fixtures/empty.env"
    assert_failure 1
    [[ $(grep -c ERROR <<<"$stderr") == 1 && $stderr == "ERROR: ${bad%%=*}='"* ]]
    [[ $stderr == *"' must be ${bad#*|}; fix it where it is set"* ]]
    assert_output ""
  done
}
