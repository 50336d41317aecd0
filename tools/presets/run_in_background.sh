#!/usr/bin/env bash
# Runs one `keras-capsules train` command as a resumable background job from a frozen copy of the package.
#
#   nohup setsid bash tools/presets/run_in_background.sh WORK -- keras-capsules train MODEL ... >/dev/null 2>&1 &
#
# WORK receives pkg/ (a snapshot of keras_capsules/ at the commit that started the job, so edits to the
# working tree never reach a running job; its commit in pkg/COMMIT) and the run folder run/ (checkpoints,
# metrics.json, model.keras, and train.log: the command, each epoch with its val_accuracy, then the test
# accuracy read once at the end; what make_preset.py reads). Rerun the same command after an interruption: training continues after the newest checkpoint.
# The command runs at nice 19 with the repository's .venv, with `--output run` added. Under `setsid` the job is
# its own scheduler autogroup (Linux, kernel.sched_autogroup_enabled=1), and a process's nice then ranks it only
# within its group: two groups share the CPUs equally whatever their nice. So the group's nice is set to 19 too
# (/proc/self/autogroup) when this script leads its session; without that a nice-19 job took over half the cores from a
# test run beside it.
set -uo pipefail
work=${1:?usage: run_in_background.sh WORK -- keras-capsules train ...}
shift
[ "${1:-}" = "--" ] && shift
[ "${1:-}" = "keras-capsules" ] || { echo "run_in_background.sh: expected '-- keras-capsules train ...', received: $*" >&2; exit 2; }
shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$work"
if [ ! -d "$work/pkg/keras_capsules" ]; then
  mkdir -p "$work/pkg" && (cd "$repo" && git archive HEAD keras_capsules) | tar -x -C "$work/pkg"
  (cd "$repo" && git rev-parse HEAD) > "$work/pkg/COMMIT"
fi
cd "$work" && mkdir -p run
[ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ] && [ -w /proc/self/autogroup ] && echo 19 > /proc/self/autogroup 2>/dev/null
echo "start $(date -u +%FT%TZ) from $(cat pkg/COMMIT): keras-capsules $*" >> run/train.log
PYTHONPATH="$work/pkg" nice -n 19 "$repo/.venv/bin/python" -u -m keras_capsules.cli "$@" --output run >> run/train.log 2>&1
echo "exit $? $(date -u +%FT%TZ)" >> run/train.log
