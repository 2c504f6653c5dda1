#!/usr/bin/env bats
# The README and docs/ point at real things: every relative
# link resolves (its #anchor to a heading), every numbered script they name
# exists, and the README stays a front door: at most 200 lines, naming the two
# commands of a fresh machine.

setup() {
  load ../test_helper/common
  CHECK=(python3 "$MVP_REPO/tests/test_helper/check_docs.py")
}

@test "docs: every relative link and #anchor in README.md and docs/ resolves, every named scripts/NN_*.sh exists" {
  run "${CHECK[@]}" "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "docs: README.md is at most 200 lines and names make demo and make test" {
  (($(wc -l <"$MVP_REPO/README.md") <= 200))
  grep -q 'make demo' "$MVP_REPO/README.md"
  grep -q 'make test' "$MVP_REPO/README.md"
}

@test "docs: the checker names a broken link, a missing heading, a missing script, a long README and a missing command" {
  local repo="$BATS_TEST_TMPDIR/repo with space"
  mkdir -p "$repo/docs/sub" "$repo/scripts"
  touch "$repo/scripts/01_up.sh"
  {
    echo '# Title'
    # shellcheck disable=SC2016 # the backticks are Markdown, not a command
    echo 'Run `make demo`; see [the page](docs/sub/page.md#a-heading-with-code) and [gone](docs/gone.md).'
    for _ in $(seq 200); do echo 'filler'; done
  } >"$repo/README.md"
  cat >"$repo/docs/sub/page.md" <<'MD'
# Page

## A heading `with` code

Good: [up](../../README.md#title), [self](#page), scripts/01_up.sh and 01_up.sh.
Bad: [anchor](../../README.md#no-such-heading), [self](#nowhere), scripts/99_nothing.sh.
Not links: `[code](missing.md)` and a fenced block:

```
[fenced](missing.md) 98_fenced_is_still_a_name.sh
# not a heading
```
MD
  run "${CHECK[@]}" "$repo"
  assert_failure 1
  assert_output "README.md:2: link to docs/gone.md: docs/gone.md does not exist
docs/sub/page.md:6: link to ../../README.md#no-such-heading: README.md has no heading #no-such-heading
docs/sub/page.md:6: link to #nowhere: docs/sub/page.md has no heading #nowhere
docs/sub/page.md:6: names scripts/99_nothing.sh, which does not exist
docs/sub/page.md:10: names scripts/98_fenced_is_still_a_name.sh, which does not exist
README.md: 202 lines, more than 200; move the detail to a docs/ page
README.md: does not name \`make test\`"
}
