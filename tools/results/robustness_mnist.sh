#!/usr/bin/env bash
# Accuracy under rotation, scale, shear and translation of every MNIST preset and the matched CNN baseline,
# on the same transformed copies of the full MNIST test set (seed 0), for docs/results.md.
#
#   bash tools/results/robustness_mnist.sh DATA_DIR [MODEL ...]
#
# Writes docs/results/robustness-mnist/<model>-<preset>.json (one per model, skipped when present) and
# redraws docs/results/robustness-mnist.png from every JSON there, then prints the Markdown table of
# docs/results.md. Inference only, resumable per model.
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
# The table of docs/results.md: one row per model, one column per transform and magnitude (0 left out: untransformed).
columns = [(name, m) for name, rows in results[0].table.items() for m, _ in rows if m not in (0, 1)]
units = {"degrees": "°", "factor": "×", "pixels": " px"}
print("| model | untransformed | " + " | ".join(f"{name} {m:g}{units.get(results[0].units[name], '')}" for name, m in columns) + " |")
print("|---|---:|" + "---:|" * len(columns))
for result in results:
    cells = [dict(result.table[name])[m] for name, m in columns]
    print(f"| {result.model} | {100 * result.accuracy:.2f} | " + " | ".join(f"{100 * a:.1f}" for a in cells) + " |")
PY
