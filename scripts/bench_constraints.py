"""Constraint costs at the real Qwen vocabulary (151k entries) and their share of a speculative round.

    python scripts/bench_constraints.py [--tiktoken PATH] [--steps 128]

1. A Qwen-compatible tokenizer is rebuilt offline from `qwen.tiktoken` (shipped inside the PyPI
   package dashscope 2.0.2; fetched with `pip download --no-deps` when no path is given). The
   bitmask is as wide as Qwen2.5-0.5B's logits (151936).
2. For every test schema and both backends: compile time (no cache) and per-token mask time (the
   effective mask the engine computes) along a random walk through the grammar.
3. On the demo pair (demo-json preset, k=4, greedy): time spent in the constraint (masks, forced
   tokens, consuming and rolling back, applying masks to logits) as a share of the run.
Prints Markdown tables for BENCHMARKS.md. Needs `tiktoken` (pip install tiktoken) for step 1."""
import argparse
import json
import pathlib
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.constraints import ConstraintSpec  # noqa: E402
from playground.constraints.reading import BACKEND_CLASSES  # noqa: E402
from playground.constraints.guide import Guide  # noqa: E402
from playground.errors import PlaygroundError  # noqa: E402
from tests.constraint_cases import SCHEMAS  # noqa: E402

QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_LOGITS = 151936


def qwen_tokenizer(tiktoken_path: str | None):
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter
    path = pathlib.Path(tiktoken_path) if tiktoken_path else fetch_qwen_tiktoken()
    converted = TikTokenConverter(vocab_file=str(path), pattern=QWEN_PATTERN, extra_special_tokens=QWEN_SPECIAL).converted()
    tok = PreTrainedTokenizerFast(tokenizer_object=converted, eos_token="<|endoftext|>")
    assert tok("Hello world").input_ids == [9707, 1879], "not the Qwen2 vocabulary"
    return tok


def fetch_qwen_tiktoken() -> pathlib.Path:
    folder = pathlib.Path(tempfile.mkdtemp())
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "dashscope==2.0.2", "-d", str(folder)],
                   check=True)
    wheel = zipfile.ZipFile(next(folder.glob("dashscope-*.whl")))
    target = folder / "qwen.tiktoken"
    target.write_bytes(wheel.read("dashscope/resources/qwen.tiktoken"))
    return target


def walk_mask_times(backend, compiled, eos: frozenset, steps: int, rng: random.Random) -> list[float]:
    """Seconds per effective-mask computation along a random path through the grammar."""
    guide = Guide(backend.matcher(compiled), QWEN_LOGITS, eos, 2)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        row = guide.next_mask()
        times.append(time.perf_counter() - start)
        guide.rows = 0
        allowed = allowed_ids(row)
        choices = [t for t in allowed if t not in eos]
        if not choices:
            break
        guide._commit([rng.choice(choices)])
    return times


def allowed_ids(row: torch.Tensor) -> list[int]:
    bits = ((row[:, None] >> torch.arange(32, dtype=torch.int32)) & 1).bool().flatten()
    return bits.nonzero().flatten().tolist()


def mask_table(tok, steps: int) -> list[dict]:
    eos = frozenset({tok.eos_token_id})
    rows = []
    for name in BACKEND_CLASSES:
        backend = BACKEND_CLASSES[name](tok, QWEN_LOGITS, eos)
        compile_s, mask_s, refused = [], [], 0
        for i, schema in enumerate(SCHEMAS.values()):
            spec = ConstraintSpec("json", json.dumps(schema), name)
            start = time.perf_counter()
            try:
                compiled, _ = backend.compile(spec)
            except PlaygroundError:
                refused += 1
                continue
            compile_s.append(time.perf_counter() - start)
            mask_s += walk_mask_times(backend, compiled, eos, steps, random.Random(i))
        mask_s.sort()
        rows.append({"backend": name, "schemas": len(compile_s), "refused": refused,
                     "compile_ms_mean": 1e3 * statistics.mean(compile_s), "compile_ms_max": 1e3 * max(compile_s),
                     "mask_ms_mean": 1e3 * statistics.mean(mask_s), "mask_ms_p99": 1e3 * mask_s[int(0.99 * len(mask_s))],
                     "masks": len(mask_s)})
    return rows


