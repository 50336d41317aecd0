#!/usr/bin/env bash
# Once run.sh has trained all 150 epochs (runs/effcaps-fmnist-150/train.log ends with "exit 0"): measures the
# run through EffCapsNet(weights="fashion_mnist") on the full test set and applies the rule fixed before the
# run started (README.md here). Shipped (> 93.08 %): the new file, its registry record with the card notes
# below, and the regenerated cards are left in the working tree to commit. Not shipped: the shipped file and
# record are restored. Prints the result either way (also into runs/effcaps-fmnist-150/finish.txt).
#
#   bash benchmarks/presets/in_progress/effcapsnet-fashion_mnist-150/finish.sh DATA_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
data=$(cd "${1:-${KERAS_CAPSULES_DATA:?usage: finish.sh DATA_DIR}}" && pwd)
work="$repo/runs/effcaps-fmnist-150"
tail -n 1 "$work/train.log" | grep -q "exit 0" || { echo "finish.sh: the run has not finished (see the tail of $work/train.log)"; exit 1; }
cp "$work/train.log" "$work/out/train.log"
cd "$repo"
. .venv/bin/activate
notes="The Efficient-CapsNet recipe's full schedule: 150 epochs, Adam 5e-4 with the learning rate x0.97 per epoch (floor \
5e-5), batch 16, margin loss + 0.392 x MSE reconstruction, with REM's Fashion-MNIST augmentation (random 2-pixel \
translation and horizontal flip; EscVM's code has no Fashion-MNIST pipeline). TARGET_SENTENCE REM's table: 93.31 %. \
Trained from scratch across several working sessions whose machines did not survive between them, each resuming from \
the checkpoint (weights and optimizer state) the previous one committed, with the package of commit $(cat "$here/COMMIT") \
throughout; no evaluation on the test set before the last epoch. It replaced the earlier file (40 epochs at x0.93, \
93.08 %) under a rule fixed before the run started (ship iff > 93.08 %). The training time above sums the epochs' \
progress-bar times; the cores were partly shared with other work."
python benchmarks/presets/make_preset.py "$work/out" --model EffCapsNet --name fashion_mnist \
  --kwargs '{"variant": "mnist", "reconstruction": true}' --dataset fashion_mnist --data-dir "$data" \
  --notes "$notes" | tee "$work/finish.txt"
python - "$work/finish.txt" <<'PY'
import json, subprocess, sys
path = "keras_capsules/presets/registry.json"
records = json.load(open(path))
record = next(r for r in records if (r["model"], r["name"]) == ("EffCapsNet", "fashion_mnist"))
accuracy = record["test_accuracy"]
with open(sys.argv[1], "a") as log:
    if accuracy > 0.9308:
        gap = round(10000 * (0.933 - accuracy))
        sentence = "Target >= 93.3 %: met." if accuracy >= 0.933 else f"Target >= 93.3 %: missed by {gap} test images."
        record["notes"] = record["notes"].replace("TARGET_SENTENCE", sentence)
        with open(path, "w") as handle:
            json.dump(records, handle, indent=2)
            handle.write("\n")
        subprocess.run([sys.executable, "benchmarks/presets/write_cards.py"], check=True)
        print(f"RULE: {accuracy:.4f} > 0.9308: shipped. {sentence}", file=log)
    else:
        subprocess.run(["git", "checkout", "--", "keras_capsules/presets"], check=True)
        print(f"RULE: {accuracy:.4f} <= 0.9308: not shipped; the 93.08 % file and its record are restored.", file=log)
PY
tail -n 1 "$work/finish.txt"
