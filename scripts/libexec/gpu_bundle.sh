#!/usr/bin/env bash
# gpu_bundle.sh: writes an offline bundle for an air-gapped GPU host that has
# only Python and torch, for `make gpu-smoke BUNDLE=DIR` there: the wheels of
# Ray 2.60 and of verl's requirements such a host lacks (the pins of
# helpers/trainer/requirements.lock, minus helpers/offline/leaves-out.txt),
# repacked (helpers/offline/repack_wheel.py: stored, stripped, Ray's Java jar,
# RLlib and UI source maps and pyarrow's Flight/S3/Substrait/ORC left out, RECORD
# rewritten), the tiny model and the GSM8K-shaped data (30 with
# MVP_MODEL_SOURCE=tiny, MVP_GSM8K_SOURCE=synthetic), verl 0.9.1's tree and
# this checkout (git archive HEAD: committed files only). Each part is its own
# .tar.xz; one larger than --part-mib is split (.tar.xz.00, .01, ...; the
# smoke joins them). MANIFEST.txt lists every file's size, every wheel, what
# was left out and why; SHA256SUMS the parts. Its size is not refused: the
# channel that carries it to the GPU host sets a limit, not the runbook. Given
# --max-mib N (make gpu-bundle MAX_MIB=N), it refuses, keeping nothing, when
# all of it together, with the checkout's tracked files counted as a device
# transfer copies them (uncompressed), is larger than N MiB.
#
# Usage: scripts/libexec/gpu_bundle.sh [--python 3.12] [--out DIR] [--part-mib 30]
#          [--max-mib N] [--xz 9e] [--wheel-cache DIR] [--host-has NAME,...] [--help]
#   --python    the GPU host's Python (X.Y); 3.11 gives a bundle this machine installs
#   --max-mib   the most the transfer channel carries, the checkout counted (default: no limit)
#   --host-has  distributions the GPU host already has besides torch (e.g. numpy,pandas,pyarrow
#               in an NGC PyTorch container): left out too, and named in MANIFEST.txt
#   --out       where the bundle goes (default: .mvp/gpu-bundle/cpXY; replaced whole)
#   --xz        xz preset (0-9, e = extreme); 0 is fast, for tests
# The wheels are downloaded once into --wheel-cache (default
# .mvp/cache/gpu-bundle/wheels-cpXY) from the package index pip is configured
# for. Needs: git, pip, xz, tar, split, sha256sum; strip (binutils) if present.
# Safe to re-run: the cache is reused, the bundle rebuilt.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
mvp::flags::spec --python=X.Y --out=DIR --part-mib=N --max-mib=N --xz=PRESET --wheel-cache=DIR --host-has=NAMES

# The platforms a manylinux x86_64 host with glibc 2.28+ installs.
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_26_x86_64 manylinux_2_24_x86_64
  manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_12_x86_64 manylinux2010_x86_64
  manylinux_2_5_x86_64 manylinux1_x86_64)

# The lock's pins (name==version) whose marker holds for the GPU host's
# Python, minus what leaves-out.txt and --host-has name (helpers/offline/pins.py).
pins() {
  "$PY" "$MVP_REPO/helpers/offline/pins.py" "$MVP_REPO/helpers/trainer/requirements.lock" \
    "$MVP_REPO/helpers/offline/leaves-out.txt" "$VER" "$HOST_HAS"
}

