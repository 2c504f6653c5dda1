#!/usr/bin/env bats
# Set-up on a user's machine: the trainer lock covers every
# platform it claims, torch comes from the first place that has a CPU build
# (else the default build with one warning, never a failure, but for CI's
# rule), the demo's packages are checked and never installed, and every
# download is tried again with backoff.

setup() {
  load ../test_helper/common
  LOCK_PY=$MVP_REPO/helpers/trainer/lock.py
}

# plant_missing LOCK PLATFORM_GLOB: removes from LOCK the first pin's file (and
# its hash) whose name matches the glob, and prints that pin.
plant_missing() {
  python3 - "$1" "$2" <<'PY'
import fnmatch, re, sys
path, pattern = sys.argv[1], sys.argv[2]
lines = open(path).read().splitlines()
for i, line in enumerate(lines):
    if not line.startswith("# files: "):
        continue
    files = line[len("# files: "):].split()
    hashes = re.findall(r"--hash=sha256:(\w+)", lines[i + 1])
    hit = [k for k, f in enumerate(files) if fnmatch.fnmatch(f, pattern)]
    if not hit or len(files) < 2:
        continue
    k = hit[0]
    lines[i] = "# files: " + " ".join(files[:k] + files[k + 1:])
    lines[i + 1] = lines[i + 1].replace(f" --hash=sha256:{hashes[k]}", "")
    print(lines[i + 1].split(" ")[0])
    break
open(path, "w").write("\n".join(lines) + "\n")
PY
}

@test "lock: every pin has a hash for each platform the lock claims (CPython 3.10-3.13 on x86_64 and aarch64)" {
  run python3 "$LOCK_PY" --check
  assert_success
  assert_output ""
  run grep '^# platforms: ' "$MVP_REPO/helpers/trainer/requirements.lock"
  assert_output --partial "cp310-x86_64 cp310-aarch64 cp311-x86_64 cp311-aarch64 cp312-x86_64 cp312-aarch64 cp313-x86_64 cp313-aarch64"
}

