#!/usr/bin/env bash
# The clean reruns of issue 53 §3, one phase after another, every phase resumable.
#
#   nohup setsid bash tools/presets/in_progress/clean-reruns/run.sh DATA_DIR [WORK] >/dev/null 2>&1 &
#
# WORK (default /work/runs/clean) receives one folder per preset, each run by
# tools/presets/run_in_background.sh (nice 19, a frozen copy of the package in WORK/<preset>/pkg, the
# run in WORK/<preset>/run). Every package copy is the package at PACKAGE_COMMIT (8a8fbd5, the commit the
# queue started from on 2026-11-28), so later commits never reach a queued run, on any machine. Rerun the same command after an interruption: each run
# continues after its newest checkpoint, and finished phases are skipped. WORK/queue.log records every
# phase's start and end.
set -uo pipefail
data=$(cd "${1:?usage: run.sh DATA_DIR [WORK]}" && pwd)
work=${2:-/work/runs/clean}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
# preset|arguments of `keras-capsules train` (the rules in README.md fix them; a first phase reads no test split).
# EffCapsNet mnist_rem left the queue on 2026-11-28: it does not fit in the budget on this kind of machine (README.md).
QUEUE=(
  "fmcapsnet-fashion_mnist|train FMCapsNet --dataset fashion_mnist --recipe light --epochs 30 --lr-decay 0.92 --eval-on"
  "fmcapsnet-fashion_mnist|train FMCapsNet --dataset fashion_mnist --recipe light --epochs 60 --lr-decay 0.96"
  "effcapsnet-mnist|train EffCapsNet --dataset mnist --epochs 45 --lr-decay 0.93"
  "capsnet-mnist|train CapsNet --dataset mnist --epochs 12 --eval-on"
  "capsnet-mnist|train CapsNet --dataset mnist --epochs 24 --lr-decay 0.9 --lr-decay-steps 430"
)
PACKAGE_COMMIT=${PACKAGE_COMMIT:-8a8fbd5a8780183727189282df320bc8bf1dfc54}
# Presets whose clean file has shipped, or whose run has finished (its final weights, metrics and log committed
# beside this script): their phases are skipped, on a machine without their runs too (a rerun would read the
# test set again).
SHIPPED=" fmcapsnet-fashion_mnist effcapsnet-mnist capsnet-mnist "
mkdir -p "$work"
# Leading its session (started by setsid): the whole session's scheduler group to nice 19.
. "$repo/tools/presets/session_priority.sh" && lower_session_priority
for entry in "${QUEUE[@]}"; do
  preset=${entry%%|*}
  if [ ! -d "$work/$preset/pkg/keras_capsules" ]; then
    mkdir -p "$work/$preset/pkg" && (cd "$repo" && git archive "$PACKAGE_COMMIT" keras_capsules) | tar -x -C "$work/$preset/pkg"
    echo "$PACKAGE_COMMIT" > "$work/$preset/pkg/COMMIT"
  fi
done
newest_checkpoint() {
  ls "$1/run/checkpoints" 2>/dev/null | sed -n 's/^epoch-0*\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1
}
for entry in "${QUEUE[@]}"; do
  preset=${entry%%|*}
  arguments=${entry#*|}
  [[ "$SHIPPED" == *" $preset "* ]] && continue
  epochs=$(grep -o -- '--epochs [0-9]*' <<< "$arguments" | awk '{print $2}')
  done_epochs=$(newest_checkpoint "$work/$preset")
  if [[ "$arguments" == *"--eval-on" ]] && [ "${done_epochs:-0}" -gt "$epochs" ]; then
    continue  # a later phase of this run has taken over
  fi
  if [[ "$arguments" != *"--eval-on" ]] && [ "${done_epochs:-0}" -ge "$epochs" ]; then
    continue  # the final phase has finished: running it again would read the test set a second time
  fi
  echo "$(date -u +%FT%TZ) start $preset: $arguments" >> "$work/queue.log"
  # shellcheck disable=SC2086
  bash "$repo/tools/presets/run_in_background.sh" "$work/$preset" -- keras-capsules $arguments --data-dir "$data"
  status=$(tail -1 "$work/$preset/run/train.log" | awk '$1 == "exit" {print $2}')
  echo "$(date -u +%FT%TZ) end $preset (exit ${status:-?}): $arguments" >> "$work/queue.log"
  [ "${status:-1}" = 0 ] || { echo "$(date -u +%FT%TZ) queue stopped: $preset failed" >> "$work/queue.log"; exit 1; }
done
echo "$(date -u +%FT%TZ) queue finished" >> "$work/queue.log"
