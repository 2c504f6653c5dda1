# shellcheck shell=bash
# The runbook's shared library, sourced by every numbered script. It only
# sources the files of one concern each (all functions under mvp::) and
# defines mvp::init, every script's first call:
#   log.sh     logging, errors, usage      run.sh     dry-run, waits, locks
#   config.sh  settings and precedence     helper.sh  where `python -m mvp` runs
#   ray.sh     `ray start` and Ray checks  submit.sh  submitting a JobSpec
#   steps.sh   the bring-up sequence       runtime_<name>.sh  the nodes (see docs/ARCHITECTURE.md)
#   kv.sh      key=value results a program reads (the output contract)

MVP_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MVP_DRY_RUN=${MVP_DRY_RUN:-0}
# cron gives PATH=/usr/bin:/bin; the tools we call also live in these.
PATH="$PATH:/usr/local/bin:/usr/sbin:/sbin"

for _mvp_lib in log kv run config helper ray submit steps; do
  # shellcheck source=log.sh
  source "$MVP_REPO/scripts/lib/$_mvp_lib.sh"
done
unset _mvp_lib

# mvp::init "$@": flags, then configuration (which sources the runtime).
mvp::init() {
  mvp::parse_flags "$@"
  mvp::config::load
  [[ ${MVP_QUIET_CONFIG:-0} == 1 ]] || mvp::info "config: $MVP_CONFIG_LOADED (runtime $MVP_RUNTIME, shared root $SHARED_ROOT)"
}