@test "lock: a planted pin without its cp313 aarch64 file fails the check, naming the pin and the platform" {
  local lock=$BATS_TEST_TMPDIR/requirements.lock pin
  cp "$MVP_REPO/helpers/trainer/requirements.lock" "$lock"
  pin=$(plant_missing "$lock" '*-cp313-cp313-manylinux*_aarch64.whl')
  [[ $pin == *==* ]]
  run python3 "$LOCK_PY" --check "$lock"
  assert_failure 1
  assert_output --regexp "^ERROR: $lock:[0-9]+: ${pin//./\\.} has no hash for cp313-aarch64, a platform the lock claims; run make lock-trainer$"
  [[ ${#lines[@]} == 1 ]]
}

@test "lock: a hash without its file name, and an abi3 wheel too new for 3.10, are found" {
  local lock=$BATS_TEST_TMPDIR/requirements.lock
  printf '%s\n' '# platforms: cp310-x86_64 cp311-x86_64' \
    '# files: demo-1.0-cp311-abi3-manylinux_2_17_x86_64.whl' 'demo==1.0 --hash=sha256:aa' \
    '# files: pure-1.0-py3-none-any.whl' 'pure==1.0 --hash=sha256:bb --hash=sha256:cc' \
    '# files: old-1.0-cp310-cp310-manylinux_2_17_x86_64.whl' 'old==1.0 ; python_version == "3.10" --hash=sha256:dd' >"$lock"
  run python3 "$LOCK_PY" --check "$lock"
  assert_failure 1
  assert_line "ERROR: $lock:3: demo==1.0 has no hash for cp310-x86_64, a platform the lock claims; run make lock-trainer"
  assert_line "ERROR: $lock:5: pure==1.0 has 2 hashes and 1 files named above it"
  [[ ${#lines[@]} == 2 ]]
}

# registry_finds PYTHON ARCH VIEW: the package registry has, for each pin of
# VIEW (lock.py --for), a wheel pip installs on that Python and platform (pip's
# own tags) whose sha256 is the pin's: one index page a pin, no wheel downloaded
# (tests/test_helper/registry_finds.py).
registry_finds() {
  "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/registry_finds.py" "$@"
}

@test "lock: the package registry has every locked wheel for CPython 3.13 on aarch64 (pip's tags for it), by its hash; a wrong hash fails" {
  local view=$BATS_TEST_TMPDIR/cp313-aarch64.txt
  run --separate-stderr python3 "$LOCK_PY" --for cp313-aarch64
  assert_success
  printf '%s\n' "$output" >"$view"
  [[ $(wc -l <"$view") -gt 100 ]]
  grep -q '^ray==2.60.0 ' "$view"
  run registry_finds 3.13 aarch64 "$view"
  assert_success
  assert_output ""
  # Ray's pin with a hash of no file of it: the registry must not have it.
  grep '^ray==' "$view" | sed -E 's/--hash=sha256:[0-9a-f]{64}/--hash=sha256:'"$(printf '0%.0s' {1..64})"'/' >"$view.bad"
  run registry_finds 3.13 aarch64 "$view.bad"
  assert_failure 1
  assert_output "ray==2.60.0: none of its wheels for this Python and platform on https://pypi.org/simple has one of the pin's hashes"
  # Ray's true pin, but for another platform: its aarch64 hash is no x86_64 wheel's.
  grep '^ray==' "$view" >"$view.ray"
  run registry_finds 3.13 x86_64 "$view.ray"
  assert_failure 1
  assert_output --partial "ray==2.60.0: none of its wheels for this Python and platform"
}

@test "retry: a download that fails twice then succeeds runs 3 times, one warning line per retry, 30 s then 90 s apart" {
  local bin=$BATS_TEST_TMPDIR/bin count=$BATS_TEST_TMPDIR/count
  mkdir -p "$bin"
  # sleep records what it was asked to wait; the test waits for nothing.
  printf '#!/bin/sh\necho "sleep $*" >>"%s/sleeps"\n' "$BATS_TEST_TMPDIR" >"$bin/sleep"
  printf '#!/bin/sh\nn=$(($(cat "%s" 2>/dev/null || echo 0) + 1)); echo $n >"%s"; [ $n -ge 3 ] || exit 7\n' \
    "$count" "$count" >"$bin/flaky"
  chmod +x "$bin/sleep" "$bin/flaky"
  run env PATH="$bin:$PATH" bash -c 'source "$1/scripts/lib/log.sh" && source "$1/scripts/lib/retry.sh" && mvp::retry::download "downloading x" flaky' _ "$MVP_REPO"
  assert_success
  [[ $(<"$count") == 3 ]]
  [[ ${#lines[@]} == 2 ]]
  assert_line --index 0 --regexp '  !     downloading x failed \(exit 7, try 1 of 3\); trying again in 30 s$'
  assert_line --index 1 --regexp '  !     downloading x failed \(exit 7, try 2 of 3\); trying again in 90 s$'
  run cat "$BATS_TEST_TMPDIR/sleeps"
  assert_output $'sleep 30\nsleep 90'
}

@test "retry: a download that fails every time gives up after the last delay of MVP_DOWNLOAD_RETRY_DELAYS with its exit status" {
  local count=$BATS_TEST_TMPDIR/count
  run env MVP_DOWNLOAD_RETRY_DELAYS="0 0 0" bash -c 'source "$1/scripts/lib/log.sh" && source "$1/scripts/lib/retry.sh" &&
    mvp::retry::download "apt-get update" bash -c "echo x >>$2; exit 100"' _ "$MVP_REPO" "$count"
  assert_failure 100
  [[ $(wc -l <"$count") == 4 ]]
  assert_line --index 2 --partial "apt-get update failed (exit 100, try 3 of 4); trying again in 0 s"
  [[ $(grep -c '  !  ' <<<"$output") == 3 ]]
  run env MVP_DOWNLOAD_RETRY_DELAYS="30s" bash -c 'source "$1/scripts/lib/log.sh" && source "$1/scripts/lib/retry.sh" && mvp::retry::download x false' _ "$MVP_REPO"
  assert_failure 1
  assert_output "ERROR: MVP_DOWNLOAD_RETRY_DELAYS='30s' is not whole seconds apart by spaces; set it like '30 90'"
}

@test "system packages: make demo's check names what is missing and the command in one line, and installs nothing" {
  local bin=$BATS_TEST_TMPDIR/bin tool
  mkdir -p "$bin"
  # A host with what the script itself runs, python3 with venv, but no jq and no pgrep.
  for tool in bash dirname mktemp rm cat unshare nsenter flock git; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
  ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$bin/python3"
  printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.log"\nexit 1\n' "$BATS_TEST_TMPDIR" >"$bin/apt-get"
  printf '#!/bin/sh\necho "sudo $*" >>"%s/apt.log"\nexit 1\n' "$BATS_TEST_TMPDIR" >"$bin/sudo"
  chmod +x "$bin/apt-get" "$bin/sudo"
  run env PATH="$bin" "$MVP_REPO/scripts/libexec/system_packages.sh" demo
  assert_failure 1
  local cmd="apt-get install -y jq procps"
  ((EUID == 0)) || cmd="sudo $cmd"
  assert_output "ERROR: make demo needs jq procps; install them with: $cmd"
  [[ ! -e $BATS_TEST_TMPDIR/apt.log ]]
  run "$MVP_REPO/scripts/libexec/system_packages.sh" demo
  assert_success
  assert_output --partial "SKIP: system packages of the demo"
}

@test "make: the demo's setup runs no apt-get and no test package; the tiers' setup does" {
  run make -C "$MVP_REPO" --dry-run demo
  assert_success
  assert_output --partial "scripts/libexec/system_packages.sh demo"
  refute_output --partial "system_packages.sh tests"
  refute_output --partial "apt-get"
  refute_output --partial "tests/requirements.txt"
  run make -C "$MVP_REPO" --dry-run test
  assert_output --partial "scripts/libexec/system_packages.sh tests-demo"
  # The tiers' other packages install beside setup's steps, and it waits for both.
  assert_output --partial "scripts/libexec/system_packages.sh tests & apt=\$!"
  assert_output --partial "{ scripts/libexec/system_packages.sh demo && scripts/12_install_py_deps.sh --runtime local"
  assert_output --partial 'wait $apt || rc=1; exit $rc'
  assert_output --partial "tests/requirements.txt"
}

@test "system packages: tests-demo installs only the demo's packages: one ERROR line naming them when not root, a SKIP when all are here" {
  run "$MVP_REPO/scripts/libexec/system_packages.sh" tests-demo
  assert_success
  assert_output --partial "SKIP: Debian packages: all 5 that the demo needs are installed"
  local bin=$BATS_TEST_TMPDIR/bin tool
  mkdir -p "$bin"
  for tool in bash dirname mktemp rm cat python3; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
  # dpkg answers "not installed" for jq alone; not root: a user namespace
  # with no mapping, where bash's EUID is the overflow uid.
  printf '#!/bin/sh\n[ "$2" = jq ] && exit 1\nexit 0\n' >"$bin/dpkg"
  printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.log"\nexit 1\n' "$BATS_TEST_TMPDIR" >"$bin/apt-get"
  chmod +x "$bin/dpkg" "$bin/apt-get"
  run unshare --user env PATH="$bin" "$MVP_REPO/scripts/libexec/system_packages.sh" tests-demo
  assert_failure 1
  assert_output "ERROR: the demo needs the Debian packages jq; install them with: sudo apt-get install -y jq"
  [[ ! -e $BATS_TEST_TMPDIR/apt.log ]]
}

# run_12 [VAR=VALUE...]: 12_install_py_deps.sh in a copy of the repo whose
# python3 and venv python are tests/test_helper/python_pip_stub.sh.
run_12() {
  local repo=$BATS_TEST_TMPDIR/repo bin=$BATS_TEST_TMPDIR/bin
  rm -rf "$repo" "$BATS_TEST_TMPDIR/python.log"
  mkdir -p "$repo" "$bin"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/config" "$MVP_REPO/shared-layout.txt" "$MVP_REPO/VERSION" "$repo/"
  mkdir -p "$repo/helpers/trainer" && cp "$MVP_REPO"/helpers/trainer/*.{py,in,lock} "$repo/helpers/trainer/"
  cp "$MVP_REPO/helpers/requirements.txt" "$repo/helpers/"
  cp "$MVP_REPO/tests/test_helper/python_pip_stub.sh" "$bin/python3"
  export MVP_STUB_LOG=$BATS_TEST_TMPDIR/python.log MVP_STUB_REAL_PYTHON
  MVP_STUB_REAL_PYTHON=$(python3 -c 'import sys; print(sys.executable)')
  # CI exports MVP_TORCH_CPU_ONLY=1 for its own setup; a test names it when it means it.
  run env -u MVP_TORCH_CPU_ONLY PATH="$bin:$PATH" MVP_CONFIG="$MVP_REPO/tests/fixtures/empty.env" "$@" "$repo/scripts/12_install_py_deps.sh" --runtime local
}

@test "12: torch comes from the first place of MVP_TORCH_SOURCES that offers a CPU build, without its dependencies, before the lock" {
  run_12 MVP_TORCH_SOURCES="pip https://idx.example/cpu https://later.example/cpu" MVP_STUB_CPU_AT="https://idx.example/cpu https://later.example/cpu"
  assert_success
  assert_output --partial "torch: pip offers the CUDA build of torch==2.13.0 here; trying the next place"
  assert_output --partial "installing torch 2.13.0+cpu (CPU build) from https://idx.example/cpu"
  refute_output --partial "WARN"
  refute_output --partial "later.example"
  run grep -n -- '-m pip install' "$MVP_STUB_LOG"
  [[ ${#lines[@]} == 5 ]]
  [[ ${lines[1]} == *"--dry-run"*" torch==2.13.0 " && ${lines[1]} != *--index-url* ]]
  [[ ${lines[2]} == *"--dry-run"*"--index-url https://idx.example/cpu torch==2.13.0 " ]]
  [[ ${lines[3]} == *"install --quiet --disable-pip-version-check --no-deps --index-url https://idx.example/cpu torch==2.13.0 " ]]
  [[ ${lines[4]} == *"--require-hashes -r "*"/helpers/trainer/requirements.lock "* ]]
}

@test "12: no CPU build anywhere: the default build with its dependencies and one warning naming its size; CI's rule alone fails it" {
  run_12 MVP_TORCH_SOURCES="pip https://idx.example/cpu ./no-such-dir" MVP_STUB_NONE_AT=https://idx.example/cpu MVP_DOWNLOAD_RETRY_DELAYS=0
  assert_success
  assert_line --partial "asking https://idx.example/cpu for torch==2.13.0 failed (exit 1, try 1 of 2); trying again in 0 s"
  assert_line --partial "torch: no torch==2.13.0 from https://idx.example/cpu (pip found none there, or could not reach it); trying the next place"
  assert_line --partial "torch: no wheel directory ./no-such-dir; trying the next place"
  refute_output --partial "ERROR"
  assert_line --regexp "  !     torch is the default build with CUDA: 4321 MB in .*/repo/\.venv \(torch, nvidia-\*, triton\); it trains on CPU as well"
  # The one warning, and the one retry of the index that did not answer.
  [[ $(grep -c '  !  ' <<<"$output") == 2 ]]
  grep -q -- "-m pip install --quiet --disable-pip-version-check torch==2.13.0 $" "$MVP_STUB_LOG"
  run ! grep -q no_cuda.py "$MVP_STUB_LOG"
  run_12 MVP_TORCH_CPU_ONLY=1 MVP_TORCH_SOURCES=pip
  assert_failure 1
  assert_line "ERROR: CUDA packages got into the stub venv"
  grep -q "helpers/trainer/no_cuda.py" "$MVP_STUB_LOG"
}
