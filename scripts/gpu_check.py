"""Every GPU measurement of the compiled CUDA path in one command, one table at the end.

    python scripts/gpu_check.py [--only tests,cli,demo,real,joined,triton,ways,whole,regional,fused,fusedlayers,pdl,tuned]
        [--tokens 128] [--repeats 3] [--fused-layers auto|draft|both] [--fused-blocks SPLIT]
    python scripts/gpu_check.py --rehearse   # on a CPU, small shapes: every step but the figures

- tests: the tests marked `gpu` (pytest -m gpu), captured CUDA graphs on tiny models.
- cli:   `python -m playground generate --preset demo --device cuda --compile --baseline` (no crash,
         identity, compile seconds).
- demo:  the shipped demo pair; real: Qwen2.5-7B / Qwen2.5-0.5B shapes with random bf16 weights
         (speed does not depend on the weights), twice: as built (acceptance ~0: a round's pure
         overhead) and with every o_proj and down_proj zeroed, the target's head set to its
         embedding and the draft's embedding to the target's times a random 3584x896 projection
         (both predict the last token again: acceptance 1, every product still full size).
- joined: the real pair again with each layer's q/k/v and gate/up projections joined into one
         product each (playground.models.fused_projections, what session.load_pair does on a GPU
         unless PLAYGROUND_FUSE_PROJECTIONS=0): fewer kernels a pass; compiles afresh. Every CUDA
         section compiles by layer, CUDA's default since 2026-11-27 (whole models with
         PLAYGROUND_REGIONAL_COMPILE=0).
- triton: the joined pair attending through Triton's kernels (playground.engine.decode_attention,
         PLAYGROUND_GQA_ATTENTION=triton): only the cache positions the mask allows are read. Every
         Triton row takes the chunk size, and the combine in a kernel of its own or in each head's
         last split program ("one kernel", decode_attention.ONE_KERNEL), that the attention timing
         before the rows found fastest.
- ways:   the joined pair built twice in one process, attending through the matrix products (the
         default) and through Triton's kernels, both compiled, their rows interleaved run by run (each
         under its own way), and per row the ratio of the two per repeat: the side-by-side figure that
         decides attention's default on a GPU (the sections above measure one way a call).
- regional: the joined pair compiled by layer (playground.engine.layer_regions, CUDA's default,
         PLAYGROUND_REGIONAL_COMPILE=1: each decoder layer's code compiled once, not once per layer), run
         as `--only joined` in a process of its own whose inductor and Triton caches start empty: its
         compile seconds are a fresh machine's.
- whole: the same, compiled as whole models (PLAYGROUND_REGIONAL_COMPILE=0): beside `regional`, one
         call says what compiling by layer saves at start-up and what the layers' edges cost a pass.
- fused:  a pass's products with their norms, SiLU and residuals (no attention), and the output
         head's, as the compiled modules run them against playground.engine.fused_linear's kernels
         (four a layer) in six splits (FUSED_BLOCKS: tl.dot on rows padded to 16 in blocks of 128 or
         256 inputs, or a step's one or two rows summed without tl.dot in programs of 1 to 16
         outputs), each pass's layers replayed as one graph (not in the default --only; a minute, no
         model built): whether fusing them would take the draft's step toward its bar. Then each
         pass's split timed fastest again ("<split>, again") and launched dependent (PLAYGROUND_PDL:
         "<split>, pdl"), also with each program's weights asked of L2 before it waits ("<split>,
         pdl, prefetch": dependent_launch.PREFETCH); "pdl difference, fused": the largest of their
         outputs' differences from the split launched as usual (the same arithmetic: 0, or a kernel
         read before the one before it had written). (Inductor's kernels launched dependent are
         timed in rounds only, `pdl`: compiling each pass again here would take a minute.)
- fusedlayers: the joined pair with Triton attention built three times in one process: as it is,
         with the draft's layers and head (the target's too where `fused` timed its passes faster
         fused, or as --fused-layers says) through playground.engine.fused_layers
         (PLAYGROUND_FUSED_LAYERS) in the split `fused` timed fastest for them (--fused-blocks names
         one; the default split without either), and so fused and launched dependent (PLAYGROUND_PDL,
         its weights asked of L2 first where `fused` timed that faster); rows interleaved as in
         `ways`: the rounds' figures of what `fused` times alone, side by side (not in the default
         --only; about 6 min).
- pdl:    the joined pair with Triton attention built twice in one process, its kernels launched as
         usual and launched dependent (playground.engine.dependent_launch, PLAYGROUND_PDL: inductor's
         Triton kernels and the engine's own may start while the kernel before them ends), rows
         interleaved as in `ways` (not in the default --only; about 6 min). Both unfused, or with the
         models --fused-layers draft|both names fused in --fused-blocks' split (their weights asked of
         L2 first where `fused` in the same call timed that faster, or did not time it).
- tuned:  an experiment (not in the default --only): the triton pair compiled with inductor's
         max-autotune (Triton GEMM templates benchmarked against cuBLAS for every product shape)
         and coordinate-descent tuning of its own kernels; compiles for minutes. On an H200
         (2026-12-04) it made fewer kernels (293-310 a draft step against 353-370) and slower rows
         (2.27x at acceptance 1 against 2.44x, 238 s compiling against 72): not the product's build.

Each setting runs, interleaved `repeats` times on one 128-token prompt: the target alone compiled
at one token a pass ("alone-1") and at verification's width k+1 ("alone-W", the baseline the
engine uses: its greedy tokens are speculation's), speculation compiled (fixed k, and the +2/-1
schedule), and eager speculation and target alone once. Decode time per token excludes the prompt
pass. The floor is the bytes a pass must read (every weight but an untied embedding table) over
the copy bandwidth measured here. Before the rows, one pass's attention at the cache's capacity
(256 positions written) is timed, each pass's layers replayed as one CUDA graph: key/value heads
repeated per query head (transformers' compiled path), folded into the query axis through SDPA's
kernel, folded through two matrix products (playground.engine.attention's default, which the rows
use; PLAYGROUND_GQA_ATTENTION=sdpa: SDPA's kernel; PLAYGROUND_FOLD_GQA=0: no folding), and folded
through Triton's kernels (PLAYGROUND_GQA_ATTENTION=triton), with 256 and all positions written, in
chunks of 64 to 512, and as one kernel. Results also go to $OUT/gpu_check.json (or --out).

On the lent machine (see scripts/gpu_wheels.sh for the wheels it needs): a few sections per call,
since cold compiles of the 7B pair take minutes and a call has 10 (and a session 15 of device time,
its start included: one or two calls). 2026-12-04: `--only tests,triton` took 362 s and `--only tuned
--repeats 2` 327 s (BENCHMARKS.md). Next: `--only fused,fusedlayers` (about 8 min, not yet run:
the fused products' timing, launched as usual and dependent, one pass's attention each way
(Triton's as two kernels or one), then three cold compiles of the joined pair, as it is, with the
draft fused (the target too where its passes timed faster fused), and so fused and launched
dependent, their rows interleaved); at once after it `--only tests` (about 2.5 min: the GPU tests,
the fused layers and head in bfloat16 both splits, Triton's attention, kernels launched dependent)
where the draft's rounds were faster fused, else `--only pdl` (about 5 min: launched dependent or
not without the fused layers); then `ways` (about 6 min: the two attentions side by side),
`regional,whole`, `joined`, `cli,demo` and `real` when there is time. The machine goes back 30 s after a call:
make the next call at once and it keeps /tmp/site and inductor's caches, else it compiles cold. Each
step prints its start time, so a call cut off says where it was (then: fewer `--repeats` or
`--tokens`); the tests' and the CLI's output go to pytest.log, cli.log and cli.json beside the JSON.

`--rehearse` runs the same steps on a CPU with small Qwen2 shapes (tests/test_gpu_check.py runs it),
so that the lent machine's minutes are not spent finding a broken script; its figures mean nothing."""
import argparse
import contextlib
import gc
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from playground import session  # noqa: E402
from playground.engine import attention, decode_attention, dependent_launch, fused_linear, layer_regions  # noqa: E402
from playground.engine.attention import fold_grouped_heads  # noqa: E402
from playground.engine.fused import FusedProposer, Programs  # noqa: E402
from playground.engine.speculative import speculate  # noqa: E402
from playground.engine.static import StaticRunner  # noqa: E402
from playground.events import Round, committed_ids  # noqa: E402
from playground.engine.fused_layers import fuse_model, fused_models  # noqa: E402
from playground.engine.fused_linear import Blocks  # noqa: E402
from playground.models.fused_projections import fuse_projections  # noqa: E402
from playground.models.loading import Pair, load_pair  # noqa: E402

