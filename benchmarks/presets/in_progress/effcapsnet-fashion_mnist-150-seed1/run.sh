#!/usr/bin/env bash
# Trains (or resumes) EffCapsNet on Fashion-MNIST with the Efficient-CapsNet recipe's full schedule, seed 1, across
# sessions whose machines do not survive: the committed checkpoint in this folder is the resume point.
#
#   bash benchmarks/presets/in_progress/effcapsnet-fashion_mnist-150-seed1/run.sh DATA_DIR   (or $KERAS_CAPSULES_DATA)
#
# Needs the repository's .venv (`pip install -e .`). Works in runs/effcaps-fmnist-150-seed1/ (git-ignored):
# the first call there unpacks the package snapshot that trains the whole run (git archive of COMMIT, so
# later library changes cannot alter it), copies in this folder's checkpoint and log, and resumes. Killing
# it loses at most the unfinished epoch; `save.sh` copies the newest checkpoint back here to be committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
data=${1:-${KERAS_CAPSULES_DATA:?usage: run.sh DATA_DIR (or set KERAS_CAPSULES_DATA)}}
data=$(cd "$data" && pwd)
commit=$(cat "$here/COMMIT")
work="$repo/runs/effcaps-fmnist-150-seed1"
mkdir -p "$work/out/checkpoints"
if [ ! -d "$work/pkg/keras_capsules" ]; then
  mkdir -p "$work/pkg"
  git -C "$repo" archive "$commit" keras_capsules | tar -x -C "$work/pkg"
fi
if [ -z "$(ls "$work/out/checkpoints")" ] && [ -d "$here/checkpoint" ]; then
  cp -r "$here"/checkpoint/epoch-* "$work/out/checkpoints/"
  cp "$here/train.log" "$work/train.log"
fi
. "$repo/.venv/bin/activate"
export PYTHONPATH="$work/pkg"
# `python -m` puts the working directory first on sys.path: run from $work, so the snapshot in pkg/ is the package
# imported, not the repository's (sessions 1-3 ran from the repository root; see README.md here).
cd "$work"
command="keras-capsules train EffCapsNet --dataset fashion_mnist --epochs 150 --augmentation fashion_mnist_shift2_flip --seed 1"
{
  echo "$(date -u +%FT%TZ) effcapsnet-fashion_mnist: $command --data-dir DATA_DIR --output $work/out (package of $commit)"
  set +e
  nice -n 5 python -m keras_capsules.cli ${command#keras-capsules } --data-dir "$data" --output "$work/out"
  rc=$?
  echo "$(date -u +%FT%TZ) exit $rc"
} >> "$work/train.log" 2>&1
