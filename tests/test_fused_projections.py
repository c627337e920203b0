"""Joined projections (playground.models.fused_projections: q/k/v as one product, gate/up as
another, opt-in on a GPU): the same model, eager and compiled, and speculation over it still the
target's own output."""
import pytest
import torch

from playground import session
from playground.models.fused_projections import JoinedQKV, Piece, fuse_projections, fuses_on
from tests import tiny
from tests.test_engine_fused import compiled, rounds_fused
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy


@pytest.mark.parametrize("arch", ["qwen2", "llama", "qwen3"])  # q/k/v with biases, without, with q/k norms
def test_a_joined_model_computes_as_before(arch, tokenizer):
    plain = tiny.tiny_model(arch, vocab=len(tokenizer), seed=5)
    joined = tiny.perturbed_copy(plain, noise=0.0)
    params = sum(p.numel() for p in plain.parameters())
    assert fuse_projections(joined) == 2 * plain.config.num_hidden_layers  # an attention and an MLP a layer
    assert sum(p.numel() for p in joined.parameters()) == params  # joined, not copied
    assert fuse_projections(joined) == 0  # once
    assert isinstance(joined.model.layers[0].self_attn.q_proj, JoinedQKV)
    ids = torch.tensor([tokenizer(PROMPT).input_ids])
    with torch.no_grad():
        torch.testing.assert_close(joined(ids).logits, plain(ids).logits, rtol=0, atol=1e-5)
    assert hf_greedy(joined, ids[0].tolist(), 20, eos_id=NO_EOS) == hf_greedy(plain, ids[0].tolist(), 20, eos_id=NO_EOS)


def test_a_joined_pair_speculates_compiled_as_its_target_alone(tokenizer, monkeypatch):
    """Compiled (the fused round programs, as on a GPU, here without capture): speculation keeps the
    joined target's own greedy tokens."""
    monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=11)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    for model in (target, draft):
        fuse_projections(model)
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(3, 30)
    assert rounds_fused(pair, prompt, cfg)
    torch._dynamo.utils.counters["graph_break"].clear()
    spec = session.run(pair, prompt, cfg)
    assert not torch._dynamo.utils.counters["graph_break"]  # the slot is traced through, one graph a pass
    alone = session.run(pair, prompt, cfg, speculative=False)
    assert spec.token_ids == alone.token_ids == hf_greedy(target, prompt, 30, eos_id=NO_EOS)
    assert 0 < spec.stats["accepted"] < spec.stats["proposed"]


def test_a_key_projection_alone_is_refused():
    model = tiny.tiny_model("qwen2", seed=1)
    fuse_projections(model)
    with pytest.raises(RuntimeError, match="before its query projection"):
        model.model.layers[0].self_attn.k_proj(torch.zeros(1, 64))


def test_runs_beside_each_other_share_a_joined_model():
    """Two threads on one joined model (runs beside each other, PLAYGROUND_CONCURRENCY > 1): one
    thread's query projection between another's query and key projections does not hand it its k."""
    import threading
    torch.manual_seed(0)
    q, k, v = (torch.nn.Linear(8, 8) for _ in range(3))
    joined = JoinedQKV(q, k, v)
    key = Piece(joined, 0)
    x_a, x_b = torch.randn(2, 8), torch.randn(3, 8)
    between, done, got = threading.Event(), threading.Event(), {}

    def a():
        joined(x_a)
        between.set()  # b runs its query projection now
        done.wait()
        got["a"] = key(x_a)

    def b():
        between.wait()
        joined(x_b)
        done.set()
        got["b"] = key(x_b)
    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with torch.no_grad():
        torch.testing.assert_close(got["a"], k(x_a))
        torch.testing.assert_close(got["b"], k(x_b))


def test_joined_by_default_on_a_gpu_only(monkeypatch):
    monkeypatch.delenv("PLAYGROUND_FUSE_PROJECTIONS", raising=False)
    assert fuses_on(torch.device("cuda")) and not fuses_on(torch.device("cpu"))
    monkeypatch.setenv("PLAYGROUND_FUSE_PROJECTIONS", "0")
    assert not fuses_on(torch.device("cuda"))


def test_offloaded_projections_stay_apart():
    """Weights left on the meta device (accelerate's offload hooks bring them in per pass): joining
    them would make a product of nothing."""
    with torch.device("meta"):
        model = tiny.tiny_model("qwen2", seed=1)
    assert fuse_projections(model) == 0
