#!/usr/bin/env bash
# Accuracy under rotation, scale, shear and translation of every MNIST preset and the matched CNN baseline,
# on the same transformed copies of the full MNIST test set (seed 0), for docs/results.md.
#
#   bash tools/results/robustness_mnist.sh DATA_DIR [MODEL ...]
#
# Writes docs/results/robustness-mnist/<model>-<preset>.json (one per model, skipped when present) and
# redraws docs/results/robustness-mnist.png from every JSON there, then rewrites the pages' figures from them
# (tools/docs_figures.py). Inference only, resumable per model.
set -euo pipefail
data=${1:?usage: robustness_mnist.sh DATA_DIR [MODEL ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out="$repo/docs/results/robustness-mnist"
mkdir -p "$out"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(EffCapsNet/mnist EffCapsNet/mnist_rem CapsNet/mnist BaselineCNN/mnist)
for model in "${models[@]}"; do
  file="$out/$(echo "$model" | tr '[:upper:]/' '[:lower:]-').json"
  [ -f "$file" ] && { echo "have $file"; continue; }
  echo "$(date -u +%FT%TZ) $model"
  keras-capsules robustness "$model" --dataset mnist --data-dir "$data" --json "$file.part"
  mv "$file.part" "$file"
done
python - "$out" <<'PY'
import glob, json, os, sys
from keras_capsules.evaluation.robustness import RobustnessResult, plot_comparison
folder = sys.argv[1]
results = [RobustnessResult.from_dict(json.load(open(p))) for p in sorted(glob.glob(os.path.join(folder, "*.json")))]
plot_comparison(results, folder + ".png")
print("plot:", folder + ".png")
PY
# The table and findings of docs/results.md (and the README's summary) are written from these JSON files.
python "$repo/tools/docs_figures.py"