STARTED = time.perf_counter()
TESTS_TIMEOUT_S = 520  # a call has 600: about 13 cold compiles of tiny graphs and 2,500 sampled runs
CLI_TIMEOUT_S = 300
COLD_TIMEOUT_S = 420  # a cold compile of the pair, then its rows
CALL_S = 570  # a device call's 600 s, less this process's own end
WAYS = ("matmul", "triton")  # the `ways` section's two attentions, side by side


def say(message: str) -> None:
    print(f"[{time.perf_counter() - STARTED:6.0f} s] {message}", flush=True)


QWEN25_7B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                 num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False)
QWEN25_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)
SMALL_TARGET = dict(QWEN25_7B, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=1024)  # --rehearse: the same structure, a CPU's size
SMALL_DRAFT = dict(QWEN25_05B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, vocab_size=1000)


def copy_bandwidth(device: str) -> float:
    """Bytes read + written per second by a device-to-device copy (1 GiB on CUDA; median of 10)."""
    src = torch.randn(1 << (28 if device == "cuda" else 22), device=device)
    dst = torch.empty_like(src)
    times = []
    for i in range(13):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            started = time.perf_counter()
            dst.copy_(src)
            seconds = time.perf_counter() - started
        times.append(seconds) if i >= 3 else None
    return 2 * src.numel() * src.element_size() / statistics.median(times)


def device_ms(fn, device: str, calls: int = 50, timings: int = 5) -> float:
    """Milliseconds a call of fn takes on the device (median of `timings` timings of `calls` calls, after warm-up)."""
    for _ in range(timings):
        fn()
    times = []
    for _ in range(timings):
        if device == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - started) / calls)
    return 1e3 * statistics.median(times)


