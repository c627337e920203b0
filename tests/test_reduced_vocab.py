"""A draft with a reduced vocabulary (the SmolLM2 draft predicts 8,191 of 49,152 tokens): the target's
output stays exact, greedy and sampled, with and without a constraint, and the map loads from disk."""
import json

import pytest
import torch
from safetensors.torch import save_file

from playground import session
from playground.models import loading as models
from playground.constraints import compile_constraint, from_user
from playground.errors import PlaygroundError
from tests import tiny
from tests.test_engine_sampling import CASES, N_RUNS, P_MIN, PROMPT, V, chi_square_p, exact_joint, sample_counts

D2T = [0, 2, 3, 5, 7, 8, 10]  # the target ids the draft can write; its 8th row stands for all others


def reduced_draft(seed: int = 22, init_std: float = 0.6):
    draft = tiny.tiny_model("qwen2", vocab=len(D2T) + 1, hidden=32, layers=1, seed=seed, eos_id=0, init_std=init_std)
    draft.playground_vocab_map = torch.tensor(D2T)
    return draft


@pytest.fixture(scope="module")
def small():
    tok = tiny.letters_tokenizer(V)
    target = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=21, eos_id=V - 1, init_std=0.6)
    return tok, target


def test_draft_logits_come_back_full_width(small):
    tok, target = small
    pair = tiny.make_pair(target, reduced_draft(), tok, eos_ids=[])
    assert pair.vocab == V
    runner = session.ModelRunner(pair.draft, pair.vocab, vocab_map=pair.draft_vocab_map)
    logits = runner.forward(torch.tensor(PROMPT), keep=2)  # PROMPT holds ids outside the draft's map
    assert logits.shape == (2, V)
    outside = [t for t in range(V) if t not in D2T]
    assert torch.softmax(logits, -1)[:, outside].sum() == 0


def test_greedy_output_is_the_target_alone(small):
    tok, target = small
    pair = tiny.make_pair(target, reduced_draft(), tok, eos_ids=[])
    for k in (1, 3, 5):
        cfg = session.spec_config(k=k, max_new_tokens=24)
        spec = session.run(pair, PROMPT, cfg)
        assert spec.token_ids == session.run(pair, PROMPT, cfg, speculative=False).token_ids
        assert spec.stats["proposed"] > 0


def test_sampling_matches_the_target(small):
    tok, target = small
    pair = tiny.make_pair(target, reduced_draft(), tok, eos_ids=[])
    counts = sample_counts(pair, k=2, length=3, params=CASES["warped"])
    assert chi_square_p(counts, exact_joint(target, 3, CASES["warped"]), N_RUNS) > P_MIN


def test_a_constraint_allowing_only_unmapped_tokens_still_drafts(tokenizer, target):
    """Where the mask leaves the draft none of its own tokens, it still proposes (never NaN)."""
    no_digits = [i for i in range(len(tokenizer)) if not any(c.isdigit() for c in tokenizer.decode([i]))]
    draft = tiny.tiny_model("qwen2", vocab=len(no_digits) + 1, seed=5, eos_id=tokenizer.eos_token_id)
    draft.playground_vocab_map = torch.tensor(no_digits)
    pair = tiny.make_pair(target, draft, tokenizer)
    constraint = compile_constraint(from_user(regex="[0-9]{6}"), tokenizer, pair.vocab, pair.eos_ids)
    prompt = tokenizer("x = ").input_ids
    for temperature in (0.0, 1.0):
        cfg = session.spec_config(k=3, temperature=temperature, max_new_tokens=8)
        result = session.run(pair, prompt, cfg, constraint=constraint)
        assert result.valid and result.stats["proposed"] > 0, result.text
        if temperature == 0:
            assert result.token_ids == session.run(pair, prompt, cfg, speculative=False, constraint=constraint).token_ids


def test_reduced_draft_loads_from_a_directory(tmp_path, tokenizer):
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), eos_id=tokenizer.eos_token_id)
    d2t = list(range(0, len(tokenizer), 5))
    draft = tiny.tiny_model("qwen2", vocab=len(d2t) + 1, seed=3, eos_id=tokenizer.eos_token_id)
    t_dir, d_dir = tiny.save(target, tokenizer, tmp_path / "t"), tiny.save(draft, tokenizer, tmp_path / "d")
    save_file({"d2t": torch.tensor(d2t, dtype=torch.int32)}, d_dir / models.VOCAB_MAP_FILE)
    pair = models.load_pair(str(t_dir), str(d_dir), "cpu")
    assert pair.vocab == len(tokenizer) and pair.draft_vocab_map.tolist() == d2t
    ids = tokenizer("def f(x):").input_ids
    cfg = session.spec_config(k=4, max_new_tokens=16)
    assert session.run(pair, ids, cfg).token_ids == session.run(pair, ids, cfg, speculative=False).token_ids
    save_file({"d2t": torch.tensor(d2t[:-1], dtype=torch.int32)}, d_dir / models.VOCAB_MAP_FILE)
    models.CACHE.entries.clear()
    with pytest.raises(PlaygroundError, match="does not match its config"):
        models.load_pair(str(t_dir), str(d_dir), "cpu")
    assert json.loads((d_dir / "config.json").read_text())["vocab_size"] == len(d2t) + 1
