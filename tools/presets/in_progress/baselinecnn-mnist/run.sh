#!/usr/bin/env bash
# The matched CNN baseline of issue 38 §3: BaselineCNN(variant="matched") (161,824 parameters, exactly
# Efficient-CapsNet's) on MNIST with the recipe that copies the EffCapsNet mnist preset's (augmentation
# effcapsnet_mnist, batch 16, Adam 5e-4 x0.93 per epoch floored at 5e-5, 45 epochs), the default
# validation hold-out of 5,000 training images, and the test set read once at the end. No decision
# reads the test score; the file ships as the baseline whatever it measures.
#
#   nohup setsid bash tools/presets/in_progress/baselinecnn-mnist/run.sh DATA_DIR >/dev/null 2>&1 &
#
# Run it after the GLOM run A has finished (both are CPU-bound; one at a time keeps each run's training
# time meaningful). Resumable: rerun the same command. WORK (default /work/runs/baselinecnn-mnist) holds a
# snapshot of the package (pkg/) and train.log. Estimated from counted multiply-adds: about 1.7 h alone.
set -uo pipefail
data=${1:?usage: run.sh DATA_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
work=${WORK:-/work/runs/baselinecnn-mnist}
mkdir -p "$work"
if [ ! -d "$work/pkg/keras_capsules" ]; then
  mkdir -p "$work/pkg" && (cd "$repo" && git archive HEAD keras_capsules) | tar -x -C "$work/pkg"
  (cd "$repo" && git rev-parse HEAD) > "$work/pkg/COMMIT"
fi
cd "$work"
echo "start $(date -u +%FT%TZ) from $(cat pkg/COMMIT)" >> train.log
PYTHONPATH="$work/pkg" TF_CPP_MIN_LOG_LEVEL=2 nice -n 19 "$repo/.venv/bin/python" -u - "$data" >> train.log 2>&1 <<'PY'
import sys
from keras_capsules.training import train
metrics = train("BaselineCNN", "mnist", data_dir=sys.argv[1], output="run", verbose=2)
print("validation accuracy per epoch:", metrics["history"].get("val_accuracy"))
print("test accuracy (read once, at the end):", metrics["test_accuracy"])
PY
echo "exit $? $(date -u +%FT%TZ)" >> train.log
