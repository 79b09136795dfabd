#!/bin/bash
# The vLLM server that samples training rollouts (train.py rollout=vllm_server rollout.host=THIS_HOST),
# TRL's own `trl vllm-serve`: the trainer pushes new weights to it over NCCL after every step.
#   MODEL=Qwen/Qwen2.5-7B TP=1 DP=7 PORT=8000 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 launch/vllm_serve.sh
# TP x DP GPUs; the training run's rollout.port must be PORT (rollout.group_port: the NCCL port, 51216).
# MAX_LEN must cover the longest prompt plus algo.max_completion_length.
set -euo pipefail
: "${MODEL:?set MODEL to the base model (a local folder or a Hub id in the local HF cache)}"
exec trl vllm-serve --model "$MODEL" \
  --tensor_parallel_size "${TP:-1}" --data_parallel_size "${DP:-1}" \
  --host 0.0.0.0 --port "${PORT:-8000}" \
  --gpu_memory_utilization "${GPU_MEM:-0.9}" --dtype bfloat16 \
  ${MAX_LEN:+--max_model_len "$MAX_LEN"}
