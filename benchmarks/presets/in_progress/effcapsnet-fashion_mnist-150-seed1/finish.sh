#!/usr/bin/env bash
# Once run.sh has trained all 150 epochs (runs/effcaps-fmnist-150-seed1/train.log ends with "exit 0"): measures the
# seed-1 run through EffCapsNet(weights="fashion_mnist") on the full test set and applies the rule fixed before the
# run started (README.md here). Either way the card of the file that stays shipped records both seeds and their
# mean; the registry record and regenerated cards (and, when shipped, the new file and the kept log) are left in the
# working tree to commit. Prints the result (also into runs/effcaps-fmnist-150-seed1/finish.txt).
#
#   bash benchmarks/presets/in_progress/effcapsnet-fashion_mnist-150-seed1/finish.sh DATA_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
data=$(cd "${1:-${KERAS_CAPSULES_DATA:?usage: finish.sh DATA_DIR}}" && pwd)
work="$repo/runs/effcaps-fmnist-150-seed1"
# Seconds the training process spent stopped (SIGSTOP) inside epochs, counted in their progress-bar times:
# 1,230 s in epoch 12 (2026-11-25 23:09:50-23:30:20 UTC); 80 s in epoch 29 or 30 (2026-11-26 01:34:22-01:35:42 UTC);
# 770 s in epoch 53 (2026-11-26 04:43:52-04:48:58, 04:49:06-04:49:52 and 04:50:00-04:56:58 UTC);
# 1,542 s in epoch 121 (2026-11-26 12:49:05-13:14:47 UTC).
PAUSED_SECONDS=3622
tail -n 1 "$work/train.log" | grep -q "exit 0" || { echo "finish.sh: the run has not finished (see the tail of $work/train.log)"; exit 1; }
cp "$work/train.log" "$work/out/train.log"
bash "$here/save.sh"  # the log reduced to one line per epoch, into $here/train.log
cd "$repo"
. .venv/bin/activate
seed0_notes=$(python -c "import json; print(next(r['notes'] for r in json.load(open('keras_capsules/presets/registry.json')) if (r['model'], r['name']) == ('EffCapsNet', 'fashion_mnist')))")
notes="The Efficient-CapsNet recipe's full schedule: 150 epochs, Adam 5e-4 with the learning rate x0.97 per epoch (floor \
5e-5), batch 16, margin loss + 0.392 x MSE reconstruction, with REM's Fashion-MNIST augmentation (random 2-pixel \
translation and horizontal flip; EscVM's code has no Fashion-MNIST pipeline). REM's table: 93.31 %. This file is the \
second run of that schedule, seed 1, with the package of commit $(cat "$here/COMMIT") (the first run's, seed 0, \
measured 93.17 % and shipped before it); trained from scratch across several working sessions whose machines did not \
survive between them, each resuming from the checkpoint (weights and optimizer state) the previous one committed; no \
evaluation on the test set before the last epoch. SEED_SENTENCE The training time above sums the epochs' \
progress-bar times, less the time the process was stopped; the cores were partly shared with other work. Earlier attempts: 40 epochs at x0.93 measured \
93.08 %; continuing that file for 50 epochs at the floor rate measured 92.87 %; two starts of the 150-epoch schedule \
were lost with their machines. The run's log, one line per epoch, is benchmarks/presets/logs/effcapsnet-fashion_mnist.log \
in the source repository (seed 0's: effcapsnet-fashion_mnist-seed0.log)."
python benchmarks/presets/make_preset.py "$work/out" --model EffCapsNet --name fashion_mnist \
  --kwargs '{"variant": "mnist", "reconstruction": true}' --dataset fashion_mnist --data-dir "$data" \
  --notes "$notes" | tee "$work/finish.txt"
python - "$work/finish.txt" "$seed0_notes" "$here/train.log" "$PAUSED_SECONDS" <<'PY'
import json, re, shutil, subprocess, sys
path = "keras_capsules/presets/registry.json"
seed0 = 0.9317
records = json.load(open(path))
record = next(r for r in records if (r["model"], r["name"]) == ("EffCapsNet", "fashion_mnist"))
seed1 = record["test_accuracy"]
mean = (seed0 + seed1) / 2
both = f"The two seeds measure {100 * seed0:.2f} % (seed 0) and {100 * seed1:.2f} % (seed 1), mean {100 * mean:.2f} %"
if seed1 > seed0:
    record["train_seconds"] -= float(sys.argv[4])  # the pauses are not training
    if seed1 >= 0.933:
        target = "Target >= 93.3 %: met by this file, the better of the two seeds on the test set; a fresh run of the recipe is better expected near the mean."
    else:
        target = f"Target >= 93.3 %: missed by {round(10000 * (0.933 - seed1))} test images."
    record["notes"] = record["notes"].replace("SEED_SENTENCE", f"{both}; this file replaced seed 0's under a rule fixed before the run started (ship iff > 93.17 %). {target}")
    outcome = f"RULE: {seed1:.4f} > {seed0}: shipped. {target}"
    subprocess.run(["git", "mv", "-f", "benchmarks/presets/logs/effcapsnet-fashion_mnist.log", "benchmarks/presets/logs/effcapsnet-fashion_mnist-seed0.log"], check=True)
    shutil.copy(sys.argv[3], "benchmarks/presets/logs/effcapsnet-fashion_mnist.log")
else:
    subprocess.run(["git", "checkout", "--", "keras_capsules/presets"], check=True)
    records = json.load(open(path))
    record = next(r for r in records if (r["model"], r["name"]) == ("EffCapsNet", "fashion_mnist"))
    shutil.copy(sys.argv[3], "benchmarks/presets/logs/effcapsnet-fashion_mnist-seed1.log")
    # Seed 0's notes, without the sentences that said the spread between seeds was not measured.
    kept = re.sub(r" This is one run of the schedule \(one seed\).*?unseen data\.", "", sys.argv[2])
    record["notes"] = kept + (
        f" A second run of the same schedule with seed 1 (same package and command, --seed 1) measured {100 * seed1:.2f} % "
        f"and was not shipped (rule fixed before it started: ship iff > 93.17 %); its log is benchmarks/presets/logs/effcapsnet-fashion_mnist-seed1.log. {both}."
    )
    outcome = f"RULE: {seed1:.4f} <= {seed0}: not shipped; seed 0's file is kept and its card records seed 1."
with open(path, "w") as handle:
    json.dump(records, handle, indent=2)
    handle.write("\n")
subprocess.run([sys.executable, "benchmarks/presets/write_cards.py"], check=True)
with open(sys.argv[1], "a") as log:
    print(outcome, file=log)
PY
tail -n 1 "$work/finish.txt"
