#!/usr/bin/env bash
# The paper's experiment on the second-edition toy world, settled (issue 40), as one command sequence
# on the held-out slice (task.toy2.slice=heldout: 100 each of H1, H2, B3, B4 and 50 X):
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
#   PACK_ONLY=1 bash scripts/reproduce_toy2_settled.sh   packs what the store holds and every arm,
#                                                        finished or stopped midway (before the
#                                                        machine goes away), runs nothing else
# REPORT_DIR (default docs/toy2_settled) is where the reports go; PYTHON the interpreter; the store is
# BOUNDLAB_STORE (default OUT_DIR/store.sqlite); ARCHIVE_DIR (default archive/toy2_settled, in git)
# holds the probe archives and, under arms/, the packed arms.
#
# Across machines and sessions: the store and the run dirs live on local disk, so every large probe
# is packed, when it finishes, into ARCHIVE_DIR/<model name>.sqlite.xz (boundlab.probe.archive: every
# sample, about 2 bytes each compressed), and every finished arm into ARCHIVE_DIR/arms/<arm>/
# (boundlab.probe.run_archive: its inline probes, its run dir's records and its final checkpoint's
# model files, about 4 MB a toy2 arm). An arm stopped midway (stop the script, then PACK_ONLY=1) is
# packed to be resumed: its run dir, its latest complete checkpoint with the trainer's state, its
# probes so far. At the start every probe archive is unpacked into the store and every packed arm
# restored as SWEEP/<arm> (never over an existing run dir that differs: that stops the script in one
# line). Commit ARCHIVE_DIR and a fresh clone continues where the last machine stopped: finished
# probes and arms come back whole (an arm is not trained again, its final checkpoint is probed with
# the same probe key), a probe packed midway resumes from its packed samples, and an arm packed
# midway resumes from its packed checkpoint.
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
ARCHIVE="${ARCHIVE_DIR:-archive/toy2_settled}"
export BOUNDLAB_STORE="${BOUNDLAB_STORE:-$OUT/store.sqlite}"
SWEEP="$OUT/sweep"
LARGE="$OUT/large"
ARMS=(grpo_s0 grpo_s1 grpo_s2 grpo_shuffled_reward grpo_strict_reward grpo_own_trainer)
FINAL=300
SLICE=(task=toy2 task.toy2.slice=heldout)
NON_X="task.toy2.tiers=[H1,H2,B3,B4]"

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

large_probe() {  # large_probe NAME MODEL_NAME MODEL_OVERRIDES...: one probe to 4096 into $LARGE/NAME
  local name=$1 model_name=$2
  shift 2
  run "$LARGE/$name/problems.csv" "$PY" probe.py "$@" "model.name=$model_name" "${SLICE[@]}" "$NON_X" \
    probe=toy2_large logger=none "hydra.run.dir=$LARGE/$name"
  # Packed when the probe wrote its results after the archive was last written.
  if [[ "${DRY_RUN:-0}" != 1 && "$LARGE/$name/problems.csv" -nt "$ARCHIVE/$model_name.sqlite.xz" ]]; then
    pack "$model_name"
  fi
}

pack() {  # pack MODEL_NAME: the store's probes of that model into $ARCHIVE/MODEL_NAME.sqlite.xz
  run "" "$PY" -m boundlab.probe.store pack "$BOUNDLAB_STORE" --models "$1" --out "$ARCHIVE/$1.sqlite.xz"
}

pack_arm() {  # pack_arm ARM: the arm (run dir, probes, checkpoint) into $ARCHIVE/arms/ARM: a finished
  # arm as finished, one stopped midway to be resumed elsewhere. Packing again changes nothing, or
  # replaces an unfinished packing with its continuation (boundlab.probe.run_archive).
  run "" "$PY" -m boundlab.probe.run_archive pack "$SWEEP/$1" --out "$ARCHIVE/arms/$1" \
    --store "$BOUNDLAB_STORE" --allow-unfinished
}

pack_arms() {  # every arm with a complete checkpoint (with DRY_RUN=1: every arm); returns 1 when one
  # could not be packed (after trying the others)
  local failed=0 arm
  for arm in "${ARMS[@]}"; do
    if [[ "${DRY_RUN:-0}" == 1 ]] || compgen -G "$SWEEP/$arm/checkpoints/checkpoint-*/boundlab_complete" >/dev/null; then
      pack_arm "$arm" || failed=1
    fi
  done
  return "$failed"
}

# The large probes' model names (the arms' as well: toy2_settled_<arm>) and their folders under $LARGE.
LARGE_MODELS=(toy2_base toy2_base_null toy2_base_focus)
LARGE_DIRS=(base null base_focus)
for arm in "${ARMS[@]}"; do LARGE_MODELS+=("toy2_settled_$arm"); LARGE_DIRS+=("$arm"); done

if [[ "${PACK_ONLY:-0}" == 1 ]]; then
  for i in "${!LARGE_MODELS[@]}"; do
    m=${LARGE_MODELS[$i]}
    # A probe that finished before its archive was written is in it already (about a minute saved
    # for each: packing rereads every sample).
    if [[ -e "$LARGE/${LARGE_DIRS[$i]}/problems.csv" && "$ARCHIVE/$m.sqlite.xz" -nt "$LARGE/${LARGE_DIRS[$i]}/problems.csv" ]]; then
      echo "[reproduce_toy2_settled] packed already: $ARCHIVE/$m.sqlite.xz"
    elif "$PY" -c "import sqlite3, sys; db = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)
