# shellcheck shell=bash
# The runbook's shared library, sourced by every numbered script. It only
# sources the files of one concern each; a function of ray.sh is mvp::ray::…
# (every script's first call is mvp::config::init "$@"):
#   log.sh     logging, errors, ERR trap   run.sh     dry-run, waits, locks
#   retry.sh   downloads tried again with backoff (apt, mmdebstrap, pip)
#   flags.sh   the flag parser, --help     config.sh  settings and precedence
#   helper.sh  where `python -m mvp` runs  ray.sh     `ray start` and Ray checks
#   submit.sh  submitting a JobSpec        steps.sh   the bring-up sequence
#   kv.sh      key=value results a program reads (the output contract)
#   runtime_<name>.sh  the nodes, mvp::rt:: (sourced by config.sh; see docs/ARCHITECTURE.md)
# Executables (not sourced) live in scripts/libexec.

MVP_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MVP_DRY_RUN=${MVP_DRY_RUN:-0}
# cron gives PATH=/usr/bin:/bin; the tools we call also live in these.
PATH="$PATH:/usr/local/bin:/usr/sbin:/sbin"

for _mvp_lib in log kv run retry flags nodes config helper ray submit steps; do
  # shellcheck source=log.sh
  source "$MVP_REPO/scripts/lib/$_mvp_lib.sh"
done
unset _mvp_lib
