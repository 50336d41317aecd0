#!/usr/bin/env bash
# Runs the README main job's training N times, each in a fresh process, counting exits by status.
#
#   bash tools/soak_main_job.sh N [OUT] [-- EXTRA TRAIN FLAGS]
#
# Each run is `keras-capsules train EffCapsNet --epochs 1 --no-export` (the main job's first epoch:
# the crashes reported came within its first ten steps; the SavedModel export that follows training is
# left out) with Python's faulthandler on and core dumps enabled, in OUT/run-NNNN/ (default OUT:
# soak-runs). With SOAK_STOP_AFTER=S in the environment, a run is stopped with SIGTERM once its progress
# bar shows step S or later (exit status 143, counted as a clean run that got that far), which halves a
# run. A run's folder keeps its log's last 200 lines, its exit status and, when it crashed, the core file
# (the kernel's core_pattern must write `core` into the working directory, the default) and the full
# log. OUT/summary.tsv gets one line per run: index, exit status, seconds, core written, the step it was
# stopped after (`-`: ran to the end), then the flags. The script resumes: runs whose folder has a status are skipped, so rerunning with a
# larger N continues the soak. EXTRA TRAIN FLAGS are appended to every run (e.g. a setting under test);
# the environment is passed through (e.g. TF_ENABLE_ONEDNN_OPTS=0). Prints the counts by status at the end.
set -uo pipefail
count=${1:?usage: soak_main_job.sh N [OUT] [-- EXTRA TRAIN FLAGS]}
out=${2:-soak-runs}
shift $(( $# >= 2 ? 2 : 1 ))
[ "${1:-}" = "--" ] && shift
extra=("$@")
command -v keras-capsules >/dev/null || { echo "soak_main_job.sh: keras-capsules is not on PATH (activate the environment)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
ulimit -c unlimited
for index in $(seq 1 "$count"); do
  run=$(printf '%s/run-%04d' "$out" "$index")
  [ -f "$run/status" ] && continue
  rm -rf "$run" && mkdir -p "$run"
  started=$(date +%s.%N)
  (cd "$run" && PYTHONFAULTHANDLER=1 exec keras-capsules train EffCapsNet --epochs 1 --no-export --output train "${extra[@]}" > log 2>&1) &
  pid=$!
  if [ -n "${SOAK_STOP_AFTER:-}" ]; then
    while kill -0 "$pid" 2>/dev/null; do
      step=$(grep -aoE '[0-9]+/[0-9]+' "$run/log" 2>/dev/null | cut -d/ -f1 | sort -n | tail -1)
      if [ "${step:-0}" -ge "$SOAK_STOP_AFTER" ]; then
        kill -TERM "$pid" 2>/dev/null
        break
      fi
      sleep 0.2
    done
  fi
  wait "$pid"
  status=$?
  seconds=$(echo "$(date +%s.%N) - $started" | bc)
  core=no
  ls "$run"/core* >/dev/null 2>&1 && core=yes
  if { [ "$status" = 0 ] || [ "$status" = 143 ]; } && [ "$core" = no ]; then
    tail -n 200 "$run/log" > "$run/log.tail" && rm -f "$run/log"
    rm -rf "$run/train"
  fi
  echo "$status" > "$run/status"
  printf '%d\t%s\t%.1f\t%s\t%s\t%s\n' "$index" "$status" "$seconds" "$core" "${SOAK_STOP_AFTER:--}" "${extra[*]:-}" >> "$out/summary.tsv"
done
echo "runs by exit status (status: count):"
cut -f2 "$out/summary.tsv" | sort | uniq -c | awk '{print "  " $2 ": " $1}'