# download CACHE PYVER PIN: the pin's wheel for the GPU host in CACHE. A pin
# with no wheel on the index (an sdist only) is built here, and must come out
# pure Python (py3-none-any), which installs anywhere.
download() {
  local cache=$1 ver=$2 pin=$3 p
  local -a plat=()
  for p in "${PLATFORMS[@]}"; do plat+=(--platform "$p"); done
  if "${PIP[@]}" download -q --no-deps --only-binary=:all: "${plat[@]}" --python-version "$ver" \
    --implementation cp -d "$cache" "$pin" >/dev/null 2>"$cache/.err-$pin"; then
    rm -f "$cache/.err-$pin"
    return 0
  fi
  local built=$cache/.build-$pin
  rm -rf "$built"
  if "${PIP[@]}" wheel -q --no-deps -w "$built" "$pin" >/dev/null 2>>"$cache/.err-$pin" &&
    compgen -G "$built/*-py3-none-any.whl" >/dev/null; then
    mv "$built"/*.whl "$cache/" && rm -rf "$built" "$cache/.err-$pin"
    return 0
  fi
  echo "$pin: no wheel for Python $ver on manylinux x86_64, and its sdist does not build a pure-Python wheel (pip says why in $cache/.err-$pin)"
  return 1
}

# The cached wheel of PIN (name==version), by the wheel name's normalised
# name and version.
wheel_of() {
  local cache=$1 pin=$2 f name ver
  name=${pin%%==*} ver=${pin#*==}
  name=${name,,} name=${name//[-.]/_}
  for f in "$cache"/*.whl; do
    local base=${f##*/} fname
    fname=${base%%-*} fname=${fname,,} fname=${fname//./_}
    [[ $fname == "$name" && $base == "${base%%-*}-$ver-"* ]] && { echo "$f"; return 0; }
  done
  return 1
}

