#!/usr/bin/env bash
# SFT alone, RL alone and SFT then RL from one base and one seed (issue 39, experiment=sft_then_rl),
# then one report over the three. Resumable: each run that finished is skipped (train.py resume=),
# a killed one resumes. DRY_RUN=1 prints the commands only. Extra arguments go to every train.py call
# (e.g. debug=smoke backend.torch_threads=1).
#   bash scripts/sft_then_rl.sh                 # seed 0, outputs/sft_then_rl/
#   SEED=1 OUT=outputs/stl bash scripts/sft_then_rl.sh debug=smoke
set -euo pipefail
cd "$(dirname "$0")/.."
SEED="${SEED:-0}"
OUT="${OUT:-outputs/sft_then_rl}"
PY="${PYTHON:-python}"
run() {
  echo "+ $*"
  if [ -z "${DRY_RUN:-}" ]; then "$@"; fi
}
train() {  # train DIR ARGS...: a fresh run, or resume the one in DIR
  local dir="$1"; shift
  if [ -f "$dir/run_info.json" ]; then
    run "$PY" train.py resume="$dir" "$@"
  else
    run "$PY" train.py hydra.run.dir="$dir" train.seed="$SEED" "$@"
  fi
}
train "$OUT/sft_s$SEED" algo=sft_distill "$@"
train "$OUT/rl_s$SEED" algo=grpo "$@"
train "$OUT/sft_then_rl_s$SEED" experiment=sft_then_rl train.init_from="$OUT/sft_s$SEED" "$@"
run "$PY" report.py base="$OUT/rl_s$SEED" runs="[$OUT/sft_s$SEED,$OUT/rl_s$SEED,$OUT/sft_then_rl_s$SEED]" out="$OUT/report"