def graph_ms(fn, calls: int) -> float:
    """Milliseconds `calls` calls of fn take replayed as one captured CUDA graph (no launch gaps; median of 20)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    times = []
    for _ in range(23):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times[3:])


@torch.inference_mode()
def attention_costs(device: str, shapes, k: int) -> dict:
    """One pass's attention at the static cache's capacity, all layers, three ways: key/value heads
    repeated for each query head (transformers' compiled SDPA path), folded into the query axis through
    SDPA's kernel (PLAYGROUND_GQA_ATTENTION=sdpa) and folded through two matrix products
    (playground.engine.attention's default); on CUDA replayed as one graph per pass (the kernels' own time,
    as the engine's captured passes run them), 256 positions written. Each layer attends over a cache
    of its own (until 2026-12-04 one layer's was read by all: a 0.5B draft's 2 MB from the L2 cache)."""
    from transformers.integrations.sdpa_attention import repeat_kv
    from playground.engine.static import GPU_CAPACITY
    capacity, dtype = (GPU_CAPACITY, torch.bfloat16) if device == "cuda" else (512, torch.float32)
    out = {}
    for name, shape, width in (("target verify", shapes[0], k + 1), ("target step", shapes[0], 1),
                               ("draft step", shapes[1], 1)):
        heads, kv_heads = shape["num_attention_heads"], shape["num_key_value_heads"]
        dim, groups = shape["hidden_size"] // heads, heads // kv_heads
        module = torch.nn.Module()
        module.num_key_value_groups = groups
        query = torch.randn(1, heads, width, dim, device=device, dtype=dtype)
        caches = [[torch.randn(1, kv_heads, capacity, dim, device=device, dtype=dtype) for _ in range(2)]
                  for _ in range(shape["num_hidden_layers"])]  # each layer's keys and values
        mask = torch.zeros(1, 1, width, capacity, dtype=torch.bool, device=device)
        mask[..., :256] = True
        sdpa = torch.nn.functional.scaled_dot_product_attention
        folded = query.reshape(1, kv_heads, groups * width, dim)
        folded_mask = mask.repeat(1, 1, groups, 1)
        full = torch.ones_like(mask)
        ways = {"repeated": lambda key, value: sdpa(query, repeat_kv(key, groups), repeat_kv(value, groups), attn_mask=mask),
                "folded": lambda key, value: sdpa(folded, key, value, attn_mask=folded_mask),
                "folded matmul": lambda key, value: attention.matmul_attention(folded, key, value, folded_mask)}
        if device == "cuda":  # Triton's kernels read the positions the mask allows: 256, then all; three chunk sizes
            triton = decode_attention.decode_attention_impl
            ways["folded triton"] = lambda key, value: triton(folded, key, value, mask, dim ** -0.5)
            ways["folded triton, all written"] = lambda key, value: triton(folded, key, value, full, dim ** -0.5)
            ways["folded triton, one kernel"] = lambda key, value: triton(folded, key, value, mask, dim ** -0.5, None, True)
            for chunk in (64, 256, 512):
                ways[f"folded triton, chunk {chunk}"] = lambda key, value, c=chunk: triton(folded, key, value, mask,
                                                                                          dim ** -0.5, c)
        out[name] = {}
        for way, fn in ways.items():
            every_layer = lambda fn=fn: [fn(key, value) for key, value in caches]  # noqa: E731
            try:
                out[name][way] = graph_ms(every_layer, 1) if device == "cuda" else device_ms(every_layer, device)
            except Exception as exc:  # a way that fails is reported, the others still timed
                out[name][way] = float("nan")
                print(f"attention {name} {way} FAILED: {type(exc).__name__}: {exc}", flush=True)
    return out


FUSED_BLOCKS = {  # the kernel's splits `fused` times; `fusedlayers` takes the fastest for the models it fuses
    "fused": Blocks(), "fused, k 256, 3 stages": Blocks(block_k=256), "fused, k 256, 5 stages": Blocks(block_k=256, stages=5),
    "fused narrow, k 256, 6 stages": Blocks(block_k=256, stages=6, narrow_rows=4), "fused narrow, k 512": Blocks(block_k=512, narrow_rows=4),
    "fused narrow, k 512, 256 programs": Blocks(block_k=512, narrow_rows=4, programs=256)}


@torch.inference_mode()
def fused_costs(device: str, shapes, k: int) -> dict:
    """A pass's products and what surrounds them, all layers, without the attention, then the output
    head's product: as the product runs them (compiled by inductor: cuBLAS's products, its norm, SiLU
    and residual kernels) and through playground.engine.fused_linear (a layer: q/k/v with its norm, o
    with the residual, gate/up with its norm, down with the SiLU and the residual) split each way of
    FUSED_BLOCKS; on CUDA replayed as one graph a pass. Each layer has weights of its own, read from
    memory as a pass reads them (one layer's replayed 24 times would come from the L2 cache: a 0.5B
    draft's layer is 30 MB). "max difference": the largest of the outputs' differences from the
    compiled modules' over every split (rounding order only: a larger one is a fault). Kernels the
    draft's step could lose, timed alone (in rounds: `fusedlayers`)."""
    dtype = torch.bfloat16 if device == "cuda" else torch.float16  # (a CPU's float16: Triton's interpreter)
    out = {}
    for name, shape, width, part in (("target verify", shapes[0], k + 1, fused_layer), ("target step", shapes[0], 1, fused_layer),
                                     ("draft step", shapes[1], 1, fused_layer), ("target head, verify", shapes[0], k + 1, fused_head),
                                     ("draft head", shapes[1], 1, fused_head)):
        modules, fused, weights = part(shape, width, device, dtype, shape["num_hidden_layers"] if part is fused_layer else 1)
        compiled = torch.compile(modules, dynamic=False) if device == "cuda" else modules
        ways = {"compiled modules": lambda: [compiled(w) for w in weights]}
        if fused is not None:
            ways |= {way: lambda b=blocks: [fused(w, b) for w in weights] for way, blocks in FUSED_BLOCKS.items()}
        out[name] = timed_ways(name, ways, device)
        best = fastest(out, {way: way for way in FUSED_BLOCKS}, (name,)) if fused is not None else None
        if best is not None:  # the split timed fastest again, and launched dependent, its weights asked of L2 or not
            run = lambda b=FUSED_BLOCKS[best]: [fused(w, b) for w in weights]  # noqa: E731
            want = fused(weights[0], FUSED_BLOCKS[best])
            out[name] |= timed_ways(name, {f"{best}, again": run}, device)
            for way, prefetch in ((f"{best}, pdl", False), (f"{best}, pdl, prefetch", True)):
                with setting(dependent_launch, "ON", True), setting(dependent_launch, "PREFETCH", prefetch):
                    out[name] |= timed_ways(name, {way: run}, device)
                    out[name]["pdl difference, fused"] = max(out[name].get("pdl difference, fused", 0.0),
                                                             largest_difference(want, fused(weights[0], FUSED_BLOCKS[best])))
        if fused is not None:
            want = compiled(weights[0])
            out[name]["max difference"] = max(largest_difference(want, fused(weights[0], blocks))
                                              for blocks in FUSED_BLOCKS.values())
    return out


def largest_difference(want: tuple, got: tuple) -> float:
    """The largest elementwise difference between two tuples of a pass's outputs."""
    return max((a.float() - b.float()).abs().max().item() for a, b in zip(want, got))


def timed_ways(name: str, ways: dict, device: str) -> dict:
    """way -> the milliseconds its function took (a CUDA graph's replay; on a CPU once: a rehearsal's
    figures mean nothing, Triton's interpreter), NaN where it failed (reported; the others still timed)."""
    out = {}
    for way, fn in ways.items():
        try:
            out[way] = graph_ms(fn, 1) if device == "cuda" else device_ms(fn, device, 1, 1)
        except Exception as exc:
            out[way] = float("nan")
            print(f"fused {name} {way} FAILED: {type(exc).__name__}: {exc}", flush=True)
    return out


def fused_layer(shape: dict, width: int, device: str, dtype, copies: int):
    """`copies` random layers' products and what surrounds them (no attention) -> (as the modules run
    them, through fused_linear given its blocks or None where the kernel cannot run, each returning
    (q/k/v, layer out) for one layer's weights; the layers' weights)."""
    import torch.nn.functional as F
    from playground.engine import fused_linear as fl
    h, inner, heads, kv = (shape[key] for key in ("hidden_size", "intermediate_size", "num_attention_heads",
                                                  "num_key_value_heads"))
    d, eps = h // heads, 1e-6
    rand = lambda *size, scale=1.0: (torch.randn(*size, device=device) * scale).to(dtype)  # noqa: E731
    weights = [dict(qkv=rand((heads + 2 * kv) * d, h, scale=h ** -0.5), qkv_bias=rand((heads + 2 * kv) * d),
                    o=rand(h, h, scale=h ** -0.5), gate_up=rand(2 * inner, h, scale=h ** -0.5),
                    down=rand(h, inner, scale=inner ** -0.5), norm1=rand(h), norm2=rand(h)) for _ in range(copies)]
    x, attended = rand(1, width, h), rand(1, width, h)

    def rms(v, g):  # transformers' Qwen2RMSNorm
        f = v.float()
        return g * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + eps)).to(v.dtype)

    def modules(w):
        qkv = F.linear(rms(x, w["norm1"]), w["qkv"], w["qkv_bias"])
        mid = x + F.linear(attended, w["o"])
        gate, up = F.linear(rms(mid, w["norm2"]), w["gate_up"]).chunk(2, dim=-1)
        return qkv, mid + F.linear(F.silu(gate) * up, w["down"])

    def fused(w, blocks):
        qkv = fl.fused_linear(x, w["qkv"], w["qkv_bias"], prologue="norm", norm_weight=w["norm1"], eps=eps, blocks=blocks)
        mid = fl.fused_linear(attended, w["o"], residual=x, blocks=blocks)
        gate_up = fl.fused_linear(mid, w["gate_up"], prologue="norm", norm_weight=w["norm2"], eps=eps, blocks=blocks)
        return qkv, fl.fused_linear(gate_up, w["down"], prologue="gated", residual=mid, blocks=blocks)
    return modules, fused if fl.usable(x, weights[0]["qkv"]) else None, weights


def fused_head(shape: dict, width: int, device: str, dtype, copies: int):
    """`copies` random output heads' products of `width` rows, as fused_layer's (each returning a 1-tuple)."""
    import torch.nn.functional as F
    from playground.engine import fused_linear as fl
    h = shape["hidden_size"]
    weights = [(torch.randn(shape["vocab_size"], h, device=device) * h ** -0.5).to(dtype) for _ in range(copies)]
    x = torch.randn(1, width, h, device=device).to(dtype)
    fused = lambda w, blocks: (fl.fused_linear(x, w, blocks=blocks),)  # noqa: E731
    return (lambda w: (F.linear(x, w),)), fused if fl.usable(x, weights[0]) else None, weights


DRAFT_PASSES, TARGET_PASSES = ("draft step", "draft head"), ("target verify", "target step", "target head, verify")


def total(timed: dict, way: str, passes) -> float:
    """The milliseconds `way` took over these passes of `timed` (pass -> way -> ms): NaN where one was
    not timed, or failed."""
    return sum(timed.get(p, {}).get(way, float("nan")) for p in passes)


def fastest(timed: dict, ways: dict, passes):
    """Of `ways` (choice -> the way timed), the choice whose way took least time over these passes
    of `timed`; None where none was timed over all of them."""
    totals = {choice: total(timed, way, passes) for choice, way in ways.items()} if passes else {}
    done = {choice: ms for choice, ms in totals.items() if ms == ms}
    return min(done, key=done.get) if done else None


