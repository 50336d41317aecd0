#!/usr/bin/env bash
# Runs one `keras-capsules train` command as a resumable background job from a frozen copy of the package.
#
#   nohup setsid bash tools/presets/run_in_background.sh WORK -- keras-capsules train MODEL ... >/dev/null 2>&1 &
#
# WORK receives pkg/ (a snapshot of keras_capsules/ at the commit that started the job, so edits to the
# working tree never reach a running job; its commit in pkg/COMMIT) and the run folder run/ (checkpoints,
# metrics.json, model.keras, and train.log: the command, each epoch with its val_accuracy, then the test
# accuracy read once at the end; what make_preset.py reads). Rerun the same command after an interruption: training continues after the newest checkpoint.
# The command runs at nice 19 with the repository's .venv, with `--output run` added, and its scheduler group at
# nice 19 too when this script leads its session (session_priority.sh says why), and with TensorFlow's pooling
# CPU allocator (TF_CPU_ALLOCATOR_USE_BFC=true unless set): with oneDNN off, TensorFlow allocates through malloc, and
# glibc maps each large tensor anew, so a ConsensusCapsNet MNIST step spent a third of its time in page faults.
set -uo pipefail
export TF_CPU_ALLOCATOR_USE_BFC=${TF_CPU_ALLOCATOR_USE_BFC:-true}
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
. "$here/session_priority.sh" && lower_session_priority
echo "start $(date -u +%FT%TZ) from $(cat pkg/COMMIT): keras-capsules $*" >> run/train.log
PYTHONPATH="$work/pkg" nice -n 19 "$repo/.venv/bin/python" -u -m keras_capsules.cli "$@" --output run >> run/train.log 2>&1
echo "exit $? $(date -u +%FT%TZ)" >> run/train.log
