#!/usr/bin/env bash
# ConsensusCapsNet on MNIST with the dynamic, EM, kernel and LSTM routers, one run after another, each resumable
# (tools/presets/run_queue.sh; README.md beside this file gives the rules fixed before the runs).
#
#   nohup setsid bash tools/presets/in_progress/inner-consensus-mnist/run.sh DATA_DIR [WORK] >/dev/null 2>&1 &
#
# WORK defaults to /work/runs/inner-consensus-mnist.
here=$(cd "$(dirname "$0")" && pwd)
QUEUE_FILE="$here/queue.txt" exec bash "$here/../../run_queue.sh" "${1:?usage: run.sh DATA_DIR [WORK]}" \
  "${2:-/work/runs/inner-consensus-mnist}"