def models_to_fuse(fused_ms: dict) -> str:
    """"both" where `fused` timed the target's passes faster through the fused products (in their
    fastest split, over the passes together) than as the compiled modules, else "draft"."""
    best = fastest_blocks(fused_ms, TARGET_PASSES)
    faster = total(fused_ms, best, TARGET_PASSES) < total(fused_ms, "compiled modules", TARGET_PASSES)
    return "both" if faster else "draft"  # (NaN, not timed: the draft alone)


def fastest_blocks(fused_ms: dict, passes: tuple) -> str:
    """The FUSED_BLOCKS split whose kernels took least time over these passes of `fused` ("fused" where
    none was timed)."""
    return fastest(fused_ms, {way: way for way in FUSED_BLOCKS}, passes) or "fused"


def fastest_chunk(attention_ms: dict) -> int:
    """The chunk size whose Triton attention took least time over the three passes timed (the
    module's own when none was timed)."""
    sizes = {decode_attention.CHUNK: "folded triton", **{c: f"folded triton, chunk {c}" for c in (64, 256, 512)}}
    return fastest(attention_ms, sizes, tuple(attention_ms)) or decode_attention.CHUNK


def one_kernel_faster(attention_ms: dict) -> bool:
    """Whether Triton's attention with the combine in the split's last programs took less time over
    the passes timed than its two kernels (False where either was not timed, or failed)."""
    passes = tuple(attention_ms)  # (NaN compares False)
    return total(attention_ms, "folded triton, one kernel", passes) < total(attention_ms, "folded triton", passes)


def triton_settings(report: dict) -> None:
    """Triton's attention as timed fastest above, one setting for every Triton row of the call: the
    chunk size, and the combine in the split's last programs or a kernel of its own."""
    decode_attention.CHUNK = report.setdefault("triton_chunk", fastest_chunk(report.get("attention_ms", {})))
    decode_attention.ONE_KERNEL = report.setdefault("triton_one_kernel", one_kernel_faster(report.get("attention_ms", {})))


def read_bytes(model) -> int:
    """Bytes one pass reads: every weight, but only a row of an embedding table the head does not share."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    emb, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    return total - (emb.numel() * emb.element_size() if emb.data_ptr() != head.data_ptr() else 0)


def words_tokenizer(vocab: int):
    """A real fast tokenizer with `vocab` one-word tokens (random-weight models need no text)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=f"w{vocab - 1}")


def real_size_pair(device: str, shapes=(QWEN25_7B, QWEN25_05B)) -> Pair:
    """Random-weight models of these Qwen2 shapes (target, draft): bfloat16 on CUDA, float32 on a CPU."""
    from transformers import AutoModelForCausalLM, Qwen2Config
    models = []
    for shape in shapes:
        torch.manual_seed(0)
        with torch.device(device):
            models.append(AutoModelForCausalLM.from_config(Qwen2Config(max_position_embeddings=32768, **shape),
                                                           dtype=torch.bfloat16 if device == "cuda" else torch.float32).eval())
    target, draft = models
    if device == "cpu":  # the rehearsal attends as the GPU will (static caches fold only on CUDA by themselves)
        for model in models:
            fold_grouped_heads(model)
    return Pair(target, draft, words_tokenizer(shapes[0]["vocab_size"]), "qwen2.5-7b-shapes", "qwen2.5-0.5b-shapes",
                shapes[1]["vocab_size"], frozenset(), context=32768)


@torch.no_grad()
def predict_last_token(pair: Pair) -> None:
    """Acceptance 1 at full cost: layers add nothing, and both heads score the input token highest."""
    for model in (pair.target, pair.draft):
        for name, p in model.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                p.zero_()
    emb = pair.target.get_input_embeddings().weight  # [152064, 3584]
    pair.target.get_output_embeddings().weight.copy_(emb)
    projection = torch.randn(emb.shape[1], pair.draft.config.hidden_size, device=emb.device, dtype=emb.dtype)
    pair.draft.get_input_embeddings().weight.copy_(emb[:pair.draft.config.vocab_size] @ projection / emb.shape[1] ** 0.5)


def decode(events) -> tuple[list[int], float, list[Round]]:
    rounds = [e for e in events if isinstance(e, Round)]
    return committed_ids(rounds), sum(r.wall_s for r in rounds), rounds


def narrow_target_alone(pair: Pair, prompt: list[int], cfg):
    """The target alone replaying a one-token pass (the fastest target alone; not the engine's baseline)."""
    gc.collect()  # the compiles' runners may wait in a reference cycle, holding the model's two caches
    runner = StaticRunner(pair.target, pair.vocab, len(prompt) + cfg.max_new_tokens + 2, {(1, 1)})
    runner.warm()
    key = ("narrow", id(runner.cache), cfg.sampling)
    if key not in pair.programs:
        pair.programs[key] = Programs(runner.device_pass, None, 0, cfg.sampling, capture=pair.device.type == "cuda")
        pair.programs[key].capture_all()
    proposer = FusedProposer(pair.programs[key], runner)
    return speculate(runner, proposer, prompt, cfg, pair.eos_ids)


def timed_compile(pair, prompt, cfg, speculative=True) -> float:
    started = time.perf_counter()
    session.compile_graphs(pair, len(prompt), cfg, speculative=speculative)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - started


def measure(pair: Pair, prompt: list[int], tokens: int, k: int, repeats: int, floor_s: float) -> dict:
    """Every row of one setting, interleaved; -> {row: stats}. A step that crashes is a finding: its
    traceback goes under "failed" and the other rows are measured (device time is scarce)."""
    spec = session.spec_config(k=k, max_new_tokens=tokens, compile=True)
    sched = session.spec_config(k=k, max_new_tokens=tokens, compile=True, policy="schedule")
    eager = session.spec_config(k=k, max_new_tokens=min(tokens, 48))  # eager is slow: fewer tokens say enough
    out: dict = {"failed": {}}
    attempt = lambda name, fn: attempted(out["failed"], name, fn)  # noqa: E731
    say(f"compiling k={k} (speculative, schedule, the target alone at k+1 tokens a pass)")
    out["compile_s"] = {"speculative": attempt("compile speculative", lambda: timed_compile(pair, prompt, spec)),
                        "schedule": attempt("compile schedule", lambda: timed_compile(pair, prompt, sched)),
                        "alone-W": attempt("compile alone-W", lambda: timed_compile(pair, prompt, spec, speculative=False))}
    say(f"compiled: {json.dumps(rounded(out['compile_s']))} s; the one-token target alone")
    runs = {"alone-1": lambda: narrow_target_alone(pair, prompt, spec),
            "alone-W": lambda: session.generate(pair, prompt, spec, speculative=False),
            f"spec k={k}": lambda: session.generate(pair, prompt, spec),
            f"spec k<={k} schedule": lambda: session.generate(pair, prompt, sched)}
    started = time.perf_counter()
    if attempt("alone-1", lambda: list(runs["alone-1"]())) is not None:  # its pass compiled and captured here
        out["compile_s"]["alone-1 (first run)"] = time.perf_counter() - started  # outside the timed repeats
    seen: dict = {name: [] for name in runs if name not in out["failed"]}
    say(f"{repeats} interleaved repeats of {', '.join(seen)}")
    for _ in range(repeats):
        for name in [n for n in seen if n not in out["failed"]]:
            if (result := attempt(name, lambda: decode(runs[name]()))) is not None:
                seen[name].append(result)
    for name, cfg in (("eager alone", eager), (f"eager spec k={k}", eager)):
        if (result := attempt(name, lambda: decode(session.generate(pair, prompt, cfg, speculative="spec" in name)))):
            seen[name] = [result]
    say("profiling one speculative run (kernels per round against its wall time)")
    out["profile"] = attempt("profile", lambda: kernel_profile(pair, prompt, spec))
    out["profile alone-W"] = attempt("profile alone-W", lambda: kernel_profile(pair, prompt, spec, speculative=False))
    if out["profile"] and out["profile alone-W"]:  # a fixed-k round: k draft steps, then the verify program
        out["draft_step_kernels"] = (out["profile"]["kernels_per_round"] - out["profile alone-W"]["kernels_per_round"]) / k
    say("eager rows done; a second prompt of another length (must compile nothing)")
    attempt("second prompt", lambda: out.update(second_prompt(pair, prompt, spec, tokens, k)))
    for name, results in seen.items():  # greedy identity: compiled rows against the compiled target alone at
        baseline = "eager alone" if name.startswith("eager") else "alone-W"  # k+1 a pass, eager against eager
        exact = seen[baseline][0][0] if seen.get(baseline) else None
        if results:
            out[name] = row(results, exact, seen.get("alone-1", []), floor_s, tokens) | {
                "compared_with": baseline if exact is not None else f"{baseline} (failed)"}
    return out


