#!/usr/bin/env bash
# plant.sh TREE FORK: a team's verl fork with planted regressions, for the
# detector's corpus (bench/detector/record.sh). FORK becomes a git repository
# of the verl source tree TREE (tag good, branch main) with one branch per
# planted kind, each ONE commit off good that changes verl in a way that
# raises no error (the kinds: tests/fixtures/verl_plants.sh). A benchmark
# fixture: the runbook itself never patches verl.
# Usage: bench/detector/plant.sh TREE FORK   (FORK must not exist)
set -Eeuo pipefail
# shellcheck source=tests/fixtures/verl_plants.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../tests/fixtures/verl_plants.sh"
tree=${1:?usage: plant.sh TREE FORK}
fork=${2:?usage: plant.sh TREE FORK}
[[ -f $tree/verl/trainer/ppo/core_algos.py ]] || { echo "ERROR: $tree is no verl source tree (no verl/trainer/ppo/core_algos.py)" >&2; exit 2; }
[[ ! -e $fork ]] || { echo "ERROR: $fork exists; give a new directory" >&2; exit 2; }

cp -r "$tree" "$fork.tmp"
git=(git -C "$fork.tmp" -c user.name=plant -c user.email=plant@localhost -c commit.gpgsign=false)
"${git[@]}" init -q -b main
"${git[@]}" add -A
"${git[@]}" commit -qm "verl as released"
"${git[@]}" tag good
declare -A subject=([zeroed]="grpo: scale the advantages" [flip]="grpo: advantages against the group's best"
  [backwards]="reward: the manager's sign convention" [slow]="grpo: wait for the rewards"
  [leak]="grpo: keep the step's rewards" [nokl]="losses: log the KL loss"
  [resume]="trainer: resume at the checkpoint's own step")
for kind in "${VERL_PLANT_KINDS[@]}"; do
  "${git[@]}" checkout -qb "$kind" good
  verl_plant "$kind" "$fork.tmp"
  "${git[@]}" commit -qam "${subject[$kind]}"
done
"${git[@]}" checkout -q main
mv "$fork.tmp" "$fork"
