#!/usr/bin/env bash
# Copies the newest checkpoint of runs/effcaps-fmnist-150-seed1 into this folder (replacing the one here) with
# the training log reduced to one line per epoch (what make_preset.py reads: the start lines, each
# "Epoch N/150" and the epoch's last progress-bar update), ready to commit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work="$(git -C "$here" rev-parse --show-toplevel)/runs/effcaps-fmnist-150-seed1"
newest=$(ls -d "$work"/out/checkpoints/epoch-* | sort | tail -n 1)
rm -rf "$here/checkpoint.new" && mkdir -p "$here/checkpoint.new"
cp -r "$newest" "$here/checkpoint.new/"
rm -rf "$here/checkpoint" && mv "$here/checkpoint.new" "$here/checkpoint"
python3 - "$work/train.log" "$here/train.log" <<'PY'
import re, sys
text = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1], errors="replace").read())
lines, last_bar = [], None
for line in re.split(r"[\r\n]+", text):
    if re.match(r"\d{4}-\d\d-\d\dT[0-9:]+Z ", line) or re.match(r"Epoch \d+/\d+$", line):
        if last_bar:
            lines.append(last_bar)
        last_bar = None
        lines.append(line)
    elif re.match(r"\d+/\d+ \S+ \d+s", line):
        last_bar = line.strip()
if last_bar:
    lines.append(last_bar)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
echo "saved $(basename "$newest") and $(grep -c '^Epoch' "$here/train.log") epoch lines"
