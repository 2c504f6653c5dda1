#!/usr/bin/env bash
# What both compose CLI stubs do after recording their argv (`docker compose`
# and `docker-compose`): log the settings docker-compose.yaml interpolates,
# and, when MVP_STUB_COMPOSE_CONFIG names a file, write there what the real
# docker-compose (MVP_REAL_DOCKER_COMPOSE) makes of the same -f/-p arguments
# with `config`: the merged, interpolated file the engine would get.
env | grep -E '^MVP_(IMAGE|REPO_DIR|HOST_SHARED_DIR|VERL_DIR|DASHBOARD_PORT|COMPOSE_SUBNET|HEAD_IP|WORKER[0-9]+_IP)=' |
  sort | sed 's/^/  env /' >>"$MVP_STUB_LOG"
[[ ${1:-} == version ]] && exit 0
if [[ -n ${MVP_STUB_COMPOSE_CONFIG:-} ]]; then
  args=()
  while (($# > 1)) && [[ $1 == -f || $1 == -p ]]; do args+=("$1" "$2"); shift 2; done
  "$MVP_REAL_DOCKER_COMPOSE" "${args[@]}" config >"$MVP_STUB_COMPOSE_CONFIG" || exit
fi
exit 0
