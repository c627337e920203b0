#!/usr/bin/env bash
# Wheels the lent GPU machine lacks (it has torch 2.11 and Python 3.12, no network), into .whl/ for
# the device tool's `carry`: transformers/tokenizers at the project's versions, the constraint
# libraries and their needs (~27 MB). The working tree travels too, 64 MiB in all with the wheels:
# this also moves the SmolLM2 drafts (22 MB, not needed there) to /tmp/gpu-held/; put them back with
# `bash scripts/gpu_wheels.sh --restore` once the GPU calls are done (never commit while they are out).
# Then, on the device, one section per call (each fits its 10 minutes), carry [".whl"]:
#   set -o pipefail; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
#     && PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 scripts/gpu_check.py --only fused,fusedlayers --out $OUT 2>&1 | tee $OUT/gpu_check.log
# with `--only fused,fusedlayers` next (about 8 min: a pass's products and heads fused against the compiled
# modules in six splits, and launched dependent, one pass's attention each way (Triton's as two kernels or
# one), then the joined pair with Triton attention built three times, as it is, with the draft's layers
# and head fused in the split timed fastest (the target's too where its passes timed faster fused), and
# so launched dependent (PLAYGROUND_PDL), rows interleaved), and at once after it `--only tests` (about
# 2.5 min) where the draft's rounds were faster fused, else `--only pdl` (about 5 min: launched dependent
# or as usual without the fused layers). Every kernel compiles for sm90 with the GPU's Triton 3.6.0 as with 3.9
# (tests/test_triton_sm90.py run against `pip download triton==3.6.0`, 2026-12-04).
# 2026-12-04 on an H200: a start and `--only tests,triton` 394 s of device time (362 s running);
# `--only tuned --repeats 2` 327 s on the warm machine (benchmarks/gpu-check-2026-12-04-h200/).
# 2026-11-27 on an H200: a start about 36 s; `--only triton,gemv` 455 s; `--only regional,whole` 457 s;
# `--only tests` 170 s, 134 s of it in pytest (benchmarks/gpu-check-2026-11-27-h200-regional/).
# On 2026-11-26 `--only real` took 3 to 3.5 min and `--only tests,cli,demo` 3 min on an H200
# (benchmarks/gpu-check-2026-11-26-h200/).
set -euo pipefail
cd "$(dirname "$0")/.."
HELD=/tmp/gpu-held
if [ "${1:-}" = "--restore" ]; then
  for d in "$HELD"/smollm2_*draft; do [ -d "$d" ] && mv "$d" playground/models/; done
  git status --short playground/models
  exit 0
fi
mkdir -p "$HELD"
for d in playground/models/smollm2_*draft; do [ -d "$d" ] && mv "$d" "$HELD"/; done
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
mkdir -p .whl
for spec in transformers==5.23.0 tokenizers==0.23.3 jsonschema==4.26.0 referencing==0.37.0 rpds-py==0.30.0 \
            jsonschema-specifications==2025.9.1 llguidance==1.9.1 xgrammar==0.2.8 apache-tvm-ffi==0.1.15.post2 \
            pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 typing-inspection==0.4.2; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 \
    -d .whl "$spec"
done
du -sh .whl
