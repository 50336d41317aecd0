#!/usr/bin/env bash
# Trains the preset models one after another with `keras-capsules train`, each resumable.
#
#   bash benchmarks/presets/train_presets.sh DATA_DIR RUNS_DIR [PRESET ...]
#
# DATA_DIR holds mnist/ and fashion-mnist/ (the standard IDX files); RUNS_DIR receives one folder per
# preset (checkpoints/, metrics.json, model.keras, train.log). Killing the script loses at most the
# unfinished epoch: run the same command again and every run continues from its last checkpoint;
# finished runs (metrics.json present) are skipped. The commands below are the ones recorded in the
# preset registry (keras_capsules/presets/registry.json). Set PYTHONPATH to a fixed copy of the
# package to train from a stable snapshot while the working tree changes.
set -uo pipefail
data=${1:?usage: train_presets.sh DATA_DIR RUNS_DIR [PRESET ...]}
runs=${2:?usage: train_presets.sh DATA_DIR RUNS_DIR [PRESET ...]}
shift 2
# Budgets on 2 CPU cores: CapsNet about 23 min per epoch (two sessions for 12 epochs, resumed from its
# checkpoint); AgreementGLOM about 40 min per contrastive pre-training epoch at batch 256 (two views),
# so 2 epochs per stage fit its 2-hour budget (batch 800, the recipe's, needs more than 15 GB).
declare -A COMMANDS=(
  [effcapsnet-mnist]="keras-capsules train EffCapsNet --dataset mnist --epochs 40 --lr-decay 0.93"
  [effcapsnet-fashion_mnist]="keras-capsules train EffCapsNet --dataset fashion_mnist --epochs 40 --lr-decay 0.93 --augmentation fashion_mnist_shift2_flip"
  [fmcapsnet-fashion_mnist]="keras-capsules train FMCapsNet --dataset fashion_mnist --recipe light --epochs 30 --lr-decay 0.92"
  [capsnet-mnist]="keras-capsules train CapsNet --dataset mnist --epochs 12"
  [effcapsnet-mnist_rem]="keras-capsules train EffCapsNet --dataset mnist --recipe rem --epochs 30 --lr-decay 0.97"
  [agreementglom-fashion_mnist]="keras-capsules train AgreementGLOM --dataset fashion_mnist --epochs 2 --batch-size 256"
  [fmcapsnet-fashion_mnist-dr3]="keras-capsules train FMCapsNet --dataset fashion_mnist --recipe light --epochs 30 --lr-decay 0.92 --model-arg \"router={'name': 'dynamic', 'use_bias': False}\" --routing-iterations 3"
)
ORDER=(effcapsnet-mnist effcapsnet-fashion_mnist fmcapsnet-fashion_mnist fmcapsnet-fashion_mnist-dr3 capsnet-mnist effcapsnet-mnist_rem agreementglom-fashion_mnist)
[ "$#" -gt 0 ] && selected=("$@") || selected=("${ORDER[@]}")
for preset in "${selected[@]}"; do
  command=${COMMANDS[$preset]:?unknown preset $preset}
  out="$runs/$preset"
  if [ -f "$out/metrics.json" ]; then
    echo "$preset: finished ($out/metrics.json)"
    continue
  fi
  mkdir -p "$out"
  echo "$(date -u +%FT%TZ) $preset: $command --data-dir DATA_DIR --output $out" | tee -a "$out/train.log"
  eval "$command --data-dir \"\$data\" --output \"\$out\"" >> "$out/train.log" 2>&1 || { echo "$preset: failed, see $out/train.log"; exit 1; }
done
