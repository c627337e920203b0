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
    cfg = session.settings(k=k, temperature=temperature, max_new_tokens=40, seed=1)
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


def test_a_sliding_window_layer_keeps_its_window_and_rolls_back(tokenizer):
    """Past its window a sliding layer records what a round adds until the crop, which both rolls
    back rejected positions and trims the layer to its window again; the keys left equal a fresh
    pass's last window."""
    window = 8
    model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=13, use_sliding_window=True, sliding_window=window,
                            layer_types=["sliding_attention", "full_attention"])
    runner = ModelRunner(model, len(tokenizer))
    ids = tokenizer("def main(argv):\n    parser = argparse.ArgumentParser()\n").input_ids
    assert len(ids) > 2 * window
    with torch.inference_mode():
        runner.forward(torch.tensor(ids[:12]))
        runner.crop(12)
        for start in range(12, len(ids) - 5, 3):  # a round: 5 positions fed, the last 2 rejected
            runner.forward(torch.tensor(ids[start:start + 5]))
            runner.crop(start + 3)
            sliding, full = runner.cache.layers
            assert runner.length == start + 3 and full.keys.shape[-2] == start + 3
            assert sliding.keys.shape[-2] == window - 1  # no more than the next pass needs
            fresh = DynamicCache(config=model.config)
            model(input_ids=torch.tensor([ids[:start + 3]]), past_key_values=fresh, use_cache=True)
            assert torch.allclose(sliding.keys, fresh.layers[0].keys[:, :, -(window - 1):], atol=1e-5)
