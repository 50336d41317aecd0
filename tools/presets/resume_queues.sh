#!/usr/bin/env bash
# Every training queue still open, one after another, each resumable: what a working session starts first.
#
#   nohup setsid bash tools/presets/resume_queues.sh DATA_DIR >/dev/null 2>&1 &
#
# The inner-consensus MNIST queue (in_progress/inner-consensus-mnist/: the LSTM run), then the clean reruns' queue
# (in_progress/clean-reruns/: every preset shipped, so it skips them all), then the adversarial table on the full test
# sets for the presets already final (tools/results/adversarial_full.sh, log WORK's sibling runs/adversarial/full.log). Each queue skips what it
# has finished and resumes the rest after its newest checkpoint (a committed compact checkpoint on a new
# machine); a queue that stops on a failure stops this script too. The queues' processes end with the session
# that started them: rerun the same command in the next one.
set -uo pipefail
data=${1:?usage: resume_queues.sh DATA_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/session_priority.sh" && lower_session_priority
bash "$here/in_progress/inner-consensus-mnist/run.sh" "$data" && bash "$here/in_progress/clean-reruns/run.sh" "$data" &&
  bash "$here/../results/adversarial_full.sh" "$data"
