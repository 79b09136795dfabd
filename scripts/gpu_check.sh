#!/bin/bash
# The device check (issue 16), printing one JSON document on stdout (progress and skips on stderr).
#   scripts/gpu_check.sh              on a GPU machine with the gpu extra (vLLM, DeepSpeed): < 8 min
#   scripts/gpu_check.sh --dry-run    anywhere: GPU parts skipped with a line, CPU analogues run (< 3 min)
# Other flags: --only probe_compare,grpo_vllm,zero2_watcher,cpu_analogue  --work DIR
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
exec python scripts/gpu_check.py "$@"
