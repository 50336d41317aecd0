#!/usr/bin/env bash
# Ships one finished run of the queue as a preset: bash make_preset.sh ROUTER DATA_DIR [make_preset.py options, e.g. --train-seconds S]   (ROUTER: kernel | lstm)
# Follows mnist-em and mnist-dynamic: make_preset.py measures the shipped file on the full MNIST test set and on
# mnist_sample, writes the card's entry and the training log's header; then run tools/presets/write_cards.py and
# update docs/results.md and the changelog by hand. WORK defaults to /work/runs/inner-consensus-mnist.
set -euo pipefail
router=${1:?usage: make_preset.sh kernel|lstm DATA_DIR}
data=${2:?usage: make_preset.sh kernel|lstm DATA_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
run=${WORK:-/work/runs/inner-consensus-mnist}/consensus-mnist-$router/run
case $router in
  kernel) what="similarity (kernel) routing: a spectral-mixture kernel scores each vote against the others"
          paper="1.0 %" recipe="default" ;;
  lstm) what="connectionist (LSTM) routing: a shared LSTM cell reads each vote's agreement with the others"
        paper="0.53 %" recipe="lstm" ;;
  *) echo "make_preset.sh: ROUTER must be kernel or lstm, got '$router'" >&2; exit 2 ;;
esac
[ -f "$run/train.log" ] || { echo "make_preset.sh: no finished run at $run" >&2; exit 1; }
cd "$root"
python tools/presets/make_preset.py "$run" --model ConsensusCapsNet --name "mnist-$router" \
  --kwargs "{\"router\": \"$router\"}" \
  --dataset mnist --data-dir "$data" --subset-dataset mnist_sample \
  --citation-file "$here/faria.bib" \
  --description "ConsensusCapsNet, the network of the inner-consensus paper (Faria, 2019), with $what, in all three capsule layers, 3 iterations; classifying MNIST digits." \
  --limitations "A reproduction of the paper's MNIST row after 12 epochs, not the paper's 100; not a competitive digit classifier (the matched CNN and Efficient-CapsNet presets are more accurate). MNIST-style digits: 28x28 grey-scale, centred, white on black, scaled to [0, 1]." \
  --procedure "The library's $recipe recipe for ConsensusCapsNet on MNIST: Adam 3e-3 with the learning rate x0.9 per epoch, batch 64, Sabour's 2-pixel shifts, softmax cross-entropy on the class logits (the paper's code), 12 epochs on 55,000 training images (5,000 held out for validation), at nice 19 on 2 CPU cores, resumed from checkpoints across sessions and machines (the training log lists each start)." \
  --test-informed no \
  --decisions "none read a test score: the 12-epoch schedule was fixed before the first run, the validation hold-out was read only to see that a run was not broken, the last epoch ships, and the test set was read once at the end." \
  --notes "The paper's $router routing after 100 epochs: $paper test error. Target >= 99.0 %." "${@:3}"