sys.exit(0 if db.execute('SELECT 1 FROM probes WHERE model_name=?', (sys.argv[2],)).fetchone() else 1)" \
      "$BOUNDLAB_STORE" "$m" 2>/dev/null; then
      pack "$m"
    fi
  done
  pack_arms
  exit
fi

# 0. What earlier machines packed comes back into the store (a sample already there is checked, not
# duplicated).
shopt -s nullglob
archives=("$ARCHIVE"/*.sqlite.xz)
shopt -u nullglob
if ((${#archives[@]})); then
  run "" "$PY" -m boundlab.probe.store unpack "${archives[@]}" --store "$BOUNDLAB_STORE"
fi
# Packed arms come back as run dirs, their probes into the store: a finished arm with training_done
# (not trained again), an unfinished one to be resumed below (where this machine's run dir of the
# same arm is as far along already, it is kept).
packed=()
for arm in "${ARMS[@]}"; do
  if [[ -e "$ARCHIVE/arms/$arm/manifest.json" ]]; then packed+=("$ARCHIVE/arms/$arm"); fi
done
if ((${#packed[@]})); then
  run "" "$PY" -m boundlab.probe.run_archive restore "${packed[@]}" --sweep-dir "$SWEEP" --store "$BOUNDLAB_STORE"
fi

# 1. The base and its null (a second draw), to 4096.
large_probe base toy2_base model=toy2 probe.seed=0
large_probe null toy2_base_null model=toy2 probe.seed=1

# 2. The arms: finished ones skipped, interrupted ones resumed (two at a time), the rest as one
# sweep (two at a time); then every arm packed (a failed arm does not keep the others from being
# packed; its failure still stops the script).
fresh=()
resumes=()
for arm in "${ARMS[@]}"; do
  dir="$SWEEP/$arm"
  if [[ "${DRY_RUN:-0}" != 1 && -e "$dir/training_done" ]]; then
    echo "[reproduce_toy2_settled] done already: $dir"
  elif [[ "${DRY_RUN:-0}" != 1 && -d "$dir/.hydra" ]]; then
    resumes+=("$dir")
  else
    fresh+=("$arm")
  fi
done
trained=0
running=0
for dir in "${resumes[@]}"; do
  if ((running == 2)); then
    wait -n || trained=$?
    running=$((running - 1))
  fi
  echo "[reproduce_toy2_settled] $PY train.py resume=$dir"
  "$PY" train.py "resume=$dir" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || trained=$?
  running=$((running - 1))
done
if ((${#fresh[@]})); then
  arms=$(IFS=,; echo "${fresh[*]}")
  run "" "$PY" train.py -m experiment=toy2_settled "hydra.sweep.dir=$SWEEP" "+arm=$arms" || trained=$?
fi
if ! pack_arms; then ((trained != 0)) || trained=2; fi
((trained == 0)) || exit "$trained"

# 3. Every arm's final checkpoint, to 4096.
for arm in "${ARMS[@]}"; do
  large_probe "$arm" "toy2_settled_$arm" model=toy2 "model.path=$SWEEP/$arm/checkpoints/checkpoint-$FINAL"
done

# 3b. The base, symmetric on what the arms lose: the adaptive base stops early on a problem it
# certifies, and the problems an arm loses at 256 are such problems, while the arm's own probe runs
# them to 4096 (0 successes never certify). So the base is probed again on every problem any arm
# loses at 256 (boundlab.report.focus), at a fixed n = 4096: a probe of its own (toy2_base_focus).
# Redone when the set changes (the ids file is rewritten only then).
arm_models=$(IFS=,; for arm in "${ARMS[@]}"; do printf 'toy2_settled_%s,' "$arm"; done)
FOCUS="$LARGE/focus_ids.txt"
run "" "$PY" -m boundlab.report.focus --store "$BOUNDLAB_STORE" --base toy2_base --arms "${arm_models%,}" \
  --k 256 --out "$FOCUS"
focus_done="$LARGE/base_focus/problems.csv"
if [[ "${DRY_RUN:-0}" == 1 ]] || [[ -s "$FOCUS" && ! ( -e "$focus_done" && "$focus_done" -nt "$FOCUS" ) ]]; then
  run "" "$PY" probe.py model=toy2 probe.seed=0 model.name=toy2_base_focus "${SLICE[@]}" "$NON_X" \
    "task.problems_from=$FOCUS" probe=toy2_large probe.adaptive=false logger=none "hydra.run.dir=$LARGE/base_focus"
  if [[ "${DRY_RUN:-0}" != 1 ]]; then pack toy2_base_focus; fi
fi

# 4. The reports (rewritten every time: they only read the store). The focus report compares the
# base's fixed 4096 samples with each arm's large probe on the problems the arms lose.
run "" "$PY" report.py "base=$SWEEP" "sweeps=[$SWEEP]" "out=$REPORT/sweep"
run "" "$PY" report.py base=toy2_base "models=[toy2_base_null,${arm_models%,}]" "${SLICE[@]}" "$NON_X" \
  "out=$REPORT/large"
if [[ "${DRY_RUN:-0}" == 1 || -s "$FOCUS" ]]; then
  run "" "$PY" report.py base=toy2_base_focus "models=[${arm_models%,}]" "${SLICE[@]}" "$NON_X" \
    "task.problems_from=$FOCUS" "out=$REPORT/focus"
fi
[[ "${DRY_RUN:-0}" == 1 ]] || echo "[reproduce_toy2_settled] reports: $REPORT/{sweep,large,focus}/report.md"
