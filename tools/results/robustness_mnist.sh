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
# The table of docs/results.md: a row per transform and magnitude, a column per model (accuracy in %).
print("| transform | magnitude | " + " | ".join(f"`{r.model}`" for r in results) + " |")
print("|---|---:|" + "---:|" * len(results))
print("| none | | " + " | ".join(f"{100 * r.accuracy:.2f}" for r in results) + " |")
for name, rows in results[0].table.items():
    for magnitude, _ in rows:
        if magnitude in (0, 1):  # the untransformed images, the row above
            continue
        cells = [100 * dict(r.table[name])[magnitude] for r in results]
        print(f"| {name} | {magnitude:g} {results[0].units[name]} | " + " | ".join(f"{a:.1f}" for a in cells) + " |")
PY
