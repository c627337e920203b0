"""Decoder layers compiled as one region (playground.engine.layer_regions; on CUDA by default):
every layer's trace is the same body, kept once and called per layer; eager calls are unchanged; compiled
passes keep greedy speculation identical to transformers' greedy decoding. Real torch.compile, tiny models."""
import pytest
import torch

from playground import session
from playground.engine import layer_regions
from playground.engine.attention import fold_grouped_heads
from playground.engine.static_cache import PointerCache
from playground.errors import PlaygroundError
from playground.models.fused_projections import fuse_projections
from tests import tiny
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy


def traced_bodies(model) -> list[str]:
    """The body each layer's call runs in the graph dynamo records for one cached 5-token pass."""
    graphs = []

    def record(gm, inputs):
        graphs.append(gm)
        return gm.forward

    cache = PointerCache(model, 64)
    forward = torch.compile(lambda ids: model(input_ids=ids, past_key_values=cache, use_cache=True).logits,
                            backend=record, dynamic=False, fullgraph=True)
    with torch.inference_mode():
        forward(torch.arange(3, 8)[None])
    assert len(graphs) == 1
    return [node.args[0].target for node in graphs[0].graph.nodes
            if node.op == "call_function" and "invoke_subgraph" in str(node.target)]


@pytest.mark.parametrize("arch,as_on_a_gpu", [("qwen2", False), ("qwen2", True), ("qwen3", False), ("llama", False)])
def test_every_layer_runs_one_body(arch, as_on_a_gpu):
    model = tiny.tiny_model(arch, vocab=320, layers=3, seed=4)
    if as_on_a_gpu:  # what a GPU's load does first: projections joined, grouped heads folded
        assert fuse_projections(model) == 6 and fold_grouped_heads(model)
    ids = torch.arange(3, 8)[None]
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    assert layer_regions.mark_layer_regions(model) == 3
    assert layer_regions.mark_layer_regions(model) == 0  # marked once
    with torch.inference_mode():
        assert torch.equal(model(input_ids=ids).logits, before)  # outside torch.compile a region is a plain call
    bodies = traced_bodies(model)
    assert len(bodies) == 3 and len(set(bodies)) == 1, bodies


def test_a_layer_with_a_hooked_forward_is_left_alone():
    model = tiny.tiny_model("qwen2", vocab=320, layers=3, seed=4)
    hooked = model.model.layers[0]
    hooked.forward = hooked.forward  # as accelerate's offloading hooks replace it on the instance
    assert layer_regions.mark_layer_regions(model) == 2
    assert hooked.forward.__func__ is type(hooked).forward
    bodies = traced_bodies(model)
    assert len(bodies) == 2 and len(set(bodies)) == 1, bodies


@pytest.mark.parametrize("fused", [False, True])
def test_greedy_identity_compiled_by_layer(fused, tokenizer, monkeypatch):
    """Per-pass graphs (a CPU's path) and whole rounds as programs (a GPU's) compiled by layer."""
    monkeypatch.setenv("PLAYGROUND_REGIONAL_COMPILE", "1")
    if fused:
        monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), layers=3, seed=11, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    expected = hf_greedy(target, prompt, 30, eos_id=NO_EOS)
    cfg = session.spec_config(k=3, max_new_tokens=30, compile=True)
    result = session.run(pair, prompt, cfg)
    assert result.token_ids == expected and result.stats["accepted"] > 0
    assert session.run(pair, prompt, cfg, speculative=False).token_ids == expected
    assert all("forward" in layer.__dict__ for m in (target, draft) for layer in m.model.layers)  # compiled by layer


def test_by_layer_on_cuda_by_default_and_as_the_setting_says(monkeypatch):
    """Unset: by layer on CUDA (half the cold compile on an H200), whole on a CPU (keeps its C++ wrapper)."""
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    for setting, expected in [("", (True, False)), ("1", (True, True)), ("0", (False, False)), ("yes", (True, True)),
                              ("false", (False, False))]:
        monkeypatch.setenv("PLAYGROUND_REGIONAL_COMPILE", setting)
        assert (layer_regions.by_layer_on(cuda), layer_regions.by_layer_on(cpu)) == expected, setting
    monkeypatch.setenv("PLAYGROUND_REGIONAL_COMPILE", "maybe")  # (said, not the default without a word)
    with pytest.raises(PlaygroundError, match="PLAYGROUND_REGIONAL_COMPILE must be 1 or 0"):
        layer_regions.by_layer_on(cpu)
