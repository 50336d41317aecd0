#!/usr/bin/env bash
# Ships the finished EffCapsNet fashion_mnist clean rerun as the preset: bash make_preset_fashion_mnist.sh DATA_DIR
# make_preset.py writes the float32 file from the run's model.keras, measures it on the full Fashion-MNIST test
# set and its first 1,000 images, and rewrites the registry record (the earlier record's texts, the protocol's
# decisions); a second pass adds the notes, which name the measured accuracy against the 93.3 % target. Then, by
# hand (as mnist_rem's shipping commit did): tools/presets/write_cards.py; the training log's new top section
# (its per-epoch table: tools/presets/epoch_table.py RUN/metrics.json);
# the changelog row with the count of changed test predictions; `SHIPPED` in run.sh (new file + mv: the queue may
# be reading it); the adversarial records of the earlier file deleted and the first slices measured again
# (tools/results/adversarial.py DATA_DIR --limit 1000 --slice 1000 --models EffCapsNet/fashion_mnist, then the
# same with --loss cross_entropy), and the preset added to adversarial_full.sh (new file + mv).
# WORK defaults to /work/runs/clean.
set -euo pipefail
data=${1:?usage: make_preset_fashion_mnist.sh DATA_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
run=${WORK:-/work/runs/clean}/effcapsnet-fashion_mnist/run
[ -f "$run/model.keras" ] && [ -f "$run/metrics.json" ] || { echo "make_preset_fashion_mnist.sh: no finished run at $run" >&2; exit 1; }
cd "$root"
citation=$(mktemp) && trap 'rm -f "$citation"' EXIT
python -c 'import sys; from keras_capsules import presets; print(presets.get("EffCapsNet", "fashion_mnist").citation)' > "$citation"
ship() {  # NOTES [make_preset.py options]
  local notes=$1 && shift
  python tools/presets/make_preset.py "$run" --model EffCapsNet --name fashion_mnist \
    --kwargs '{"variant": "mnist", "reconstruction": true}' \
    --dataset fashion_mnist --data-dir "$data" --subset-dataset fashion_mnist --storage float32 \
    --citation-file "$citation" \
    --description "Efficient-CapsNet (Mazzia, Salvetti & Chiaberge, Sci. Rep. 2021): depthwise primary capsules, self-attention routing and the reconstruction decoder, classifying Fashion-MNIST clothing images." \
    --limitations "Fashion-MNIST-style product images: 28x28 grey-scale, centred on black, scaled to [0, 1]. Photographs of clothing, colour images or other sizes are outside its training distribution." \
    --procedure "The Efficient-CapsNet recipe's full schedule: 150 epochs, Adam 5e-4 with the learning rate x0.97 per epoch (floor 5e-5), batch 16, margin loss + 0.392 x MSE reconstruction, with REM's Fashion-MNIST augmentation (random 2-pixel translation and horizontal flip), on 55,000 training images (5,000 held out for validation, seed 0): one run fixed before it started, under the validation protocol (the last epoch ships, the test set read once at the end), resumed from its checkpoints across sessions. Retrained under the protocol on $(date -u +%F) (the file before it shipped because its test score beat the earlier file's)." \
    --test-informed no \
    --decisions "none read a test score: the 150-epoch schedule was fixed before the run, the validation hold-out was read only for the run's log, the last epoch ships, and the test set was read once at the end." \
    --notes "$notes" "$@"
}
ship "Target >= 93.3 %. REM's table: 93.31 %."
measured=$(python -c 'from keras_capsules import presets; print(presets.get("EffCapsNet", "fashion_mnist").test_accuracy)')
verdict=$(python -c "a = $measured; print(f'met ({100 * a:.2f} %)' if a >= 0.933 else f'missed ({100 * a:.2f} %, {round((0.933 - a) * 10000)} test images short)')")
ship "Target >= 93.3 %: $verdict. REM's table: 93.31 %. The earlier, test-informed file measured 93.17 %." --skip-export
