"""The compiled CUDA path on a GPU (marked `gpu`: skipped without CUDA; scripts/gpu_check.py runs
them): passes and whole rounds replayed from captured CUDA graphs keep greedy identity with the
target alone at verification's width, the target's sampling distribution, constraints, and compile
nothing for a second prompt; `--compile` on CUDA runs from the CLI."""
import json

import pytest
import torch

from playground import session
from playground.constraints import from_user
from tests import tiny
from tests.test_engine_greedy import PROMPT
from tests.test_engine_sampling import N_RUNS, P_MIN, PROMPT as SAMPLING_PROMPT, chi_square_p, exact_joint

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def compiled(k: int, max_new_tokens: int, **kw):
    return session.spec_config(k=k, max_new_tokens=max_new_tokens, compile=True, **kw)


@pytest.fixture(scope="module")
def cuda_pair(tokenizer):
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id).cuda()
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3).cuda()
    return tiny.make_pair(target, draft, tokenizer, eos_ids=[])


def test_fused_rounds_are_captured_and_exact(cuda_pair, tokenizer):
    prompt = tokenizer(PROMPT).input_ids
    assert session.choice.fuses(cuda_pair, compiled(3, 40), True, True, len(prompt))
    for k in (1, 3, 5):
        cfg = compiled(k, 40)
        spec = session.run(cuda_pair, prompt, cfg)
        alone = session.run(cuda_pair, prompt, cfg, speculative=False)
        assert spec.token_ids == alone.token_ids and len(spec.token_ids) == 40, k
        assert 0 < spec.stats["accepted"] < spec.stats["proposed"]
    graphs = [p for p in cuda_pair.programs.values()]
    assert graphs and all(p.capture for p in graphs)
    caches = [c for m in (cuda_pair.target, cuda_pair.draft) for cs in m.__dict__["_playground_caches"].values() for c in cs]
    assert not [key for c in caches for key in c.graphs if key[0] == "pass"]  # whole rounds replay, no pass alone


def test_a_second_prompt_compiles_nothing(cuda_pair, tokenizer):
    prompt = tokenizer(PROMPT).input_ids
    session.run(cuda_pair, prompt, compiled(4, 30))
    before = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs")
    made = set(cuda_pair.programs)
    for ids, tokens in ((prompt[:5], 60), (prompt + prompt, 17)):
        assert session.compile_graphs(cuda_pair, len(ids), compiled(4, tokens)) == 0.0
        session.run(cuda_pair, ids, compiled(4, tokens))
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == before
    assert set(cuda_pair.programs) == made


@pytest.mark.parametrize("setting", ["", "0"])
def test_rounds_compiled_by_layer_or_whole_are_captured_and_exact(setting, tokenizer, monkeypatch):
    """On CUDA models compile by layer by default (playground.engine.layer_regions: one compiled body
    per layer class, called per layer inside the captured rounds); PLAYGROUND_REGIONAL_COMPILE=0 whole."""
    monkeypatch.setenv("PLAYGROUND_REGIONAL_COMPILE", setting)
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), layers=3, seed=11, eos_id=tokenizer.eos_token_id).cuda()
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, noise=0.4, seed=3).cuda(), tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(3, 40)
    spec = session.run(pair, prompt, cfg)
    assert spec.token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids
    assert 0 < spec.stats["accepted"] < spec.stats["proposed"]
    by_layer = [("forward" in layer.__dict__) for m in (pair.target, pair.draft) for layer in m.model.layers]
    assert by_layer == [setting != "0"] * len(by_layer)
    assert pair.programs and all(p.capture for p in pair.programs.values())


def test_sampling_distribution_captured():
    tok = tiny.letters_tokenizer(12)
    target = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=21, eos_id=11, init_std=0.6)
    draft = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=22, eos_id=11, init_std=0.6)
    expected = exact_joint(target, 3, dict(temperature=1.0, top_k=0, top_p=1.0))
    pair = tiny.make_pair(target.cuda(), draft.cuda(), tok, eos_ids=[])
    counts = {}
    for seed in range(N_RUNS):
        ids = tuple(session.run(pair, SAMPLING_PROMPT, compiled(2, 3, seed=seed, temperature=1.0)).token_ids)
        counts[ids] = counts.get(ids, 0) + 1
    assert chi_square_p(counts, expected, N_RUNS) > P_MIN


def test_constrained_compiled_run_on_cuda(cuda_pair, tokenizer):
    """Constrained runs replay captured per-pass graphs (the grammar reads each draft on the host)."""
    constraint = session.constrain(cuda_pair, from_user(regex=r"[a-z]{3,12}"))
    prompt = tokenizer(PROMPT).input_ids
    result = session.run(cuda_pair, prompt, compiled(3, 20), constraint=constraint)
    assert result.valid, result.validation_error


