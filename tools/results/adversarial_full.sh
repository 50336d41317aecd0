#!/usr/bin/env bash
# docs/results.md's adversarial table on the full test sets, 1,000 images at a time, each slice's record kept
# (tools/results/adversarial.py --slice): rerun the same command after an interruption and it goes on after the
# last slice written. tools/presets/resume_queues.sh runs it after the training queues.
#
#   nohup setsid bash tools/results/adversarial_full.sh DATA_DIR [LOG] >/dev/null 2>&1 &
#
# Only presets whose weights are final (EffCapsNet/fashion_mnist since its clean rerun shipped; its records made
# from the earlier file were deleted). A model in CROSS_ENTROPY is attacked through the cross-entropy right after
# its own loss.
# Each writes the records into docs/results/adversarial/ and the table into docs/results.md, for a session to commit.
set -uo pipefail
data=$(cd "${1:?usage: adversarial_full.sh DATA_DIR [LOG]}" && pwd)
log=${2:-/work/runs/adversarial/full.log}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tools/presets/session_priority.sh" && lower_session_priority
# Every MNIST and Fashion-MNIST preset whose weights are final, attacked with its own training loss; cheapest
# first (seconds per 1,000 images, both attacks with PGD per epsilon, 2-core EPYC: the CNN and the Efficient- and
# FM-CapsNets 120-140, dynamic 240, GLOM and EM 700, CapsNet 1,050, kernel and LSTM about 1,400; PGD, now
# cumulative over the epsilons, attacks only the images still standing, about half of those), so that the most
# rows are whole if the run stops. PGD's first slices, measured per epsilon, are measured again.
PRESETS=(
  BaselineCNN/mnist EffCapsNet/mnist EffCapsNet/mnist_rem EffCapsNet/fashion_mnist FMCapsNet/fashion_mnist
  ConsensusCapsNet/mnist-dynamic AgreementGLOM/fashion_mnist ConsensusCapsNet/mnist-em CapsNet/mnist
  ConsensusCapsNet/mnist-kernel ConsensusCapsNet/mnist-lstm
)
# Those trained with a margin or spread loss, attacked through a cross-entropy too (the table's --loss rows).
CROSS_ENTROPY=(
  CapsNet/mnist ConsensusCapsNet/mnist-dynamic ConsensusCapsNet/mnist-em EffCapsNet/mnist EffCapsNet/mnist_rem
  EffCapsNet/fashion_mnist FMCapsNet/fashion_mnist
)
# Images per gradient call: planned by the library from the memory available when each model starts (up to 256;
# kernel and LSTM routing keep about a quarter of a GB an image for the backward pass, at the same time per image).
mkdir -p "$(dirname "$log")"
cd "$repo" || exit 1
echo "$(date -u +%FT%TZ) start (package $(git rev-parse --short HEAD))" >> "$log"
# One process per model and loss, so that one model's failure (logged) does not stop the others'.
attack() {  # MODEL [--loss cross_entropy]
  "$repo/.venv/bin/python" tools/results/adversarial.py "$data" --slice 1000 --models "$1" "${@:2}" >> "$log" 2>&1 \
    || { echo "$(date -u +%FT%TZ) failed: $*" >> "$log"; status=1; }
}
status=0
for model in "${PRESETS[@]}"; do
  attack "$model"
  [[ " ${CROSS_ENTROPY[*]} " == *" $model "* ]] && attack "$model" --loss cross_entropy
done
echo "$(date -u +%FT%TZ) end (exit $status)" >> "$log"
exit $status
