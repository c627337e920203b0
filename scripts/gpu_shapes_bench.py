"""GPU timings of real-size Qwen2.5 shapes with random bf16 weights (speed does not depend on the
weights): the target's verify pass at 1..9 tokens against the memory-bandwidth floor (weight bytes
over the measured copy bandwidth), and the draft's one-token step eager vs replayed as a CUDA graph.

    python scripts/gpu_shapes_bench.py [--tiny]   # --tiny: small shapes, any device (a smoke test)
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import torch
from transformers import AutoModelForCausalLM, DynamicCache, Qwen2Config, StaticCache

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground.engine.graphs import Captured  # noqa: E402
from scripts.gpu_check import QWEN25_05B, QWEN25_7B  # noqa: E402  (the shapes, written once)

TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=1000, tie_word_embeddings=True)
CONTEXT = 512  # prompt tokens already in the cache


def timed(fn, repeats: int = 20) -> float:
    """Median seconds of fn() (device events on CUDA, after warm-up)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def copy_bandwidth(device: str) -> float:
    """Bytes read + written per second by a large device-to-device copy."""
    src = torch.randn(1 << 28, device=device)  # 1 GiB of float32
    dst = torch.empty_like(src)
    return 2 * src.numel() * src.element_size() / timed(lambda: dst.copy_(src), 10)


def build(shape: dict, device: str) -> torch.nn.Module:
    cfg = Qwen2Config(max_position_embeddings=4096, **shape)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    return model.eval()


@torch.no_grad()
def verify_passes(model, device: str, sizes=(1, 2, 3, 4, 5, 8, 9)) -> dict:
    """-> {tokens: median seconds of one pass over that many new tokens after CONTEXT cached ones}."""
    cache = DynamicCache()
    vocab = model.config.vocab_size
    model(torch.randint(0, vocab, (1, CONTEXT), device=device), past_key_values=cache, use_cache=True)
    out = {}
    for n in sizes:
        ids = torch.randint(0, vocab, (1, n), device=device)

        def one_pass():
            model(ids, past_key_values=cache, use_cache=True)
            cache.crop(-n)  # negative: remove the n new tokens (every transformers 5.x)
        out[n] = timed(one_pass)
    return out


@torch.no_grad()
def draft_step(model, device: str) -> dict:
    """One-token decode with a static cache: eager vs a captured CUDA graph of the same call."""
    vocab = model.config.vocab_size
    cache = StaticCache(config=model.config, max_cache_len=CONTEXT + 64)
    model(torch.randint(0, vocab, (1, CONTEXT), device=device), past_key_values=cache, use_cache=True,
          cache_position=torch.arange(CONTEXT, device=device))
    ids = torch.randint(0, vocab, (1, 1), device=device)
    position = torch.tensor([CONTEXT], device=device)

    def step():
        return model(ids, past_key_values=cache, use_cache=True, cache_position=position,
                     position_ids=position[None]).logits
    out = {"eager": timed(step)}
    if not torch.cuda.is_available():
        return out
    graph = Captured(step)  # the engine's own capture (warm-up on a side stream, then one graph)
    logits = graph()
    reference = step()
    out["graph"] = timed(graph)
    out["graph_matches_eager"] = bool(torch.equal(logits, reference))
    return out


def weight_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__}
    report["copy_bytes_per_s"] = bandwidth = copy_bandwidth(device)
    print(f"{report['device']}, torch {torch.__version__}: copy {bandwidth / 1e12:.2f} TB/s (read + written)")
    for name, shape in (("target Qwen2.5-7B", QWEN25_7B), ("draft Qwen2.5-0.5B", QWEN25_05B)):
        try:
            model = build(TINY if args.tiny else shape, device)
            floor = weight_bytes(model) / bandwidth
            passes = verify_passes(model, device)
            report[name] = {"weight_bytes": weight_bytes(model), "floor_s": floor, "verify_s": passes}
            print(f"{name}: {weight_bytes(model) / 1e9:.2f} GB of weights, floor {floor * 1e3:.2f} ms")
            for n, s in passes.items():
                print(f"  pass over {n} tokens: {s * 1e3:.2f} ms = {s / floor:.2f}x the floor")
            if "draft" in name:
                report[name]["step"] = step = draft_step(model, device)
                print(f"  one-token step: eager {step['eager'] * 1e3:.2f} ms"
                      + (f", CUDA graph {step['graph'] * 1e3:.2f} ms (identical logits: {step['graph_matches_eager']})"
                         if "graph" in step else ""))
            del model
            torch.cuda.empty_cache() if device == "cuda" else None
        except Exception as exc:  # report what was measured so far; a lease is not repeated lightly
            report[name] = {"error": repr(exc)}
            print(f"{name}: failed: {exc!r}")
        with open(os.path.join(args.out, "gpu_shapes.json"), "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
