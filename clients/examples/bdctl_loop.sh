#!/bin/sh
# bdctl_loop.sh: a complete tuning loop in sh with bdctl: suggest -> report each
# step -> complete, until the study is done. Works with multi-fidelity studies
# (Hyperband's promotions resume from a checkpoint: here the last epoch reached).
#   export BANDITD_URL=http://127.0.0.1:8080 BANDITD_TOKEN_FILE=banditd.db.admin-token
#   bdctl_loop.sh $(bdctl create clients/examples/bdctl_study.yaml) [WORKER]
# The "training" is a toy learning curve of the study's lr and opt computed by
# awk over integer epochs: put your own training command in train_epoch.
set -u
study=$1 worker=${2:-sh-$$}
bdctl=${BDCTL:-bdctl}
ckpt=$(mktemp -d) && trap 'rm -rf "$ckpt"' EXIT

train_epoch() {   # train_epoch EPOCH: the validation loss after that epoch
  awk -v lr="$BD_P_lr" -v opt="$BD_P_opt" -v e="$1" 'BEGIN {
    d = log(lr) - log(opt == "adam" ? 0.003 : 0.03)
    printf "%.6f\n", 0.1 + d * d / 20 + 1 / (e + 1) }'
}

while :; do
  out=$($bdctl suggest "$study" --worker "$worker" --shell); rc=$?
  case $rc in
    0) eval "$out" ;;
    3) echo "study $study is done"; exit 0 ;;
    4) sleep 0.2; continue ;;    # nothing to do yet ("wait N ms")
    *) exit 1 ;;
  esac
  epoch=0   # a promotion continues the checkpoint of the trial it resumes
  [ -n "$BD_RESUME_FROM" ] && [ -f "$ckpt/$BD_RESUME_FROM" ] && epoch=$(cat "$ckpt/$BD_RESUME_FROM")
  stopped=0
  while [ "$epoch" -lt "$BD_BUDGET" ]; do
    epoch=$((epoch + 1))
    loss=$(train_epoch "$epoch")
    $bdctl report "$BD_TRIAL" "$epoch" "$loss" >/dev/null; rc=$?
    [ $rc -eq 3 ] && { stopped=1; break; }    # the scheduler stops this trial
    [ $rc -ne 0 ] && exit 1
  done
  echo "$epoch" > "$ckpt/$BD_TRIAL"
  [ $stopped -eq 1 ] || $bdctl complete "$BD_TRIAL" "$loss" || exit 1
  echo "trial $BD_TRIAL: budget $BD_BUDGET loss $loss"
done
