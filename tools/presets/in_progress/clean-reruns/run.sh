#!/usr/bin/env bash
# The clean reruns of the preset files, one phase after another, every phase resumable (tools/presets/run_queue.sh).
#
#   nohup setsid bash tools/presets/in_progress/clean-reruns/run.sh DATA_DIR [WORK] >/dev/null 2>&1 &
#
# WORK defaults to /work/runs/clean. Every package copy is the package at 8a8fbd5, the commit the queue started
# from on 2026-11-28. Presets whose clean file has shipped are skipped, on a machine without their runs too (a rerun
# would read the test set again).
here=$(cd "$(dirname "$0")" && pwd)
QUEUE_FILE="$here/queue.txt" PACKAGE_COMMIT=${PACKAGE_COMMIT:-8a8fbd5a8780183727189282df320bc8bf1dfc54} \
  SHIPPED=" fmcapsnet-fashion_mnist effcapsnet-mnist capsnet-mnist effcapsnet-mnist_rem effcapsnet-fashion_mnist " \
  exec bash "$here/../../run_queue.sh" "${1:?usage: run.sh DATA_DIR [WORK]}" "${2:-/work/runs/clean}"