def test_cli_compile_on_cuda(capsys):
    from playground.cli import main
    assert main(["generate", "--preset", "demo", "--device", "cuda", "--compile", "--baseline", "--json",
                 "--max-new-tokens", "64"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["identical_to_baseline"] is True and out["compile_s"] >= 0 and len(out["token_ids"]) == 64


def test_the_start_up_warm_up_leaves_the_first_run_nothing_to_compile():
    """app.py on a GPU host (playground.ui.warm_up): the default run's passes compiled and its rounds
    captured before the page is served; a visitor's run of another prompt makes neither."""
    import dataclasses
    from playground.presets import Settings, all_presets
    from playground.ui import live, warm_up  # (no Gradio: the lent GPU machine has none)
    settings = dataclasses.replace(Settings.from_preset(all_presets()["demo"]), max_new_tokens=48)
    assert warm_up.wanted() and settings.compile and warm_up.warm_up(settings) is not None
    graphs = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs")
    made = set(session.load_pair(settings.target, settings.draft).programs)  # (the loaded pair, kept)
    pair, ids, cfg, _ = live.prepare(dataclasses.replace(settings, prompt=settings.prompt[:20], max_new_tokens=90))
    assert session.run(pair, ids, cfg).token_ids
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == graphs and set(pair.programs) == made


PAIR_AFTER_PAIR = """
import gc, torch
from playground import session
from tests import tiny
tok = tiny.letters_tokenizer(12)
def run(seed):
    target = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=seed, eos_id=11).cuda()
    draft = tiny.perturbed_copy(target, noise=0.4, seed=seed + 1).cuda()
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    cfg = session.spec_config(k=3, max_new_tokens=20, compile=True)
    spec, alone = session.run(pair, [1, 2, 3], cfg), session.run(pair, [1, 2, 3], cfg, speculative=False)
    assert spec.token_ids == alone.token_ids and pair.programs, seed
for seed in (1, 5):  # the first pair's graphs are all freed before the second pair captures
    run(seed)
    gc.collect()
    torch.cuda.empty_cache()
print("ok")
"""


def test_a_pair_loaded_after_another_was_freed_captures():
    """A Space switching pairs: every graph of the first pair freed, the second captures into the
    process's pool (it asserted inside CUDA's allocator, 2026-11-26). In a process of its own: the
    module's pair keeps its graphs alive here."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", PAIR_AFTER_PAIR], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_fused_layers_in_bfloat16_give_the_layers_logits_and_exact_rounds(tokenizer, monkeypatch):
    """playground.engine.fused_layers on the GPU in the models' dtype (the CPU tests run its kernels
    interpreted in float16): a model's logits as its own layers and head give them, to bfloat16's
    rounding, through tl.dot and through the narrow rows' sums; and compiled rounds with both models
    fused (a step's one or two rows narrow, verification's five through tl.dot) keep the target
    alone's tokens."""
    from playground.engine import fused_linear
    from playground.engine.fused_layers import fuse_head, fuse_layers
    from playground.models.fused_projections import fuse_projections
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id,
                             dtype=torch.bfloat16).cuda()
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3).cuda()
    prompt = tokenizer(PROMPT).input_ids
    ids = torch.tensor([prompt[:12]], device="cuda")
    with torch.inference_mode():
        assert fuse_projections(target) > 0
        want = target(ids).logits.float()
        assert fuse_layers(target) == 2 and fuse_head(target)
        for blocks in (fused_linear.Blocks(), fused_linear.Blocks(narrow_rows=16, block_k=256)):
            got = fused_logits(target, ids, blocks)
            assert (got - want).abs().max() <= 3e-2 * want.abs().max(), blocks
    assert fuse_projections(draft) > 0 and fuse_layers(draft) == 2 and fuse_head(draft)
    monkeypatch.setattr(fused_linear, "BLOCKS", fused_linear.Blocks(narrow_rows=4, block_k=256))
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    for k in (1, 4):
        cfg = compiled(k, 40)
        spec = session.run(pair, prompt, cfg)
        alone = session.run(pair, prompt, cfg, speculative=False)
        assert spec.token_ids == alone.token_ids and len(spec.token_ids) == 40, k
        assert spec.stats["accepted"] > 0


def fused_logits(model, ids, blocks):
    """The model's logits with fused_linear's kernels split as `blocks` says."""
    from playground.engine import fused_linear
    before, fused_linear.BLOCKS = fused_linear.BLOCKS, blocks
    try:
        return model(ids).logits.float()
    finally:
        fused_linear.BLOCKS = before


