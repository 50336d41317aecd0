#!/usr/bin/env bash
# Short run A of issue 38's GLOM schedule search: AgreementGLOM on Fashion-MNIST, 3 epochs of
# contrastive pre-training + 3 of the classifier head (the recipe's one-cycle schedule per stage),
# batch 256, validation hold-out of 5,000 training images (the default; accuracy after every
# classifier epoch). The test set is evaluated once, at the end, and is not read to choose anything.
#
#   nohup setsid bash tools/presets/in_progress/agreementglom-fashion_mnist/run-a.sh DATA_DIR >/dev/null 2>&1 &
# (Finished 2026-11-27 06:53 UTC; kept as the record of run A: run-a-train.log, run-a-metrics.json.)
#
# Resumable: rerun the same command; train() continues after the newest checkpoint in WORK/run.
# WORK (default /work/runs/glom-fmnist-3+3) holds a snapshot of the package (pkg/), so edits to the
# working tree never reach a running job, and train.log.
set -uo pipefail
data=${1:?usage: run.sh DATA_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
work=${WORK:-/work/runs/glom-fmnist-3+3}
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
metrics = train("AgreementGLOM", "fashion_mnist", epochs=3, batch_size=256, data_dir=sys.argv[1], output="run", verbose=2, export=False)
print("validation accuracy per classifier epoch:", metrics["history"].get("val_accuracy"))
print("test accuracy (read once, at the end):", metrics["test_accuracy"])
PY
echo "exit $? $(date -u +%FT%TZ)" >> train.log