class Stopwatch:
    """Adds up the time spent inside wrapped functions."""

    def __init__(self):
        self.seconds = 0.0

    def wrap(self, fn):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        return timed


def demo_share(backend: str, repeats: int = 5) -> dict:
    """Share of a constrained speculative run spent in the constraint, demo-json preset."""
    from playground.engine import proposers, speculative
    from playground.presets import get_preset
    preset = get_preset("demo-json")
    pair = session.load_pair(preset.target, preset.draft, "cpu")
    constraint = session.constrain(pair, ConstraintSpec("json", preset.schema, backend))
    ids = session.encode_prompt(pair, preset.prompt)
    cfg = session.spec_config(k=4, max_new_tokens=preset.max_new_tokens)
    watch = Stopwatch()
    originals = {name: getattr(Guide, name) for name in ("forced", "next_mask", "consume_draft", "settle", "verify_masks")}
    mask_fns = (speculative.mask_logits, proposers.mask_logits)
    try:
        for name, fn in originals.items():
            setattr(Guide, name, watch.wrap(fn))
        speculative.mask_logits = proposers.mask_logits = watch.wrap(mask_fns[0])
        session.run(pair, ids, cfg, constraint=constraint)  # warm-up
        watch.seconds, wall, tokens = 0.0, 0.0, 0
        for _ in range(repeats):
            result = session.run(pair, ids, cfg, constraint=constraint)
            wall += result.stats["wall_s"]
            tokens += result.stats["generated_tokens"]
    finally:
        for name, fn in originals.items():
            setattr(Guide, name, fn)
        speculative.mask_logits, proposers.mask_logits = mask_fns
    return {"backend": backend, "constraint_s": watch.seconds, "wall_s": wall, "share": watch.seconds / wall,
            "tokens": tokens, "forced": result.stats["forced"], "valid": result.valid}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiktoken", help="path to qwen.tiktoken (default: fetch dashscope 2.0.2 from PyPI)")
    parser.add_argument("--steps", type=int, default=128, help="random-walk tokens per schema")
    args = parser.parse_args()
    from importlib.metadata import version
    print(f"machine: {platform.machine()}, {torch.get_num_threads()} threads; llguidance {version('llguidance')}, "
          f"xgrammar {version('xgrammar')}, torch {torch.__version__}")
    tok = qwen_tokenizer(args.tiktoken)
    print(f"\nQwen vocabulary: {len(tok)} tokens, bitmask over {QWEN_LOGITS} logits\n")
    print("| backend | schemas compiled | refused | compile mean (ms) | compile max (ms) | mask mean (ms) | mask p99 (ms) | masks |")
    print("|---|---|---|---|---|---|---|---|")
    for r in mask_table(tok, args.steps):
        print(f"| {r['backend']} | {r['schemas']} | {r['refused']} | {r['compile_ms_mean']:.1f} | {r['compile_ms_max']:.1f} | "
              f"{r['mask_ms_mean']:.3f} | {r['mask_ms_p99']:.3f} | {r['masks']} |")
    print("\nDemo pair, demo-json preset, k=4, greedy, 5 runs:\n")
    print("| backend | constraint time (s) | run time (s) | share | tokens | forced (last run) | valid |")
    print("|---|---|---|---|---|---|---|")
    for backend in BACKEND_CLASSES:
        r = demo_share(backend)
        print(f"| {r['backend']} | {r['constraint_s']:.3f} | {r['wall_s']:.3f} | {100 * r['share']:.1f}% | {r['tokens']} | "
              f"{r['forced']} | {r['valid']} |")


if __name__ == "__main__":
    main()