fetch_wheels() {
  local cache=$1 ver=$2 pin missing=() failed=0
  mkdir -p "$cache"
  while IFS= read -r pin; do wheel_of "$cache" "$pin" >/dev/null || missing+=("$pin"); done < <(pins)
  if ((${#missing[@]} == 0)); then
    mvp::log::skip "downloading wheels (all in $cache)"
    return 0
  fi
  mvp::log::step "downloading ${#missing[@]} wheels for Python $ver into $cache"
  local -a pids=()
  for pin in "${missing[@]}"; do
    download "$cache" "$ver" "$pin" >"$cache/.why-$pin" &
    pids+=($!)
    # Four at a time: the index, not this host, is the bottleneck.
    if ((${#pids[@]} >= 4)); then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
  done
  for pin in "${pids[@]}"; do wait "$pin" || failed=1; done
  if ((failed)); then
    local why
    why=$(cat "$cache"/.why-* | head -n 1)
    rm -f "$cache"/.why-*
    mvp::log::die "a wheel could not be had: $why; pin another version in helpers/trainer/requirements.lock or add it to helpers/offline/leaves-out.txt"
  fi
  rm -f "$cache"/.why-*
}

# stage_wheels CACHE STAGE: the repacked wheels in STAGE/wheels; the lines the
# repack prints (what it left out) in STAGE/pruned.txt.
stage_wheels() {
  local cache=$1 stage=$2 pin
  local -a wheels=()
  while IFS= read -r pin; do wheels+=("$(wheel_of "$cache" "$pin")"); done < <(pins)
  mkdir -p "$stage/wheels"
  mvp::log::step "repacking ${#wheels[@]} wheels (stored, stripped, pruned; RECORD rewritten)"
  "$PY" "$MVP_REPO/helpers/offline/repack_wheel.py" "$stage/wheels" "${wheels[@]}" >"$stage/pruned.txt"
}

# The tiny model and the data, made by 30 on a shared root of their own.
stage_model_data() {
  local stage=$1 shared=$1/shared
  mkdir -p "$shared"
  mvp::log::step "making the tiny model and the GSM8K-shaped data (30, MVP_MODEL_SOURCE=tiny)"
  MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=local SHARED_ROOT=$shared MVP_STATE_DIR=$stage/state \
    MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2 MVP_GSM8K_SOURCE=synthetic \
    "$MVP_REPO/scripts/30_prepare_data_and_model.sh" >/dev/null 2>"$stage/30.log" ||
    mvp::log::die "30_prepare_data_and_model.sh failed making the bundle's model and data; see $stage/30.log"
  rm -rf "$stage/state" "$shared/datasets/gsm8k_sft"
}

# pack STAGE OUT NAME PART_MIB XZ DIR...: OUT/NAME.tar.xz of DIRs (relative to
# STAGE), split into NAME.tar.xz.NN parts when larger than PART_MIB. xz runs
# its x86 branch filter first (machine code compresses a third better: Ray's
# wheel 25 -> 17 MB) and, from preset 6 on, one thread with a 192 MiB
# dictionary, so the libraries that repeat each other's code (Ray's raylet,
# gcs_server and _raylet.so) are matched against each other; unpacking needs
# that much memory.
pack() {
  local stage=$1 out=$2 name=$3 part=$4 preset=$5
  shift 5
  local -a xz=(xz --x86 "--lzma2=preset=$preset")
  [[ ${preset%e} -lt 6 ]] || xz=(xz -T1 --x86 "--lzma2=preset=$preset,dict=192MiB")
  tar -C "$stage" --owner=0 --group=0 --sort=name -cf - "$@" | "${xz[@]}" >"$out/$name.tar.xz"
  if (($(stat -c %s "$out/$name.tar.xz") > part * 1048576)); then
    split -b "${part}M" -d -a 2 "$out/$name.tar.xz" "$out/$name.tar.xz."
    rm "$out/$name.tar.xz"
  fi
}

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# manifest STAGE OUT VER: OUT/MANIFEST.txt; prints the bytes --max-mib
# limits (the parts and the checkout's tracked files).
manifest() {
  local stage=$1 out=$2 ver=$3 f total=0 size tracked
  {
    echo "# The offline GPU bundle for Python $ver, manylinux x86_64 (scripts/libexec/gpu_bundle.sh)"
    echo "# made $(date -u +%FT%TZ) from $(git -C "$MVP_REPO" rev-parse --short HEAD)"
    echo "# On the GPU host: mkdir mvp && cat mvp-checkout.tar.xz* | tar -xJ -C mvp && cd mvp && make gpu-smoke BUNDLE=<this directory>"
    echo "## parts (bytes, xz)"
    for f in "$out"/*.tar.xz*; do
      size=$(stat -c %s "$f")
      total=$((total + size))
      printf '%12d  %s\n' "$size" "${f##*/}"
    done
    printf '%12d  total (%s MiB)\n' "$total" "$(mib "$total")"
    # A device transfer copies the checkout's tracked files as they are, beside
    # the bundle; an air-gapped copy carries them in mvp-checkout.tar.xz. The
    # limit counts both, so it holds either way.
    tracked=$(git -C "$MVP_REPO" ls-tree -r -l HEAD | awk '{ s += $4 } END { print s + 0 }')
    printf '%12d  the checkout'"'"'s tracked files, uncompressed (%s MiB): a device transfer copies them beside the bundle\n' \
      "$tracked" "$(mib "$tracked")"
    printf '%12d  in all with the checkout (%s MiB): what --max-mib limits\n' "$((total + tracked))" \
      "$(mib $((total + tracked)))"
    echo "## wheels (bytes, repacked, uncompressed)"
    for f in "$stage"/wheels/*.whl; do printf '%12d  %s\n' "$(stat -c %s "$f")" "${f##*/}"; done
    echo "## left out of the wheels (helpers/offline/repack_wheel.py)"
    cat "$stage/pruned.txt"
    echo "## left out of the lock (helpers/offline/leaves-out.txt)"
    grep -v '^#' "$MVP_REPO/helpers/offline/leaves-out.txt"
    local name
    for name in ${HOST_HAS//,/ }; do printf '%-23s the GPU host has it (--host-has)\n' "$name"; done
  } >"$out/MANIFEST.txt"
  echo "$((total + tracked))"
}

# find_tools VERL: dies naming the first tool missing, a missing verl 0.9.1
# tree at VERL, or a pip that does not run; sets PY (the venv's Python, else
# python3) and PIP.
find_tools() {
  local verl=$1 tool
  for tool in git xz tar split sha256sum; do
    command -v "$tool" >/dev/null || mvp::log::die "$tool is missing; install it (Debian: apt-get install git xz-utils tar coreutils)"
  done
  [[ -f $verl/verl/__init__.py ]] || mvp::log::die "no verl 0.9.1 tree at $verl; run make setup (tests/fixtures/real_verl.sh makes it)"
  PY=$MVP_REPO/.venv/bin/python
  [[ -x $PY ]] || PY=python3
  PIP=("$PY" -m pip)
  "${PIP[@]}" --version >/dev/null 2>&1 || mvp::log::die "pip does not run with $PY; run make setup"
}

# stage_trees STAGE VERL: verl's tree at VERL (no __pycache__) in
# STAGE/verl-0.9.1, this checkout's committed files in STAGE/mvp.
stage_trees() {
  local stage=$1 verl=$2
  mkdir -p "$stage/verl-0.9.1" "$stage/mvp"
  tar -C "$verl" --exclude=__pycache__ -cf - . | tar -C "$stage/verl-0.9.1" -xf -
  git -C "$MVP_REPO" archive HEAD | tar -C "$stage/mvp" -xf -
}

# pack_parts STAGE OUT PART_MIB XZ: the bundle's four parts in OUT (see pack).
pack_parts() {
  local stage=$1 out=$2 part=$3 preset=$4
  mvp::log::step "compressing (xz -$preset) into parts of at most $part MiB"
  pack "$stage" "$out" wheels "$part" "$preset" wheels
  pack "$stage" "$out" model-data "$part" "$preset" shared
  pack "$stage" "$out" verl-0.9.1 "$part" "$preset" verl-0.9.1
  pack "$stage/mvp" "$out" mvp-checkout "$part" "$preset" .
}

# refuse_above BYTES MAX_MIB: dies when MAX_MIB is given and BYTES (the
# parts and the checkout) is more, naming the two ways down.
refuse_above() {
  local bytes=$1 max=$2
  [[ -n $max ]] && ((bytes > max * 1048576)) || return 0
  mvp::log::die "the bundle with the checkout is $(mib "$bytes") MiB, more than --max-mib $max (parts above); ways down: name what the GPU host already has (make gpu-bundle HOST_HAS=numpy,pandas,pyarrow) or leave more out in helpers/offline/leaves-out.txt"
}

main() {
  mvp::flags::parse "$@"
  local ver=${MVP_FLAG[--python]:-3.12} part=${MVP_FLAG[--part-mib]:-30} max=${MVP_FLAG[--max-mib]:-}
  local preset=${MVP_FLAG[--xz]:-9e}
  VER=$ver
  HOST_HAS=${MVP_FLAG[--host-has]:-}
  [[ $HOST_HAS =~ ^[A-Za-z0-9_.,-]*$ ]] || mvp::log::die "--host-has '$HOST_HAS' is not a comma list of distribution names, e.g. numpy,pandas,pyarrow"
  [[ $ver =~ ^3\.[0-9]{1,2}$ ]] || mvp::log::die "--python '$ver' is not a Python version such as 3.12"
  [[ $part =~ ^[1-9][0-9]*$ && $max =~ ^([1-9][0-9]*)?$ ]] || mvp::log::die "--part-mib and --max-mib take whole MiB, e.g. 30 and 64"
  [[ $preset =~ ^[0-9]e?$ ]] || mvp::log::die "--xz '$preset' is not an xz preset (0-9, optionally with e)"
  local tag=cp${ver/./}
  local out=${MVP_FLAG[--out]:-$MVP_REPO/.mvp/gpu-bundle/$tag}
  local cache=${MVP_FLAG[--wheel-cache]:-$MVP_REPO/.mvp/cache/gpu-bundle/wheels-$tag}
  local verl=$MVP_REPO/.mvp/cache/verl-0.9.1
  find_tools "$verl"
  local start=$SECONDS stage work
  work=$(mktemp -d "${TMPDIR:-/tmp}/mvp-gpu-bundle.XXXXXX")
  # shellcheck disable=SC2064  # the directory is known now
  trap "rm -rf '$work'" EXIT
  stage=$work/stage
  mkdir -p "$stage" "$work/out"
  fetch_wheels "$cache" "$ver"
  stage_wheels "$cache" "$stage"
  stage_model_data "$stage"
  stage_trees "$stage" "$verl"
  pack_parts "$stage" "$work/out" "$part" "$preset"
  local total
  total=$(manifest "$stage" "$work/out" "$ver")
  (cd "$work/out" && sha256sum -- *.tar.xz* >SHA256SUMS)
  sed -n '/^## parts/,/^## wheels/p' "$work/out/MANIFEST.txt" | sed '1d;$d' >&2
  refuse_above "$total" "$max"
  rm -rf "$out"
  mkdir -p "${out%/*}"
  mv "$work/out" "$out"
  mvp::log::info "bundle for Python $ver: $out ($((total / 1024)) KiB with the checkout, $((SECONDS - start)) s); MANIFEST.txt says what is in it and what was left out"
  echo "$out"
}

# Sourced (tests/unit/gpu_smoke.bats reaches refuse_above without building a bundle), it only defines.
[[ ${BASH_SOURCE[0]} != "$0" ]] || main "$@"