def kernel_profile(pair: Pair, prompt: list[int], cfg, top: int = 40, speculative: bool = True) -> dict:
    """One run under torch.profiler: the GPU's kernels per round (count, the sum of their run
    times) against the round's wall time (the difference is launch gaps and waits), and the
    kernels taking the most time. The target alone at verification's width (speculative=False)
    replays the verify program alone: a speculative round's kernels less its are the draft's.
    On a CPU (the rehearsal) there are no device kernels to count."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        _, wall, rounds = decode(session.generate(pair, prompt, cfg, speculative=speculative))
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    by_name: dict = {}
    for e in kernels:
        count, us = by_name.get(e.name, (0, 0.0))
        by_name[e.name] = (count + 1, us + e.device_time)
    n = max(1, len(rounds))
    return {"rounds": len(rounds), "ms_per_round": 1e3 * wall / n, "kernels_per_round": len(kernels) / n,
            "kernel_ms_per_round": sum(e.device_time for e in kernels) / 1e3 / n,
            "top": [{"kernel": name[:90], "per_round": c / n, "us_per_round": us / n, "us_each": us / c}
                    for name, (c, us) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]]}


def attempted(failed: dict, name: str, fn):
    """fn() -> its value, or None with the traceback kept in failed[name] and said at once."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - any crash of a step is what this check reports
        failed[name] = traceback.format_exc(limit=12)
        say(f"{name} FAILED: {type(exc).__name__}: {str(exc)[:300]}")
        return None


def rounded(seconds: dict) -> dict:
    return {name: None if v is None else round(v, 1) for name, v in seconds.items()}


