#!/usr/bin/env bash
# The paper's experiment on the second-edition toy world, end to end: every arm of
# experiment=toy2_paper (two at a time), the teacher's probe for the perplexity contrast, then one
# report. On a 2-core CPU machine: about 2 hours.
#   bash scripts/reproduce_toy2_paper.sh [OUT_DIR]           (default docs/toy2_paper)
# Extra Hydra overrides for the sweep go in SWEEP_ARGS, e.g.
#   SWEEP_ARGS="+arm=grpo_s0,ppo" bash scripts/reproduce_toy2_paper.sh /tmp/two_arms
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-docs/toy2_paper}"
SWEEP="${SWEEP_DIR:-outputs/sweeps/toy2_paper-$(date +%Y%m%d-%H%M%S)}"
# shellcheck disable=SC2086
python train.py -m experiment=toy2_paper hydra.sweep.dir="$SWEEP" ${SWEEP_ARGS:-}
python probe.py model=toy2_teacher logger=none hydra.run.dir="$SWEEP/teacher_probe"
python report.py base="$SWEEP" "sweeps=[$SWEEP]" teacher=toy2_teacher out="$OUT"
echo "report: $OUT/report.md (sweep: $SWEEP)"
