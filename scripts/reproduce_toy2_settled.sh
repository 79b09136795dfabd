#!/usr/bin/env bash
# The paper's experiment on the second-edition toy world, settled (issue 40), as one command sequence
# on the held-out slice (task.slice=heldout: 100 each of H1, H2, B3, B4 and 50 X):
#   1. the base, probed to k = 4096 on every non-X problem (probe=toy2_large: certified adaptive,
#      n0 = 256), and its null, a second base draw (probe.seed=1) with the same settings;
#   2. experiment=toy2_settled: GRPO seeds 0-2 and the controls grpo_shuffled_reward,
#      grpo_strict_reward and grpo_own_trainer, 300 steps each, every 50 steps a checkpoint probed at
#      n = 256 on the whole slice (beside the base and its null at n = 256, from the same store);
#   3. every arm's final checkpoint to k = 4096 on the non-X problems, as the base;
#   4. report.py: the sweep (curves to 256, progression over checkpoints, coverage against the null),
#      then the large-k probes (base, null and every arm, curves to 4096).
#
#   bash scripts/reproduce_toy2_settled.sh [OUT_DIR]     (default outputs/toy2_settled)
#   DRY_RUN=1 bash scripts/reproduce_toy2_settled.sh     prints every command, runs nothing
# REPORT_DIR (default docs/toy2_settled) is where the reports go; PYTHON the interpreter.
#
# Resumable: run it again after any interruption. A probe whose problems.csv exists is skipped, and
# one killed midway picks up its samples from the store (the adaptive probe resumes mid-round); a
# training run with training_done is skipped, one killed midway resumes from its latest complete
# checkpoint (train.py resume=DIR), arms not started yet run as one sweep, two at a time. Both
# reports are rewritten every time (they only read the store).
#
# Compute plan (samples; a sample is one completion of <= 108 tokens):
#   - The base to 4096 on 400 non-X problems: H1 (rate ~0.1 on the base) certifies at n0 = 256 or
#     512 (a Clopper-Pearson lower bound above 0.027 certifies epsilon = 1e-3 at every k > 256); H2,
#     B3 and B4 (rates ~0.01-0.02) run to the cap. Measured on the slice's first 10 non-X problems
#     (3 H1, 3 H2, 2 B3, 2 B4; `probe.limit=10`): 29,696 samples, H1 stopping at 256, 256 and 512,
#     the other 7 at 4096; 145.9 s, 203.5 samples/s on one torch thread of two cores shared with
#     other jobs (load average ~5). So about 100 x 340 + 300 x 4096 = 1.26 M samples, 1.7 h at that
#     rate; the null the same: 2.5 M for the two.
#   - Each arm's final checkpoint to 4096: problems RL sharpened certify at 256, problems it lost
#     run to 4096; at 40-70% of problems certified early, 0.4-0.8 M samples each, 2.4-4.8 M for six.
#   - The sweep: 6 arms x 6 checkpoints x 450 problems x 256 = 4.1 M samples, plus the base and null
#     at n = 256 (0.23 M, once), plus 300 training steps x 32 rollouts x 6 arms (58 k rollouts).
#   In all about 9-11.5 M samples: 12-16 h at 200 samples/s, half that with two jobs at a time on a
#   quiet machine; a GPU sampler (sampler=vllm) is the way to make it short.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-outputs/toy2_settled}"
REPORT="${REPORT_DIR:-docs/toy2_settled}"
PY="${PYTHON:-python}"
SWEEP="$OUT/sweep"
LARGE="$OUT/large"
ARMS=(grpo_s0 grpo_s1 grpo_s2 grpo_shuffled_reward grpo_strict_reward grpo_own_trainer)
FINAL=300
SLICE=(task=toy2 task.slice=heldout)
NON_X="task.tiers=[H1,H2,B3,B4]"

# run DONE_FILE CMD...: CMD unless DONE_FILE exists; with DRY_RUN=1 print CMD (one line) instead.
run() {
  local done_file=$1
  shift
  if [[ "${DRY_RUN:-0}" == 1 ]]; then
    echo "$*"
    return
  fi
  if [[ -n "$done_file" && -e "$done_file" ]]; then
    echo "[reproduce_toy2_settled] done already: $done_file"
    return
  fi
  echo "[reproduce_toy2_settled] $*"
  "$@"
}

large_probe() {  # large_probe NAME MODEL_OVERRIDES...: one probe to k = 4096 into $LARGE/NAME
  local name=$1
  shift
  run "$LARGE/$name/problems.csv" "$PY" probe.py "$@" "${SLICE[@]}" "$NON_X" probe=toy2_large \
    logger=none "hydra.run.dir=$LARGE/$name"
}

# 1. The base and its null (a second draw), to 4096.
large_probe base model=toy2 model.name=toy2_base probe.seed=0
large_probe null model=toy2 model.name=toy2_base_null probe.seed=1

# 2. The arms: finished ones skipped, interrupted ones resumed, the rest as one sweep.
fresh=()
for arm in "${ARMS[@]}"; do
  dir="$SWEEP/$arm"
  if [[ "${DRY_RUN:-0}" != 1 && -e "$dir/training_done" ]]; then
    echo "[reproduce_toy2_settled] done already: $dir"
  elif [[ "${DRY_RUN:-0}" != 1 && -d "$dir/.hydra" ]]; then
    run "" "$PY" train.py "resume=$dir"
  else
    fresh+=("$arm")
  fi
done
if ((${#fresh[@]})); then
  arms=$(IFS=,; echo "${fresh[*]}")
  run "" "$PY" train.py -m experiment=toy2_settled "hydra.sweep.dir=$SWEEP" "+arm=$arms"
fi

# 3. Every arm's final checkpoint, to 4096.
for arm in "${ARMS[@]}"; do
  large_probe "$arm" model=toy2 "model.path=$SWEEP/$arm/checkpoints/checkpoint-$FINAL" \
    "model.name=toy2_settled_$arm"
done

# 4. The reports (rewritten every time: they only read the store).
run "" "$PY" report.py "base=$SWEEP" "sweeps=[$SWEEP]" "out=$REPORT/sweep"
models=$(IFS=,; printf 'toy2_base_null'; for arm in "${ARMS[@]}"; do printf ',toy2_settled_%s' "$arm"; done)
run "" "$PY" report.py base=toy2_base "models=[$models]" "${SLICE[@]}" "$NON_X" "out=$REPORT/large"
[[ "${DRY_RUN:-0}" == 1 ]] || echo "[reproduce_toy2_settled] reports: $REPORT/sweep/report.md, $REPORT/large/report.md"
