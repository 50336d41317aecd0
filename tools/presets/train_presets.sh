#!/usr/bin/env bash
# Trains the preset models one after another with `keras-capsules train`, each resumable.
#
#   bash tools/presets/train_presets.sh DATA_DIR RUNS_DIR [PRESET ...]
#
# DATA_DIR holds mnist/ and fashion-mnist/ (the standard IDX files); RUNS_DIR receives one folder per
# preset (checkpoints/, metrics.json, model.keras, train.log). Killing the script loses at most the
# unfinished epoch: run the same command again and every run continues from its last checkpoint;
# finished runs (metrics.json with all the planned epochs) are skipped. A command of several phases
# ("A; B") trains A, then B resumes A's run in the same folder with B's recipe (more epochs, another
# schedule); a restart skips the phases whose epochs the newest checkpoint already holds. The commands below are the ones recorded in the
# preset registry (keras_capsules/presets/registry.json). Set PYTHONPATH to a fixed copy of the
# package to train from a stable snapshot while the working tree changes.
set -uo pipefail
data=${1:?usage: train_presets.sh DATA_DIR RUNS_DIR [PRESET ...]}
runs=${2:?usage: train_presets.sh DATA_DIR RUNS_DIR [PRESET ...]}
shift 2
# Budgets on 2 CPU cores: CapsNet about 5.5 min per epoch alone (12 epochs of the official schedule,
# then 12 with a per-epoch decay of 0.9, which the official one does not reach in 24 epochs); AgreementGLOM about 40 min per contrastive pre-training epoch at batch 256 (two views),
# so 2 epochs per stage fit its 2-hour budget (batch 800, the recipe's, needs more than 15 GB).
# Second phases restart the decay from a higher rate (lr0 x 0.96^epoch, by the global step): FMCapsNet
# and its DR(3) twin, 30 -> 60 epochs (the first 30 left the light network under-fitted, training
# accuracy ~ test accuracy). Efficient-CapsNet MNIST: 5 more epochs at the floor rate 5e-5. The shipped
# file's 5 epochs started a fresh Adam from the 40-epoch weights (registry command: --model-arg
# weights=mnist, when that name held the 40-epoch file), because its 40-epoch checkpoint predated the
# model format; here the second phase resumes the checkpoint, optimizer state included.
# Efficient-CapsNet Fashion-MNIST: the recipe's full 150-epoch schedule (an earlier file: 40 epochs at x0.93).
# The training logs behind every shipped preset are in tools/presets/logs/.
# Efficient-CapsNet REM: REM's recipe as REM runs it (learning rate x0.99 per epoch) for 200 epochs,
# about 80 s each; trained as 100 epochs, then continued to 200 (REM's code trains until 200 epochs pass
# without a validation-loss improvement; its configs name 100). An earlier file used --lr-decay 0.97 for
# 100 epochs: 54.0 % sparse, 99.57 % with q_11.
declare -A COMMANDS=(
  [effcapsnet-mnist]="keras-capsules train EffCapsNet --dataset mnist --epochs 40 --lr-decay 0.93; keras-capsules train EffCapsNet --dataset mnist --epochs 45 --learning-rate 5e-5 --lr-decay 0.9"
  [effcapsnet-fashion_mnist]="keras-capsules train EffCapsNet --dataset fashion_mnist --epochs 150 --augmentation fashion_mnist_shift2_flip"
  [fmcapsnet-fashion_mnist]="keras-capsules train FMCapsNet --dataset fashion_mnist --recipe light --epochs 30 --lr-decay 0.92; keras-capsules train FMCapsNet --dataset fashion_mnist --recipe light --epochs 60 --lr-decay 0.96"
  [capsnet-mnist]="keras-capsules train CapsNet --dataset mnist --epochs 12; keras-capsules train CapsNet --dataset mnist --epochs 24 --lr-decay 0.9 --lr-decay-steps 469"
  [effcapsnet-mnist_rem]="keras-capsules train EffCapsNet --dataset mnist --recipe rem --epochs 100; keras-capsules train EffCapsNet --dataset mnist --recipe rem --epochs 200"
  [agreementglom-fashion_mnist]="keras-capsules train AgreementGLOM --dataset fashion_mnist --epochs 2 --batch-size 256"
  [fmcapsnet-fashion_mnist-dr3]="keras-capsules train FMCapsNet --dataset fashion_mnist --recipe light --epochs 30 --lr-decay 0.92 --model-arg \"router={'name': 'dynamic', 'use_bias': False}\" --routing-iterations 3; keras-capsules train FMCapsNet --dataset fashion_mnist --recipe light --epochs 60 --lr-decay 0.96 --model-arg \"router={'name': 'dynamic', 'use_bias': False}\" --routing-iterations 3"
)
ORDER=(effcapsnet-mnist effcapsnet-fashion_mnist fmcapsnet-fashion_mnist fmcapsnet-fashion_mnist-dr3 capsnet-mnist effcapsnet-mnist_rem agreementglom-fashion_mnist)
[ "$#" -gt 0 ] && selected=("$@") || selected=("${ORDER[@]}")
# The epochs a run folder holds: of its metrics.json (finished) or of its newest plain checkpoint.
epochs_in() {
  python3 - "$1" "$2" <<'PY'
import json, os, re, sys
folder, kind = sys.argv[1], sys.argv[2]
if kind == "finished":
    try:
        print(json.load(open(os.path.join(folder, "metrics.json")))["epochs_completed"])
    except (OSError, ValueError, KeyError):
        print(0)
else:
    names = os.listdir(os.path.join(folder, "checkpoints")) if os.path.isdir(os.path.join(folder, "checkpoints")) else []
    print(max([int(m.group(1)) for m in map(re.compile(r"epoch-(\d+)$").match, names) if m] or [0]))
PY
}
for preset in "${selected[@]}"; do
  command=${COMMANDS[$preset]:?unknown preset $preset}
  out="$runs/$preset"
  IFS=';' read -ra phases <<< "$command"
  planned=$(grep -o -- '--epochs [0-9]*' <<< "${phases[-1]}" | awk '{print $2}')
  if [ -f "$out/metrics.json" ] && [ "$(epochs_in "$out" finished)" -ge "$planned" ]; then
    echo "$preset: finished ($out/metrics.json)"
    continue
  fi
  mkdir -p "$out"
  echo "$(date -u +%FT%TZ) $preset: $command --data-dir DATA_DIR --output $out" | tee -a "$out/train.log"
  for index in "${!phases[@]}"; do
    phase=$(sed 's/^ *//; s/ *$//' <<< "${phases[$index]}")
    phase_epochs=$(grep -o -- '--epochs [0-9]*' <<< "$phase" | awk '{print $2}')
    if [ "$index" -lt $(( ${#phases[@]} - 1 )) ] && [ "$(epochs_in "$out" checkpoint)" -ge "$phase_epochs" ]; then
      continue  # a later phase has taken over this run
    fi
    eval "$phase --data-dir \"\$data\" --output \"\$out\"" >> "$out/train.log" 2>&1 || { echo "$preset: failed, see $out/train.log"; exit 1; }
  done
done
