#!/usr/bin/env bash
# Runs a queue of `keras-capsules train` phases one after another, every phase resumable.
#
#   QUEUE_FILE=... [PACKAGE_COMMIT=...] [SHIPPED=" a b "] nohup setsid bash tools/presets/run_queue.sh DATA_DIR WORK >/dev/null 2>&1 &
#
# QUEUE_FILE holds one phase a line, `preset|arguments of keras-capsules train` (# starts a comment). WORK receives
# one folder per preset, each run by tools/presets/run_in_background.sh (nice 19, a frozen copy of the package in
# WORK/<preset>/pkg, the run in WORK/<preset>/run). Every package copy is the package at PACKAGE_COMMIT (default:
# HEAD when the queue first starts, recorded in WORK/PACKAGE_COMMIT), so later commits never reach a queued run, on
# any machine; a phase written `preset@COMMIT|arguments` takes the package at COMMIT instead (a run that needs a
# later commit than the queue's). Rerun the same command after an interruption: each run continues after its newest checkpoint, and
# finished phases are skipped (a phase whose arguments end in --eval-on is finished once a later phase of its preset
# has taken over; the last phase once its epochs are done, since running it again would read the test set again).
# Presets named in SHIPPED are skipped. WORK/queue.log records every phase's start and end. A compact checkpoint
# committed beside QUEUE_FILE as checkpoint-<preset>/ (tools/presets/compact_checkpoint.py pack) is unpacked into
# WORK/<preset>/run/checkpoints when it is newer than WORK's newest (a new machine), with a line in the run's
# train.log saying so.
set -uo pipefail
data=$(cd "${1:?usage: run_queue.sh DATA_DIR WORK}" && pwd)
work=${2:?usage: run_queue.sh DATA_DIR WORK}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mapfile -t QUEUE < <(grep -v '^\s*\(#\|$\)' "${QUEUE_FILE:?QUEUE_FILE: the file of phases}")
SHIPPED=${SHIPPED:-}
mkdir -p "$work"
[ -f "$work/PACKAGE_COMMIT" ] || (cd "$repo" && git rev-parse "${PACKAGE_COMMIT:-HEAD}") > "$work/PACKAGE_COMMIT"
package_commit=$(cat "$work/PACKAGE_COMMIT")
# Leading its session (started by setsid): the whole session's scheduler group to nice 19.
. "$here/session_priority.sh" && lower_session_priority
phase_preset() { local name=${1%%|*}; echo "${name%%@*}"; }
phase_commit() { local name=${1%%|*}; [[ "$name" == *@* ]] && echo "${name#*@}" || echo "$package_commit"; }
for entry in "${QUEUE[@]}"; do
  preset=$(phase_preset "$entry")
  if [ ! -d "$work/$preset/pkg/keras_capsules" ]; then
    commit=$(cd "$repo" && git rev-parse "$(phase_commit "$entry")") || exit 1
    mkdir -p "$work/$preset/pkg" && (cd "$repo" && git archive "$commit" keras_capsules) | tar -x -C "$work/$preset/pkg"
    echo "$commit" > "$work/$preset/pkg/COMMIT"
  fi
done
newest_checkpoint() {
  ls "$1/run/checkpoints" 2>/dev/null | sed -n 's/^epoch-0*\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1
}
for entry in "${QUEUE[@]}"; do
  preset=$(phase_preset "$entry")
  arguments=${entry#*|}
  [[ "$SHIPPED" == *" $preset "* ]] && continue
  epochs=$(grep -o -- '--epochs [0-9]*' <<< "$arguments" | awk '{print $2}')
  done_epochs=$(newest_checkpoint "$work/$preset")
  compact="$(dirname "$QUEUE_FILE")/checkpoint-$preset"
  if [ -f "$compact/state.json" ]; then
    compact_epochs=$("$repo/.venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["epochs_completed"])' "$compact/state.json")
    if [ "$compact_epochs" -gt "${done_epochs:-0}" ]; then
      mkdir -p "$work/$preset/run/checkpoints"
      "$repo/.venv/bin/python" "$here/compact_checkpoint.py" unpack "$compact" "$work/$preset/run/checkpoints" > /dev/null 2>&1 || exit 1
      unpacked="$work/$preset/run/checkpoints/epoch-$(printf %04d "$compact_epochs")"
      how=$("$repo/.venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["compacted"])' "$unpacked/state.json")
      echo "note $(date -u +%FT%TZ): $unpacked was unpacked from the committed compact checkpoint ${compact#"$repo"/} ($how); the resume below comes from it" >> "$work/$preset/run/train.log"
      done_epochs=$compact_epochs
    fi
  fi
  if [[ "$arguments" == *"--eval-on" ]] && [ "${done_epochs:-0}" -gt "$epochs" ]; then
    continue  # a later phase of this run has taken over
  fi
  if [[ "$arguments" != *"--eval-on" ]] && [ "${done_epochs:-0}" -ge "$epochs" ]; then
    continue  # the final phase has finished: running it again would read the test set a second time
  fi
  echo "$(date -u +%FT%TZ) start $preset: $arguments" >> "$work/queue.log"
  # shellcheck disable=SC2086
  bash "$here/run_in_background.sh" "$work/$preset" -- keras-capsules $arguments --data-dir "$data"
  status=$(tail -1 "$work/$preset/run/train.log" | awk '$1 == "exit" {print $2}')
  echo "$(date -u +%FT%TZ) end $preset (exit ${status:-?}): $arguments" >> "$work/queue.log"
  [ "${status:-1}" = 0 ] || { echo "$(date -u +%FT%TZ) queue stopped: $preset failed" >> "$work/queue.log"; exit 1; }
done
echo "$(date -u +%FT%TZ) queue finished" >> "$work/queue.log"
