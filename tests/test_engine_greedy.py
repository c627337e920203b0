"""Greedy speculative decoding must give exactly the target's own greedy tokens (transformers'
`generate(do_sample=False)`), whatever the draft, K, prompt length or budget."""
import pytest
import torch

from playground import session
from playground.events import BONUS, CORRECTED, REJECTED
from tests import tiny

NO_EOS = 10**6  # an id no model produces: runs go to max_new_tokens
PROMPT = "import os\n\ndef walk(path):\n    for name in os.listdir(path):\n        "


def hf_greedy(model, prompt_ids, max_new_tokens, eos_id):
    out = model.generate(torch.tensor([prompt_ids]), do_sample=False, max_new_tokens=max_new_tokens,
                         eos_token_id=eos_id, pad_token_id=eos_id, attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long))
    ids = out[0, len(prompt_ids):].tolist()
    return ids[: ids.index(eos_id) + 1] if eos_id in ids else ids


def spec_greedy(pair, prompt_ids, k, max_new_tokens):
    return session.run(pair, prompt_ids, session.spec_config(k=k, max_new_tokens=max_new_tokens))


@pytest.fixture(scope="module")
def prompts(tokenizer):
    ids = tokenizer(PROMPT).input_ids
    return {1: ids[:1], 2: ids[:2], 7: ids[:7], len(ids): ids}


@pytest.fixture(scope="module")
def drafts(target, noisy_draft, tokenizer):
    independent = tiny.tiny_model("qwen2", vocab=len(tokenizer), hidden=32, layers=1, seed=5,
                                  eos_id=tokenizer.eos_token_id)
    return {"same": target, "noisy": noisy_draft, "independent": independent, "ngram": None}


@pytest.mark.parametrize("k", range(1, 17))
def test_identity_every_k_noisy_draft(k, target, noisy_draft, tokenizer, prompts):
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    for prompt_ids in prompts.values():
        expected = hf_greedy(target, prompt_ids, 29, eos_id=NO_EOS)
        result = spec_greedy(pair, prompt_ids, k, 29)
        assert result.token_ids == expected, (k, len(prompt_ids))
        assert result.stats["generated_tokens"] == 29


@pytest.mark.parametrize("draft_name", ["same", "noisy", "independent", "ngram"])
@pytest.mark.parametrize("k", [1, 3, 8, 16])
def test_identity_every_draft_kind(draft_name, k, drafts, target, tokenizer, prompts):
    pair = tiny.make_pair(target, drafts[draft_name], tokenizer, eos_ids=[])
    prompt_ids = prompts[7]
    assert spec_greedy(pair, prompt_ids, k, 23).token_ids == hf_greedy(target, prompt_ids, 23, eos_id=NO_EOS)


@pytest.mark.parametrize("arch", ["qwen2", "qwen3", "llama"])
@pytest.mark.parametrize("k", [1, 2, 5, 16])
def test_identity_architectures(arch, k, tokenizer, prompts):
    target = tiny.tiny_model(arch, vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    for prompt_ids in (prompts[1], prompts[max(prompts)]):
        expected = hf_greedy(target, prompt_ids, 31, eos_id=NO_EOS)
        assert spec_greedy(pair, prompt_ids, k, 31).token_ids == expected


@pytest.mark.parametrize("draft_name", ["same", "noisy", "ngram"])
@pytest.mark.parametrize("k", [2, 4, 9])
def test_stops_exactly_at_eos_inside_a_round(draft_name, k, drafts, target, tokenizer, prompts):
    """Make a token the target writes mid-way the EOS: generation stops right after it."""
    prompt_ids = prompts[7]
    free_run = hf_greedy(target, prompt_ids, 40, eos_id=NO_EOS)
    stop_at = next(i for i in range(5, 40) if free_run[i] not in free_run[:i])
    eos = free_run[stop_at]
    pair = tiny.make_pair(target, drafts[draft_name], tokenizer, eos_ids=[eos])
    result = spec_greedy(pair, prompt_ids, k, 40)
    assert result.token_ids == free_run[: stop_at + 1] == hf_greedy(target, prompt_ids, 40, eos_id=eos)
    assert result.finish_reason == "eos"
    last_round = result.rounds[-1]
    assert last_round.tokens[-1].token_id == eos  # nothing after the EOS, not even rejected drafts
    if draft_name == "same":  # drafts behind an accepted EOS are never judged: they are not rejections
        assert result.stats["acceptance_rate"] == 1.0 and result.stats["token_acceptance"] == 1.0


def test_full_acceptance_gives_bonus_tokens(target, tokenizer, prompts):
    pair = tiny.make_pair(target, target, tokenizer, eos_ids=[])
    result = spec_greedy(pair, prompts[7], 4, 30)
    kinds = {t.kind for r in result.rounds for t in r.tokens}
    assert kinds == {"accepted", BONUS}
    assert result.stats["acceptance_rate"] == 1.0
    assert result.stats["rounds"] == 6  # 30 tokens, 5 per round


def test_partial_acceptance_shows_rejections_and_corrections(target, noisy_draft, tokenizer, prompts):
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    result = spec_greedy(pair, prompts[7], 6, 60)
    kinds = [t.kind for r in result.rounds for t in r.tokens]
    assert REJECTED in kinds and CORRECTED in kinds
    assert 0 < result.stats["acceptance_rate"] < 1
    for r in result.rounds:  # every round commits between 1 and k+1 tokens
        assert 1 <= len(r.committed) <= r.k + 1
    # the first refused draft was judged; those after it never were: their p_target was read after a guess the
    # text never had (under greedy one could be the target's own top choice there, struck through: a maths review)
    refusals = [[t for t in r.tokens if t.kind == REJECTED] for r in result.rounds]
    assert any(len(refused) > 1 for refused in refusals)
    for refused in filter(None, refusals):
        assert refused[0].p_target is not None and all(t.p_target is None and t.p_draft is not None for t in refused[1:])
    from playground.ui.render import token_stream
    assert "never judged: it came after a refused guess" in token_stream(result.rounds)


@pytest.mark.parametrize("draft_name", ["same", "noisy", "ngram", "cascade"])
@pytest.mark.parametrize("k", [1, 4, 9, 16])
def test_identity_with_sliding_window_layers(draft_name, k, tokenizer, prompts):
    """A window of 8 positions on one layer of two (Gemma- and Mistral-style models): runs go far
    past it, and every rejected guess rolls the windowed layer back (it raised there before; a
    cascade's draft rolls back twice a round)."""
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=13, eos_id=tokenizer.eos_token_id,
                             use_sliding_window=True, sliding_window=8,
                             layer_types=["sliding_attention", "full_attention"])
    noisy = tiny.perturbed_copy(target, noise=0.4, seed=3)
    draft = {"same": target, "noisy": noisy, "ngram": None, "cascade": noisy}[draft_name]
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    pair.cascade = draft_name == "cascade"
    prompt_ids = (prompts[max(prompts)] * 3)[:60]  # repeats: prompt lookup finds guesses
    result = spec_greedy(pair, prompt_ids, k, 48)
    assert result.token_ids == hf_greedy(target, prompt_ids, 48, eos_id=NO_EOS)
    if draft_name in ("noisy", "cascade") and k > 1:
        assert 0 < result.stats["accepted"] < result.stats["proposed"]  # keeps and rollbacks both
