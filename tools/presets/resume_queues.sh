#!/usr/bin/env bash
# Every long job still open, one after another, each resumable: what a working session starts first.
#
#   nohup setsid bash tools/presets/resume_queues.sh DATA_DIR >/dev/null 2>&1 &
#
# No training queue is open now (the inner-consensus MNIST table and the clean reruns have shipped; their pages are
# in logs/queues/). A new queue goes in tools/presets/in_progress/NAME/ with its resumable run.sh, started here
# before the rest. Then the adversarial table on the full test sets (tools/results/adversarial_full.sh, log
# /work/runs/adversarial/full.log), which goes on after the last slice written. The jobs' processes end with the
# session that started them: rerun the same command in the next one.
set -uo pipefail
data=${1:?usage: resume_queues.sh DATA_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/session_priority.sh" && lower_session_priority
bash "$here/../results/adversarial_full.sh" "$data"
