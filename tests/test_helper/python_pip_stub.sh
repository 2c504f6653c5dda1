#!/usr/bin/env bash
# A stand-in for python3 and for a venv's python, for tests/unit/setup.bats:
# what 12_install_py_deps.sh asks of pip is recorded in $MVP_STUB_LOG, one
# line per call; nothing is downloaded or installed.
#   -m venv DIR                     makes DIR/bin/python (this stub)
#   -m pip install --dry-run --report R ... torch==V
#                                   writes pip's report of torch V as the place
#                                   given offers it: a CPU build (V+cpu) where the
#                                   place (pip, or --index-url/--find-links's value)
#                                   is in $MVP_STUB_CPU_AT; none (exit 1) where it is
#                                   in $MVP_STUB_NONE_AT; else the CUDA build
#   .../torch_build.py size         prints 4321 (MB)
#   .../no_cuda.py                  refuses (the venv of a CUDA build)
# Anything else runs the real python ($MVP_STUB_REAL_PYTHON).
printf -v line '%q ' python "$@"
printf '%s\n' "$line" >>"$MVP_STUB_LOG"
if [[ ${1:-} == -m && ${2:-} == venv ]]; then
  mkdir -p "$3/bin" && cp "${BASH_SOURCE[0]}" "$3/bin/python" && exit 0
fi
if [[ ${1:-} == */no_cuda.py ]]; then
  echo "ERROR: CUDA packages got into the stub venv" >&2
  exit 1
fi
if [[ ${1:-} == */torch_build.py && ${2:-} == size ]]; then
  echo 4321
  exit 0
fi
if [[ ${1:-} == -m && ${2:-} == pip ]]; then
  place=pip report="" spec="" dry=0
  args=("$@")
  for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
      --index-url|--find-links) place=${args[i + 1]} ;;
      --report) report=${args[i + 1]} ;;
      --dry-run) dry=1 ;;
      torch==*) spec=${args[i]} ;;
    esac
  done
  if ((dry)) && [[ -n $spec ]]; then
    [[ " ${MVP_STUB_NONE_AT:-} " == *" $place "* ]] && exit 1
    version=${spec#torch==} requires='["nvidia-cublas==13.1.1.3; platform_system == \"Linux\"", "filelock"]'
    [[ " ${MVP_STUB_CPU_AT:-} " == *" $place "* ]] && version+=+cpu requires='["filelock"]'
    printf '{"install": [{"metadata": {"name": "torch", "version": "%s", "requires_dist": %s}}]}\n' \
      "$version" "$requires" >"$report"
  fi
  exit 0
fi
exec "$MVP_STUB_REAL_PYTHON" "$@"