def second_prompt(pair: Pair, prompt: list[int], spec, tokens: int, k: int) -> dict:
    """A prompt of another length must compile and capture nothing: -> its compile seconds, new graphs, new programs."""
    second = prompt[: len(prompt) // 2 + 3]
    graphs, programs = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs"), programs_made(pair)
    seconds = timed_compile(pair, second, spec) + timed_compile(pair, second, spec, False)
    list(session.generate(pair, second, session.spec_config(k=k, max_new_tokens=tokens + 7, compile=True)))
    return {"second_prompt_compile_s": seconds,
            "second_prompt_new_graphs": (dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") or 0) - (graphs or 0),
            "second_prompt_new_programs": programs_made(pair) - programs}


def programs_made(pair: Pair) -> int:
    """Round programs and per-pass graphs made so far (captured CUDA graphs on a GPU)."""
    rounds = sum(len(p._drafting) + (p._verifying is not None) for p in pair.programs.values())
    caches = [c for m in (pair.target, pair.draft) for cs in m.__dict__.get("_playground_caches", {}).values() for c in cs]
    return rounds + sum(len(c.graphs) for c in caches)


def row(results, exact: list[int], narrow, floor_s: float, tokens: int) -> dict:
    per_token = [wall / max(1, len(ids)) for ids, wall, _ in results]
    rounds = [r for _, _, rs in results for r in rs]
    drafted = [r for r in rounds if r.draft_passes]
    ids = results[0][0]
    speedups = [(n[1] / len(n[0])) / (wall / len(ids_)) for (ids_, wall, _), n in zip(results, narrow)]  # per token
    return {"ms_per_token": 1e3 * statistics.median(per_token), "ms_per_token_range": [1e3 * min(per_token), 1e3 * max(per_token)],
            "tok_s": 1 / statistics.median(per_token), "x_floor": statistics.median(per_token) / floor_s,
            "ms_per_round": 1e3 * statistics.median(r.wall_s for r in rounds),
            "draft_step_ms": 1e3 * statistics.median(r.draft_s / r.draft_passes for r in drafted) if drafted else None,
            "verify_ms": 1e3 * statistics.median(r.target_s for r in rounds),
            "tokens_per_round": len(ids) / max(1, len(results[0][2])),
            "speedup_vs_alone1": (statistics.median(speedups), min(speedups), max(speedups)) if speedups else None,
            "identical": None if exact is None else ids == exact[:len(ids)],  # None: its baseline crashed
            "first_divergence": None if exact is None else first_divergence(ids, exact[:len(ids)]),
            "tokens": len(ids)}


def first_divergence(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def run_logged(cmd: list[str], log: str, timeout: int, stdout: str | None = None, env: dict | None = None
               ) -> tuple[int | None, str]:
    """Run cmd with its output written to `log` as it comes (its stdout to the file `stdout` when
    given), so a run cut off by the timeout still leaves what it printed there and in the call's
    output -> (rc, None when timed out; the log's text)."""
    with open(log, "w") as sink, open(stdout or os.devnull, "w") as out:
        try:
            rc = subprocess.run(cmd, stdout=out if stdout else sink, stderr=sink, timeout=timeout, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = None
    text = open(log, errors="replace").read()  # a process killed mid-character leaves half of one
    print(text[-4000:], flush=True)
    return rc, text


def run_tests(out: str) -> dict:
    """tests/test_gpu.py alone (the other test files need gradio, which the device image lacks)."""
    rc, text = run_logged([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "--durations=15", "tests/test_gpu.py"],
                          os.path.join(out, "pytest.log"), TESTS_TIMEOUT_S)
    summary = [line for line in text.splitlines() if " passed" in line or " failed" in line or " error" in line][-1:]
    return {"rc": rc, "summary": summary if rc is not None else [f"timed out after {TESTS_TIMEOUT_S} s"] + summary}


def run_cli(device: str, out: str) -> dict:
    cmd = [sys.executable, "-m", "playground", "generate", "--preset", "demo", "--device", device, "--compile",
           "--baseline", "--json"]
    report = os.path.join(out, "cli.json")
    rc, text = run_logged(cmd, os.path.join(out, "cli.log"), CLI_TIMEOUT_S, stdout=report)
    if rc != 0:
        return {"rc": rc, "error": text[-1500:] if rc is not None else f"timed out after {CLI_TIMEOUT_S} s"}
    told = json.load(open(report))
    return {"rc": 0, "speedup": told.get("speedup"), "identical": told.get("identical_to_baseline"),
            "compile_s": told.get("compile_s"), "tokens_per_s": told["stats"]["tokens_per_s"]}


def run_cold(args, name: str) -> dict:
    """`--only joined` in a process of its own whose inductor and Triton caches start empty (a cold
    compile, as on a fresh Space), compiled by layer (name "regional") or as whole models ("whole"):
    -> its two settings as "<name> acceptance 0/1"."""
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    caches = tempfile.mkdtemp(prefix="inductor-cold-")
    env = os.environ | {"TORCHINDUCTOR_CACHE_DIR": caches, "TRITON_CACHE_DIR": os.path.join(caches, "triton"),
                        "PLAYGROUND_REGIONAL_COMPILE": "1" if name == "regional" else "0"}
    cmd = [sys.executable, os.path.abspath(__file__), "--only", "joined", "--tokens", str(args.tokens),
           "--repeats", str(args.repeats), "--k", str(args.k), "--out", out, "--cold-child"] + (["--rehearse"] if args.rehearse else [])
    found = os.path.join(out, "gpu_check.json")
    if os.path.exists(found):
        os.remove(found)  # a report left by an earlier run is not this one's
    gc.collect()  # the pairs measured before in this process leave the GPU's memory to the child
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    timeout = max(60, min(COLD_TIMEOUT_S, int(CALL_S - (time.perf_counter() - STARTED))))  # within the call
    rc, _ = run_logged(cmd, os.path.join(out, "gpu_check.log"), timeout, env=env)
    try:
        child = json.load(open(found))
    except (OSError, ValueError) as exc:  # cut off before its first save, or mid-save
        return {f"{name}_rc": rc, "failed": {f"{name} report": repr(exc)}}
    return {f"{name}_rc": rc, "failed": {f"{name}: {step}": trace for step, trace in child.get("failed", {}).items()}
            } | {key.replace("joined", name, 1): value for key, value in child.items()
                 if key.startswith("joined acceptance")}


def print_table(name: str, result: dict) -> None:
    second = (f"{result['second_prompt_compile_s']:.2f} s, {result['second_prompt_new_graphs']} new graphs, "
              f"{result['second_prompt_new_programs']} new programs" if "second_prompt_compile_s" in result
              else "FAILED" if "second prompt" in result.get("failed", {}) else "not run here")
    print(f"\n{name}: compile {json.dumps(rounded(result['compile_s']))} s; second prompt {second}")
    print(f"{'row':24} {'tok/s':>7} {'ms/tok':>14} {'x floor':>7} {'ms/round':>8} {'draft ms':>8} {'verify ms':>9} "
          f"{'tok/round':>9} {'vs alone-1':>18} identical (greedy, to)")
    for label, r in result.items():
        if not isinstance(r, dict) or "tok_s" not in r:
            continue
        span = f"{r['ms_per_token']:.2f} ({r['ms_per_token_range'][0]:.2f}-{r['ms_per_token_range'][1]:.2f})"
        vs = "{:.2f}x ({:.2f}-{:.2f})".format(*r["speedup_vs_alone1"]) if r["speedup_vs_alone1"] else "-"
        draft = f"{r['draft_step_ms']:.3f}" if r["draft_step_ms"] is not None else "-"
        same = ("-" if r["identical"] is None else "yes" if r["identical"] else f"no (token {r['first_divergence']})"
                ) + f" vs {r['compared_with']}"
        print(f"{label:24} {r['tok_s']:7.1f} {span:>14} {r['x_floor']:7.2f} {r['ms_per_round']:8.2f} {draft:>8} "
              f"{r['verify_ms']:9.2f} {r['tokens_per_round']:9.2f} {vs:>18} {same}")
    if result.get("profile"):
        pr = result["profile"]
        print(f"profile of spec: {pr['ms_per_round']:.2f} ms a round, {pr['kernels_per_round']:.0f} kernels "
              f"running {pr['kernel_ms_per_round']:.2f} ms of it; the most time:")
        for t in pr["top"][:12]:  # the JSON keeps more
            print(f"  {t['us_per_round']:8.1f} us/round  {t['per_round']:5.1f}x {t['us_each']:7.1f} us  {t['kernel']}")
    if result.get("draft_step_kernels") is not None:
        print(f"kernels: {result['profile alone-W']['kernels_per_round']:.0f} a verify pass (the target alone's round), "
              f"{result['draft_step_kernels']:.0f} a draft step (the rest of a speculative round, over k)")
    for step, trace in result.get("failed", {}).items():
        print(f"FAILED {step}:\n{trace}")


def both_settings(report: dict, key: str, title: str, pair: Pair, prompt, args, floor: float, save) -> None:
    """The pair's rows as built (random weights: acceptance ~0), then as last-token predictors (acceptance 1)."""
    report[f"{key} acceptance 0"] = measure(pair, prompt, args.tokens, args.k, args.repeats, floor)
    print_table(f"{title}, random weights (acceptance ~0)", report[f"{key} acceptance 0"])
    save()
    if attempted(report.setdefault("failed", {}), f"{key}: last-token predictors", lambda: predict_last_token(pair) or True):
        report[f"{key} acceptance 1"] = measure(pair, prompt, args.tokens, args.k, args.repeats, floor)
        print_table(f"{title}, last-token predictors (acceptance 1)", report[f"{key} acceptance 1"])
    save()


def joined_variant(report: dict, key: str, title: str, device: str, shapes, prompt, args, save, way: str,
                   inductor: dict) -> None:
    """both_settings on a fresh joined pair attending `way`, compiled under these inductor settings."""
    import torch._inductor.config as inductor_config
    if way == "triton":
        triton_settings(report)
    with setting(attention, "WAY", way), inductor_config.patch(inductor):
        pair = joined_pair(report, device, shapes, name=key)
        floor = read_bytes(pair.target) / report["copy_bytes_per_s"]
        both_settings(report, key, title, pair, prompt, args, floor, save)


def joined_pair(report: dict, device: str, shapes, fused_layers: str = "off", name: str = "joined") -> Pair:
    """A random pair of these shapes with each layer's projections joined (modules joined per model
    go to report["joined_modules"], the same in each), and the models `fused_layers` names (off,
    draft, both) given the fused layers and head (per model, layers and heads fused:
    report["fused_layers"][name])."""
    pair = real_size_pair(device, shapes)
    report["joined_modules"] = [fuse_projections(model) for model in (pair.target, pair.draft)]
    fused = fused_models(pair.target, pair.draft, fused_layers)
    report.setdefault("fused_layers", {})[name] = [fuse_model(model) if model in fused else 0
                                                   for model in (pair.target, pair.draft)]
    return pair


@contextlib.contextmanager
def setting(module, name: str, value):
    """module.name set to value while the block runs: attention.WAY (read as a pass is traced),
    dependent_launch.ON and PREFETCH (read as passes compile and their graphs are captured)."""
    before = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, before)


@contextlib.contextmanager
def variant(way: str, pdl: bool):
    """A side-by-side variant's attention way and launching dependent, while it is built and run."""
    with setting(attention, "WAY", way), setting(dependent_launch, "ON", pdl):
        yield


def prefetch_pays(fused_ms: dict) -> bool:
    """Whether `fused` timed the fused products launched dependent faster with their weights asked of
    L2 first, over the passes timed both ways (True, the module's default, where none was)."""
    pairs = [(t[way], t[f"{way}, prefetch"]) for t in fused_ms.values() for way in t
             if way.endswith(", pdl") and f"{way}, prefetch" in t]
    return not pairs or sum(b for _, b in pairs) < sum(a for a, _ in pairs)


def side_by_side(report: dict, key: str, variants: dict, device: str, shapes, prompt, args, save) -> None:
    """The joined pair built once per variant (name -> (attention way, fused layers: off, draft or
    both, launched dependent: PLAYGROUND_PDL)), each compiled in this process (Triton's attention as
    timed fastest: triton_settings); then at acceptance ~0 and 1 the variants' rows interleaved run
    by run, each run under its own settings: -> "<key> <name> acceptance <a>" (print_table's rows)
    and, for each variant against each earlier one, "<key> <later> vs <earlier> acceptance <a>" (per
    row, the earlier's ms a token over the later's in each repeat: median, min, max; above 1 the
    later is faster). `ways`: the figure that decides attention's default on a GPU; `fusedlayers`:
    whether the fused layers pay in rounds, and launched dependent; `pdl`: whether launching
    dependent pays without them."""
    triton_settings(report)
    spec = session.spec_config(k=args.k, max_new_tokens=args.tokens, compile=True)
    sched = session.spec_config(k=args.k, max_new_tokens=args.tokens, compile=True, policy="schedule")
    pairs, failed = {}, report.setdefault("failed", {})
    for name, (way, fused, pdl) in variants.items():
        say(f"building the joined pair for {key} {name}, compiling it (spec, schedule, alone-W, alone-1)")
        with variant(way, pdl):
            pair = joined_pair(report, device, shapes, fused, f"{key} {name}")
            started = time.perf_counter()
            if attempted(failed, f"{key} {name}: compile", lambda: compile_rows(pair, prompt, spec, sched)):
                pairs[name] = pair
                report[f"{key} {name} compile_s"] = time.perf_counter() - started
    if not pairs:
        return
    floor = read_bytes(next(iter(pairs.values())).target) / report["copy_bytes_per_s"]
    runs = {"alone-1": lambda pair: narrow_target_alone(pair, prompt, spec),
            "alone-W": lambda pair: session.generate(pair, prompt, spec, speculative=False),
            f"spec k={args.k}": lambda pair: session.generate(pair, prompt, spec),
            f"spec k<={args.k} schedule": lambda pair: session.generate(pair, prompt, sched)}
    for acceptance in (0, 1):
        if acceptance:
            for pair in pairs.values():
                torch.manual_seed(1)  # the same projection for each: the same weights, the same tokens
                predict_last_token(pair)
        say(f"acceptance {'1' if acceptance else '~0'}: {args.repeats} repeats, each variant's rows in turn")
        seen = {(name, run): [] for name in pairs for run in runs}
        for _ in range(args.repeats):
            for (name, run), results in seen.items():
                with variant(variants[name][0], variants[name][2]):
                    if (result := attempted(failed, f"{key} {name} {run}", lambda: decode(runs[run](pairs[name])))):
                        results.append(result)
        for name in pairs:
            exact = (seen[(name, "alone-W")] or [[None]])[0][0]
            report[f"{key} {name} acceptance {acceptance}"] = {
                run: row(seen[(name, run)], exact, seen[(name, "alone-1")], floor, args.tokens) | {"compared_with": "alone-W"}
                for run in runs if seen[(name, run)]} | {"compile_s": {"all": report.get(f"{key} {name} compile_s")}}
            print_table(f"joined pair, {key} {name}, acceptance {'1' if acceptance else '~0'}",
                        report[f"{key} {name} acceptance {acceptance}"])
        for first, other in itertools.combinations(pairs, 2):  # each later variant against each earlier one
            ratios = {run: ratio_range(seen[(first, run)], seen[(other, run)]) for run in runs}
            report[f"{key} {other} vs {first} acceptance {acceptance}"] = ratios | {
                "same tokens": (seen[(first, "alone-W")] or [[None]])[0][0] == (seen[(other, "alone-W")] or [[0]])[0][0]}
            print(f"{other} against {first} (speed, per repeat): " + "; ".join(
                f"{run} {r[0]:.3f}x ({r[1]:.3f}-{r[2]:.3f})" for run, r in ratios.items() if r), flush=True)
        save()


def fused_split(report: dict, key: str, args, which: str) -> None:
    """fused_linear.BLOCKS for the rows of the models `which` names (-> report[key]): --fused-blocks,
    else the split `fused` timed fastest over their passes in this call, else the module's default;
    and their weights asked of L2 first, launched dependent, unless `fused` timed that slower
    (-> report["pdl_prefetch"])."""
    passes = DRAFT_PASSES + (TARGET_PASSES if which == "both" else ())
    report[key] = args.fused_blocks or fastest_blocks(report.get("fused_ms", {}), passes)
    fused_linear.BLOCKS = FUSED_BLOCKS[report[key]]
    dependent_launch.PREFETCH = report["pdl_prefetch"] = prefetch_pays(report.get("fused_ms", {}))


def compile_rows(pair: Pair, prompt: list[int], spec, sched) -> bool:
    """Compile (and on CUDA capture) every pass the `ways` rows replay: speculation fixed and scheduled,
    the target alone at k+1 tokens a pass, and at one (its first run)."""
    for cfg, speculative in ((spec, True), (sched, True), (spec, False)):
        timed_compile(pair, prompt, cfg, speculative=speculative)
    return bool(list(narrow_target_alone(pair, prompt, spec)))


def ratio_range(base: list, other: list) -> list | None:
    """Per repeat, base's seconds a token over other's (above 1: other is faster) -> [median, min, max]."""
    ratios = [(b[1] / len(b[0])) / (o[1] / len(o[0])) for b, o in zip(base, other)]
    return [statistics.median(ratios), min(ratios), max(ratios)] if ratios else None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="tests,cli,demo,real,joined,triton,ways,whole,regional")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--rehearse", action="store_true", help="on a CPU with small shapes (see above)")
    parser.add_argument("--fused-layers", choices=("auto", "draft", "both"), default="auto",
                        help="the models whose layers and head `fusedlayers` runs through the fused products "
                        "(auto: both where `fused` timed the target's passes faster fused, else the draft); "
                        "the models `pdl` fuses (auto: none)")
    parser.add_argument("--fused-blocks", choices=tuple(FUSED_BLOCKS), help="the split of the fused products "
                        "(default: the one `fused` timed fastest in this call, else the module's default)")
    parser.add_argument("--cold-child", action="store_true", help="run by the `whole` and `regional` sections "
                        "(their parent timed attention)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)  # (a new folder named by --out: its first log was a FileNotFoundError)
    import platform
    import transformers
    device = "cpu" if args.rehearse else "cuda"
    shapes = (SMALL_TARGET, SMALL_DRAFT) if args.rehearse else (QWEN25_7B, QWEN25_05B)
    report = {"device": (platform.processor() or "cpu") if args.rehearse else torch.cuda.get_device_name(),
              "torch": torch.__version__, "transformers": transformers.__version__, "rehearsal": args.rehearse,
              "gqa_attention": attention.WAY, "regional_compile": layer_regions.by_layer_on(torch.device(device)),
              "copy_bytes_per_s": copy_bandwidth(device)}
    print(f"{report['device']}, torch {torch.__version__}, transformers {transformers.__version__}: copy "
          f"{report['copy_bytes_per_s'] / 1e12:.2f} TB/s (read + written)", flush=True)
    only = args.only.split(",")
    save = lambda: json.dump(report, open(os.path.join(args.out, "gpu_check.json"), "w"), indent=1, default=str)  # noqa: E731
    if "tests" in only:
        say("pytest -m gpu tests/test_gpu.py")
        report["tests"] = run_tests(args.out)
        save()
    prompt = list(range(100, 228) if args.rehearse else range(1000, 1128))  # ids both models have
    if {"real", "joined", "triton", "ways", "fusedlayers", "pdl"} & set(only) and not args.cold_child:
        report["attention_ms"] = attempted(report.setdefault("failed", {}), "attention",
                                           lambda: attention_costs(device, shapes, args.k)) or {}
        print("attention per pass, all layers (ms): " + "; ".join(
            f"{name}: " + ", ".join(f"{way} {ms:.3f}" for way, ms in t.items()) for name, t in report["attention_ms"].items()),
            flush=True)
        save()
    if "fused" in only:  # playground.engine.fused_linear against the compiled modules, no model built
        say("a layer's products with their norms, SiLU and residuals fused, against the compiled modules")
        report["fused_ms"] = attempted(report.setdefault("failed", {}), "fused", lambda: fused_costs(device, shapes, args.k)) or {}
        print("products per pass, all layers (ms): " + "; ".join(
            f"{name}: " + ", ".join(f"{way} {ms:.4g}" for way, ms in t.items()) for name, t in report["fused_ms"].items()),
            flush=True)
        save()
    if "real" in only:
        say("building the Qwen2.5-7B/0.5B-shaped pair (random weights)")
        pair = real_size_pair(device, shapes)
        floor = read_bytes(pair.target) / report["copy_bytes_per_s"]
        report["floor_ms"] = {"target": 1e3 * floor, "draft": 1e3 * read_bytes(pair.draft) / report["copy_bytes_per_s"]}
        print(f"floors: target {report['floor_ms']['target']:.2f} ms, draft {report['floor_ms']['draft']:.3f} ms", flush=True)
        report["attention"] = {name: m.config._attn_implementation for name, m in (("target", pair.target), ("draft", pair.draft))}
        both_settings(report, "real", "Qwen2.5-7B/0.5B shapes", pair, prompt, args, floor, save)
        del pair
    if "joined" in only:  # the same pair with its projections joined (playground.models.fused_projections)
        say("building the Qwen2.5-7B/0.5B-shaped pair again, its projections joined")
        joined_variant(report, "joined", "Qwen2.5-7B/0.5B shapes, projections joined", device, shapes, prompt, args,
                       save, attention.WAY, {})
    if "triton" in only:  # the joined pair attending through Triton's kernels (PLAYGROUND_GQA_ATTENTION=triton)
        say("building the Qwen2.5-7B/0.5B-shaped pair again, joined, attending through Triton's kernels "
            "(in chunks of the size timed fastest above)")
        joined_variant(report, "triton", "Qwen2.5-7B/0.5B shapes, joined, Triton attention", device, shapes, prompt,
                       args, save, "triton", {})
    if "ways" in only:  # the joined pair through the matrix products and through Triton, interleaved
        side_by_side(report, "ways", {way: (way, "off", dependent_launch.ON) for way in WAYS}, device, shapes, prompt,
                     args, save)
    if "fusedlayers" in only:  # playground.engine.fused_layers (opt-in: PLAYGROUND_FUSED_LAYERS) beside the layers' own
        which = report["fused_models"] = args.fused_layers if args.fused_layers != "auto" else models_to_fuse(
            report.get("fused_ms", {}))
        fused_split(report, "fused_blocks", args, which)
        say(f"the joined pair with Triton attention, again with the {which} model's layers and head fused "
            f"({report['fused_blocks']}), and so launched dependent, side by side")
        side_by_side(report, "fusedlayers", {"triton": ("triton", "off", False), f"{which} fused": ("triton", which, False),
                                             f"{which} fused, pdl": ("triton", which, True)}, device, shapes, prompt, args, save)
    if "pdl" in only:  # playground.engine.dependent_launch (opt-in: PLAYGROUND_PDL) beside kernels launched as usual
        which = report["pdl_fused_models"] = args.fused_layers if args.fused_layers != "auto" else "off"
        fused_split(report, "pdl_fused_blocks", args, which)
        say(f"the joined pair with Triton attention ({which} fused), and again launched dependent, side by side")
        side_by_side(report, "pdl", {"triton": ("triton", which, False), "triton pdl": ("triton", which, True)},
                     device, shapes, prompt, args, save)
    if "tuned" in only:  # an experiment, not the product's build: inductor benchmarks Triton templates for every
        say("the joined pair with Triton attention again, compiled with inductor's max-autotune and "  # product
            "coordinate-descent tuning (compiles for minutes)")
        joined_variant(report, "tuned", "Qwen2.5-7B/0.5B shapes, joined, Triton attention, max-autotune", device, shapes,
                       prompt, args, save, "triton", {"max_autotune": True, "coordinate_descent_tuning": True})
    for name, how in (("regional", "by layer"), ("whole", "as whole models")):  # cold, each in its own process
        if name not in only:
            continue
        say(f"the joined pair compiled {how}, in a process of its own with empty compile caches")
        found = run_cold(args, name)
        report.setdefault("failed", {}).update(found.pop("failed", {}))
        report.update(found)
        for setting in (f"{name} acceptance 0", f"{name} acceptance 1"):
            if setting in report:
                print_table(f"Qwen2.5-7B/0.5B shapes, joined, compiled {how}, cold: {setting.split(' ', 1)[1]}",
                            report[setting])
        save()
    if "cli" in only:
        say("the CLI: generate --preset demo --compile --baseline")
        report["cli"] = run_cli(device, args.out)
        print("cli", report["cli"], flush=True)
        save()
    if "demo" in only:
        say("the demo pair")
        pair = load_pair("demo-target", "demo-draft", device=device)
        demo_prompt = session.encode_prompt(pair, open(os.path.join(os.path.dirname(__file__), "..", "playground",
                                                                     "engine", "speculative.py")).read()[:600])
        floor = read_bytes(pair.target) / report["copy_bytes_per_s"]
        report["demo"] = measure(pair, demo_prompt, args.tokens, args.k, args.repeats, floor)
        print_table("demo pair", report["demo"])
        save()
        del pair
    print_bars(report, args.k)
    return report


def print_bars(report: dict, k: int) -> None:
    """Each real-size setting against issue 30's bars (the target alone within 1.3x its floor, a
    draft step under 1 ms, at acceptance 1 at least 3x the target alone, at ~0 no worse than 0.8x)."""
    for key in [name[:-len(" acceptance 0")] for name in report if name.endswith(" acceptance 0")]:
        zero, one = report.get(f"{key} acceptance 0", {}), report.get(f"{key} acceptance 1", {})
        if not (isinstance(zero.get("alone-1"), dict) and one.get(f"spec k={k}")):  # (not "<a> vs <b>"'s ratios)
            continue
        fixed, schedule = one[f"spec k={k}"], zero.get(f"spec k<={k} schedule", {})
        checks = [("target alone x floor", zero["alone-1"]["x_floor"], "<=", 1.3),
                  ("draft step ms", fixed["draft_step_ms"], "<", 1.0),
                  ("acceptance 1 vs alone-1", fixed["speedup_vs_alone1"][0], ">=", 3.0),
                  ("acceptance ~0 vs alone-1 (schedule)", (schedule.get("speedup_vs_alone1") or [float("nan")])[0], ">=", 0.8)]
        print(f"bars, {key}: " + "; ".join(
            f"{name} {value:.2f} ({'met' if (value <= bar if op == '<=' else value < bar if op == '<' else value >= bar) else 'not met'}"
            f", bar {op} {bar})" for name, value, op, bar in checks), flush=True)


if __name__ == "__main__":
    main()
