#!/usr/bin/env bats
# What the docs claim about the code is checked against the code: flags given to a numbered script, MVP_* names, a setting's
# default, exit codes a page gives a script, the count of numbered scripts,
# `python -m mvp` commands, repository paths, citations of docs/spec.md's
# points, the tables of scripts.md, settings.md and testing.md,
# ARCHITECTURE.md's module tables (tests/test_helper/check_claims.py says how
# each is read). Numbered script
# names and links are docs_links.bats's. The checker runs on a tree given as
# its argument, so that each kind of false claim is planted in a copy below.

setup() {
  load ../test_helper/common
  CHECK=(python3 "$MVP_REPO/tests/test_helper/check_claims.py")
}

copy_tree() {
  local dest=$BATS_TEST_TMPDIR/tree
  mkdir -p "$dest"
  # What the pages name: the checkout's files, ignored ones left out (a page may name any of them).
  (cd "$MVP_REPO" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$dest")
  echo "$dest"
}

@test "docs claims: every flag, MVP_* name and default, exit code, script count, helper command, path, spec point, table row and module the pages name is what the code has" {
  run "${CHECK[@]}" "$MVP_REPO"
  assert_output ""
  assert_success
}

@test "docs claims: a planted false claim of each kind is one line naming page, line and what is false" {
  local tree
  tree=$(copy_tree)
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command
  printf '%s\n' '' 'Run `41_submit_grpo_epoch1.sh --wait --no-such-flag` or `scripts/51_logs.sh ID --stepz | tail`.' \
    'Set MVP_NO_SUCH_SETTING=1; `70_render_sbatch.sh` exits 75 when busy.' \
    'Families: MVP_K8S_* is declared, MVP_NOWHERE_* is not.' '```' '52 ID --force-it' '```' \
    "40-42's \`--queue\` is real, 50 \`--jsn\` is not." 'The check: `python -m mvp resumd ID`; `MVP_LOG_SYNC_SECONDS` (45; 0: off); see `helpers/mvp/nowhere.py`.' >>"$tree/docs/faults.md"
  local n row first
  n=$(wc -l <"$tree/docs/faults.md")
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command
  row=$(grep -m1 '^| `MVP_RUNTIME` |' "$tree/docs/settings.md") first=$(grep -n -m1 -F "$row" "$tree/docs/settings.md")
  echo "$row" >>"$tree/docs/settings.md"
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command
  sed -i '/^| `worker\/kv.py` |/d' "$tree/docs/ARCHITECTURE.md"
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command
  sed -i '/^| \[`72_build_image.sh`\]/d' "$tree/docs/scripts.md"
  sed -i -E 's/All twenty-[a-z]+ numbered scripts/All twenty numbered scripts/' "$tree/README.md"
  local readme_line scripts=("$tree"/scripts/[0-9][0-9]_*.sh)
  readme_line=$(grep -n 'All twenty numbered scripts' "$tree/README.md" | cut -d: -f1)
  echo '"""A module no table names."""' >"$tree/helpers/mvp/unlisted.py"
  touch "$tree/scripts/lib/unlisted.sh"
  sed -i 's/MVP_TEST_REPEAT/MVP_RENAMED_REPEAT/g' "$tree/tests/integration/admission.bats"
  # A tier table that miscounts: a test more in one file, a file gone, a file new.
  printf '%s\n' '@test "one more" {' '  true' '}' >>"$tree/tests/slurm/slurm_jobs.bats"
  rm "$tree/tests/kuberay/kuberay_nightly.bats"
  cp "$tree/tests/ssh/ssh_faults.bats" "$tree/tests/ssh/ssh_new.bats"
  sed -i 's/(docs\/spec.md, point 9)/(docs\/spec.md, point 99)/' "$tree/templates/jobspecs/ppo.yaml"
  echo "# as seed 004 says" >>"$tree/templates/jobspecs/grpo.yaml"
  local slurm ssh_faults kuberay_line
  kuberay_line=$(grep -n -m1 'tests/kuberay/kuberay_nightly.bats' "$tree/docs/runtimes/kuberay.md" | cut -d: -f1)
  slurm=$(grep -c '^@test ' "$tree/tests/slurm/slurm_jobs.bats") ssh_faults=$(grep -c '^@test ' "$tree/tests/ssh/ssh_faults.bats")
  run "${CHECK[@]}" "$tree"
  assert_failure 1
  assert_output "README.md:$readme_line: says twenty numbered scripts; scripts/ has ${#scripts[@]}
docs/faults.md:$((n - 7)): gives 41_submit_grpo_epoch1.sh --no-such-flag, which its --help does not show
docs/faults.md:$((n - 7)): gives 51_logs.sh --stepz, which its --help does not show
docs/faults.md:$((n - 3)): gives 52_stop.sh --force-it, which its --help does not show
docs/faults.md:$((n - 1)): gives 50_status.sh --jsn, which its --help does not show
docs/faults.md:$((n - 6)): names MVP_NO_SUCH_SETTING, which config/settings.contract does not declare
docs/faults.md:$((n - 5)): names MVP_NOWHERE_*, which config/settings.contract does not declare
docs/faults.md:$((n - 6)): says 70_render_sbatch.sh exits 75, a code its code never gives
docs/faults.md:$n: names python -m mvp resumd, which is no command of helpers/mvp/__main__.py
docs/faults.md:$n: says MVP_LOG_SYNC_SECONDS defaults to 45; config/settings.contract says 30
docs/faults.md:$n: names helpers/mvp/nowhere.py, which is not in the repository
docs/runtimes/kuberay.md:$kuberay_line: names tests/kuberay/kuberay_nightly.bats, which is not in the repository
docs/scripts.md: its table has no row for 72_build_image.sh
docs/settings.md:$(wc -l <"$tree/docs/settings.md"): MVP_RUNTIME again (first at line ${first%%:*})
check_claims.py: NOT_SETTINGS names MVP_TEST_REPEAT as used in tests/integration/admission.bats, which does not use it
docs/ARCHITECTURE.md: its helpers/mvp table lacks unlisted.py
docs/ARCHITECTURE.md: its helpers/mvp table lacks worker/kv.py
docs/ARCHITECTURE.md: its scripts/lib table lacks unlisted.sh
docs/testing.md: its tests/slurm/ row gives slurm_jobs $((slurm - 1)) tests; it has $slurm
docs/testing.md: its tests/kuberay/ row names kuberay_nightly, which tests/kuberay/ does not have
docs/testing.md: its tests/ssh/ row lacks ssh_new ($ssh_faults tests)
templates/jobspecs/grpo.yaml:$(wc -l <"$tree/templates/jobspecs/grpo.yaml"): cites a seed specification the reader cannot find; cite docs/spec.md's points
templates/jobspecs/ppo.yaml:1: cites the spec's point 99; docs/spec.md has none"
}

@test "docs claims: an exit code the code gives (75: a lock held elsewhere, reached through mvp::run::with_lock) passes for the script that reaches it" {
  local tree
  tree=$(copy_tree)
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command
  printf '%s\n' '' '`60_nightly_regression.sh` exits 75 while another night runs.' >>"$tree/docs/faults.md"
  run "${CHECK[@]}" "$tree"
  assert_output ""
  assert_success
}

@test "docs claims: a planted stale claim of each kind fails (pass-through order, a helper's flag, a file key, the first judged night, a make prerequisite, a number stated twice, a flag make cannot pass)" {
  local tree
  tree=$(copy_tree)
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command
  printf '%s\n' '' 'Render with `70_render_sbatch.sh SCRIPT [ARGS...] [FLAGS]`, e.g. `70_render_sbatch.sh 41 --out x.sbatch`.' \
    'The preflight runs with `--check-only`.' \
    "The fingerprint takes the manifest's \`commit\`." \
    'Figures are judged from the third good night on.' \
    '`make test-unit` runs its tier (after `make setup`).' \
    'A smaller bundle: `make gpu-bundle HOST_HAS=numpy,pandas`, 50.9 MiB; or `make gpu-bundle` with `--part-mib 20`, or `make gpu-bundle MAXMIB=65`.' \
    >>"$tree/docs/faults.md"
  local n
  n=$(wc -l <"$tree/docs/faults.md")
  sed -i '0,/^`make test` runs every tier;/s//`make test` runs every tier (a rehearsal: 588 passed, none failed);/' "$tree/docs/testing.md"
  sed -i 's/has been measured on a GPU (five runs on H200/has been measured on a GPU (twice, on H200/' "$tree/docs/first-gpu-night.md"
  # The usage line's generator, back to putting the flags after the words it passes through.
  sed -i 's/^  if ((rest)); then$/  if false; then/' "$tree/scripts/lib/flags.sh"
  local passed twice rows
  passed=$(grep -n '588 passed' "$tree/docs/testing.md" | cut -d: -f1)
  twice=$(grep -n 'measured on a GPU (twice' "$tree/docs/first-gpu-night.md" | cut -d: -f1)
  rows=$(sed -n '/^| run |/,/^$/p' "$tree/docs/first-gpu-night.md" | grep -c '^| [0-9]')
  run "${CHECK[@]}" "$tree"
  assert_failure 1
  assert_output "docs/faults.md:$((n - 5)): writes 70_render_sbatch.sh with FLAGS after SCRIPT, where every word is SCRIPT's own; its flags go before SCRIPT
docs/faults.md:$((n - 5)): writes 70_render_sbatch.sh with --out after SCRIPT, where every word is SCRIPT's own; its flags go before SCRIPT
docs/faults.md:$((n - 4)): gives --check-only, a flag of the helper's submit that no numbered script takes
docs/faults.md:$((n - 3)): names the manifest key commit, which helpers/mvp/cluster/snapshot.py or helpers/mvp/data/prepare.py never writes
docs/faults.md:$((n - 2)): says the third night is the first judged; with MVP_NIGHTLY_MIN_HISTORY 3 good nights before it, it is the fourth
docs/faults.md:$((n - 1)): says make test-unit runs after make setup; it runs after setup-tests
docs/faults.md:$n: gives make gpu-bundle MAXMIB=, which its recipe does not read
docs/faults.md:$n: gives --part-mib for make gpu-bundle, which its recipe cannot pass (a make variable it reads, or scripts/libexec/gpu_bundle.sh --part-mib)
docs/faults.md:$n: says the bundle of HOST_HAS=numpy,pandas is 50.9 MiB; docs/first-gpu-night.md's table gives 47.9 and 49.9 and 51.5
docs/first-gpu-night.md:$twice: says twice; its table of measured runs has $rows
docs/testing.md:$passed: says 588 passed; its table counts $(sed -n '/^| tier |/,/^$/p' "$tree/docs/testing.md" | grep -o '` ([0-9]*' | tr -dc '0-9\n' | paste -sd+ | bc) tests
70_render_sbatch.sh --help: its usage line puts [FLAGS] after SCRIPT, where every word is SCRIPT's own"
}

@test "docs claims: the sentence saying which night is the first judged has one owner, docs/nightly.md" {
  local tree
  tree=$(copy_tree)
  printf '%s\n' '' 'With the default, the fourth night is the first judged.' >>"$tree/docs/faults.md"
  run "${CHECK[@]}" "$tree"
  assert_failure 1
  assert_output "docs/faults.md:$(wc -l <"$tree/docs/faults.md"): says when nights are first judged, which docs/nightly.md says; link it instead"
}

@test "docs claims: a tracker number or a workplace tool's name in a page, a test or a benchmark fails; a public tracker's does not" {
  local tree word tool
  tree=$(copy_tree)
  word="iss""ue 22" tool="farm-""studio"
  printf '%s\n' "# the layout $word asked for" >>"$tree/tests/unit/shell_layout.bats"
  printf '%s\n' '' "Counted as $tool does; podman #11446 and verl #7401 are public." >>"$tree/docs/faults.md"
  run "${CHECK[@]}" "$tree"
  assert_failure 1
  assert_output "docs/faults.md:$(wc -l <"$tree/docs/faults.md"): cites '$tool', which a reader cannot open; say what the code or test proves
tests/unit/shell_layout.bats:$(wc -l <"$tree/tests/unit/shell_layout.bats"): cites '$word', which a reader cannot open; say what the code or test proves"
}
