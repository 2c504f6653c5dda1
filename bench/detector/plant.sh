#!/usr/bin/env bash
# plant.sh TREE FORK: a team's verl fork with planted regressions, for the
# detector's corpus (bench/detector/record.sh). FORK becomes a git repository
# of the verl source tree TREE (tag good) with one branch per kind, each ONE
# commit off good that changes verl in a way that raises no error. A
# benchmark fixture: the runbook itself never patches verl.
#
#   zeroed     GRPO's advantages times 0 (core_algos.compute_grpo_outcome_advantage)
#   flip       GRPO's advantages times -1: the model learns to lower its reward
#   backwards  the reward manager hands verl minus the reward function's score
#   slow       a sleep of SLOW_S seconds (default 3) once per training step
#   leak       LEAK_MB MiB (default 256) allocated and kept once per training step
#   nokl       the KL loss computed and logged, but no longer added to the policy loss
#
# Each edit is checked to have landed (a verl that moved its code fails here,
# not in a run that silently trained the good tree).
# Usage: bench/detector/plant.sh TREE FORK   (FORK must not exist)
set -Eeuo pipefail
tree=${1:?usage: plant.sh TREE FORK}
fork=${2:?usage: plant.sh TREE FORK}
[[ -f $tree/verl/trainer/ppo/core_algos.py ]] || { echo "ERROR: $tree is no verl source tree (no verl/trainer/ppo/core_algos.py)" >&2; exit 2; }
[[ ! -e $fork ]] || { echo "ERROR: $fork exists; give a new directory" >&2; exit 2; }
SLOW_S=${SLOW_S:-3} LEAK_MB=${LEAK_MB:-256}
core=verl/trainer/ppo/core_algos.py
naive=verl/experimental/reward_loop/reward_manager/naive.py
losses=verl/workers/utils/losses.py
# The lines of compute_grpo_outcome_advantage, for sed.
grpo='/^def compute_grpo_outcome_advantage(/,/^    return scores, scores$/'

cp -r "$tree" "$fork.tmp"
git=(git -C "$fork.tmp" -c user.name=plant -c user.email=plant@localhost -c commit.gpgsign=false)
"${git[@]}" init -q -b main
"${git[@]}" add -A
"${git[@]}" commit -qm "verl as released"
"${git[@]}" tag good

# plant KIND FILE SED_SCRIPT CHECK_REGEX SUBJECT: branch KIND off good, one commit.
plant() {
  local kind=$1 file=$2 script=$3 check=$4 subject=$5
  "${git[@]}" checkout -qb "$kind" good
  sed -i "$script" "$fork.tmp/$file"
  grep -qE "$check" "$fork.tmp/$file" || { echo "ERROR: plant $kind: the edit of $file did not land" >&2; exit 1; }
  "${git[@]}" commit -qam "$subject"
}
plant zeroed "$core" "$grpo"'s|^        scores = scores.unsqueeze(-1) \* response_mask$|& * 0|' \
  'response_mask \* 0$' "grpo: scale the advantages"
plant flip "$core" "$grpo"'s|^        scores = scores.unsqueeze(-1) \* response_mask$|& * -1|' \
  'response_mask \* -1$' "grpo: advantages against the group's best"
plant backwards "$naive" 's|^        reward = score$|        reward = -score|' \
  '^        reward = -score$' "reward: the manager's sign convention"
plant slow "$core" "$grpo s|^    scores = token_level_rewards.sum(dim=-1)\$|&; __import__('time').sleep($SLOW_S)|" \
  "sleep\\($SLOW_S\\)$" "grpo: wait for the rewards"
plant leak "$core" "$grpo s|^    scores = token_level_rewards.sum(dim=-1)\$|&; globals().setdefault('_KEPT', []).append(torch.ones($LEAK_MB << 18))|" \
  "_KEPT" "grpo: keep the step's rewards"
plant nokl "$losses" 's|^        policy_loss += kl_loss \* config.kl_loss_coef$|        kl_loss = kl_loss.detach()|' \
  '^        kl_loss = kl_loss.detach\(\)$' "losses: log the KL loss"
"${git[@]}" checkout -q main
mv "$fork.tmp" "$fork"