def test_triton_decode_attention_in_bfloat16():
    """The kernels in the model's dtype on the GPU (the CPU tests run them interpreted in float16): as
    two kernels, and as one whose heads' last programs combine, called and replayed from a captured
    CUDA graph (its arrival counters zeroed in every replay, or the next would never combine)."""
    from playground.engine import decode_attention as da
    from playground.engine.attention import matmul_attention
    gen = torch.Generator(device="cuda").manual_seed(0)
    for b, kv, g, n, cap, d, written in ((1, 2, 7, 1, 16 * da.CHUNK, 64, 300), (1, 4, 7, 5, 16 * da.CHUNK, 128, 3000)):
        q = torch.randn(b, kv * g, n, d, generator=gen, device="cuda").bfloat16()
        k, v = (torch.randn(b, kv, cap, d, generator=gen, device="cuda").bfloat16() for _ in range(2))
        mask = torch.zeros(b, 1, n, cap, dtype=torch.bool, device="cuda")
        for t in range(n):
            mask[..., t, : written - n + t + 1] = True
        folded = q.reshape(b, kv, g * n, d)
        want = matmul_attention(folded.float(), k.float(), v.float(), mask.repeat(1, 1, g, 1), d ** -0.5)
        torch.testing.assert_close(da.decode_attention(folded, k, v, mask, d ** -0.5).float(), want, rtol=0, atol=2e-2)
        got = da.decode_attention_impl(folded, k, v, mask, d ** -0.5, one_kernel=True)
        torch.testing.assert_close(got.float(), want, rtol=0, atol=2e-2)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            replayed = da.decode_attention_impl(folded, k, v, mask, d ** -0.5, one_kernel=True)
        for _ in range(3):
            replayed.zero_()
            graph.replay()
            torch.testing.assert_close(replayed.float(), want, rtol=0, atol=2e-2)


def test_kernels_launched_dependent_give_the_same_numbers_and_exact_rounds(tokenizer, monkeypatch):
    """PLAYGROUND_PDL (playground.engine.dependent_launch) on a Hopper GPU: a chain of the engine's
    kernels, each reading what the one before wrote, gives the same bits launched dependent as
    launched as usual, called and replayed from a captured graph; compiled rounds (inductor's
    kernels launched dependent too) keep the target alone's tokens."""
    import re
    from unittest import mock
    from torch._inductor.graph import GraphLowering
    from playground.engine import decode_attention as da, dependent_launch, fused_linear as fl
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("programmatic dependent launch needs compute capability 9.0 (Hopper) or later")
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, g = (torch.randn(1, 896, generator=gen, device="cuda").bfloat16() for _ in range(2))
    w1, w2 = (torch.randn(896, 896, generator=gen, device="cuda").bfloat16() * 896 ** -0.5 for _ in range(2))
    k, v = (torch.randn(1, 2, 4 * da.CHUNK, 64, generator=gen, device="cuda").bfloat16() for _ in range(2))
    mask = torch.zeros(1, 1, 1, 4 * da.CHUNK, dtype=torch.bool, device="cuda")
    mask[..., :300] = True

    def chain():  # norm + product, product + residual, then attention over its output as queries
        h = fl.fused_linear(x, w1, prologue="norm", norm_weight=g, blocks=fl.Blocks(narrow_rows=4))
        h = fl.fused_linear(h, w2, residual=h)
        return da.decode_attention_impl(h.reshape(1, 2, 7, 64), k, v, mask, 0.125, one_kernel=True)
    want = chain()
    monkeypatch.setattr(dependent_launch, "ON", True)
    assert dependent_launch.launches_dependent(x.device)
    assert torch.equal(chain(), want)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        replayed = chain()
    for _ in range(3):
        replayed.zero_()
        graph.replay()
        assert torch.equal(replayed, want)
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=13, eos_id=tokenizer.eos_token_id).cuda()
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, noise=0.4, seed=3).cuda(), tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(3, 40)
    codes = []  # the code inductor writes for the pair's passes (on a cache hit too)
    with mock.patch.object(GraphLowering, "save_output_code", codes.append):
        spec = session.run(pair, prompt, cfg)
        assert spec.token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids
    assert 0 < spec.stats["accepted"] < spec.stats["proposed"]
    kernels = [kernel for code in codes for kernel in code.split("async_compile.triton(")[1:]]
    dependent = [kernel for kernel in kernels if re.search(r"""['"]launch_pdl['"]:\s*True""", kernel)]
    assert dependent, f"none of inductor's {len(kernels)} kernels launched dependent"
    assert [kernel[:200] for kernel in dependent if "gdc_wait" not in kernel] == []  # each waits somewhere (torch
    # 2.11's rule: before it touches what the kernel before touched, else before it lets the next in)
