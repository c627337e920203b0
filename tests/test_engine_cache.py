"""KV caches are reused across rounds and rolled back exactly: after every round the target caches
every committed token but the last (the next verify input), the draft all but its 1-2 pending ones,
and what they hold equals a fresh prefill of those tokens."""
import pytest
import torch
from transformers import DynamicCache

from playground import session
from playground.engine.proposers import DraftModelProposer
from playground.engine.runner import ModelRunner
from playground.engine.speculative import speculate
from playground.events import Round
from tests import tiny


def fresh_keys(model, ids):
    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
    return cache.layers[0].keys


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("k", [1, 4, 7])
def test_caches_hold_exactly_the_committed_tokens(target, tokenizer, k, temperature):
    noisy_draft = tiny.perturbed_copy(target, noise=2.0)  # disagrees often, also when sampling
    prompt = tokenizer("def main(argv):\n    parser = ").input_ids
    t_runner, d_runner = ModelRunner(target, len(tokenizer)), ModelRunner(noisy_draft, len(tokenizer))
    cfg = session.spec_config(k=k, temperature=temperature, max_new_tokens=40, seed=1)
    seq = list(prompt)
    rejected_rounds = 0
    for event in speculate(t_runner, DraftModelProposer(d_runner), prompt, cfg, set()):
        if not isinstance(event, Round):
            continue
        seq += [t.token_id for t in event.committed]
        rejected_rounds += event.accepted < event.proposed
        assert t_runner.length == len(seq) - 1
        if event.k > 0:  # a round that drafts nothing (the last, at the budget) feeds the draft nothing
            assert len(seq) - 2 <= d_runner.length <= len(seq) - 1
        for runner, model in ((t_runner, target), (d_runner, noisy_draft)):
            cached = runner.cache.layers[0].keys
            assert torch.allclose(cached, fresh_keys(model, seq[: runner.length]), atol=1e-5)
    assert rejected_rounds > 0  # the rollback path was exercised


def test_runner_crop_is_the_only_rollback(target, tokenizer):
    runner = ModelRunner(target, len(tokenizer))
    ids = torch.tensor(tokenizer("x = [1, 2, 3]\n").input_ids)
    with torch.inference_mode():
        runner.forward(ids)
    assert runner.length == len(ids)
    runner.crop(3)
    assert runner.length == 3
    runner.crop(10)  # cropping to a longer length is a no-op
    assert runner.length == 3


def test_a_sliding_window_layer_keeps_its_window_and_rolls_back(tokenizer, monkeypatch):
    """Past its window a sliding layer records what is fed; each crop rolls back the rejected
    positions and trims the layer to its window and WINDOW_SLACK more. Rollbacks reaching back past
    one crop (a cascade's inside a round, then the round's) stay exact; the keys kept equal a fresh
    pass's last ones."""
    from playground.engine import cache as engine_cache
    window = 8
    monkeypatch.setattr(engine_cache, "WINDOW_SLACK", 3)
    model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=13, use_sliding_window=True, sliding_window=window,
                            layer_types=["sliding_attention", "full_attention"])
    runner = ModelRunner(model, len(tokenizer))
    ids = tokenizer("def main(argv):\n    parser = argparse.ArgumentParser()\n    parser.add_argument('x')\n").input_ids
    assert len(ids) > 3 * window
    with torch.inference_mode():
        runner.forward(torch.tensor(ids[:12]))
        runner.crop(12)
        for start in range(12, len(ids) - 6, 2):  # a round: 5 positions fed, 2 dropped, 1 more fed, then 2 more
            logits = runner.forward(torch.tensor(ids[start:start + 5]))  # dropped, reaching back past the first crop
            whole = model(input_ids=torch.tensor([ids[:start + 5]])).logits[0, start:]  # the same positions, no cache
            assert torch.allclose(logits, whole, atol=1e-4)
            runner.crop(start + 3)
            runner.forward(torch.tensor(ids[start + 3:start + 4]))
            runner.crop(start + 2)
            sliding, full = runner.cache.layers
            assert runner.length == start + 2 and full.keys.shape[-2] == start + 2
            kept = sliding.keys.shape[-2]
            assert window - 1 <= kept <= window - 1 + 3  # what the next pass reads, and no more than the slack
            fresh = DynamicCache(config=model.config)
            fresh.activate_past_recording()  # (keeps every position)
            model(input_ids=torch.tensor([ids[:start + 2]]), past_key_values=fresh, use_cache=True)
            assert torch.allclose(sliding.keys, fresh.layers[0].keys[:, :, -kept:], atol=1e-5)
