"""A drafted end of sequence inside the window: the output's first 3 tokens (runs of 5, so rounds draft
past position 3; a run stopped by EOS is shorter) follow the target's law of sequences that stop at EOS
(tests/test_engine_sampling.py runs with no EOS). From a law audit of every way of drafting (a chain, a
tree, prompt lookup, the feature draft, cascade, the adaptive policies, a reduced vocabulary: all held;
these four kept), 2,500 seeded runs each, with a negative control that shows the test's power."""
import pytest

from playground.events import ACCEPTED
from tests import tiny
from tests.law import P_MIN, counts_of, exact_law, keep_every_drafted, law_p
from tests.test_engine_sampling import PROMPT, V

EOS = V - 1
PLAIN = dict(temperature=1.0, top_k=0, top_p=1.0)
WARPED = dict(temperature=0.7, top_k=6, top_p=0.9)
CLOSE = dict(temperature=1.3, top_k=8, top_p=0.95)
PROMPT_EOS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, EOS, 9, 5, 3]  # lookup guesses EOS, 9 after (5, 3)
D2T = [0, 2, 3, 5, 7, 8, 10, EOS]  # the feature draft's vocabulary, EOS in it


@pytest.fixture(scope="module")
def models():
    tok = tiny.letters_tokenizer(V)
    target = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=21, eos_id=EOS, init_std=0.6)
    close = tiny.perturbed_copy(target, 0.3, seed=5)
    far = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=22, eos_id=EOS, init_std=0.6)
    for model in (target, close, far):
        tiny.prefer_tokens(model, [EOS], 1.0)  # EOS ~ 0.15-0.4 a step: many runs stop inside a round
    return tok, target, far, close


def feature(target):
    from tests.test_feature_draft import feature_draft
    return feature_draft(target, D2T, std=0.6)


WAYS = {  # draft, pair.cascade, settings
    "chain-close-k4-warped": ("close", False, dict(k=4, **CLOSE)),
    "tree-close-222-warped": ("close", False, dict(tree=(2, 2, 2), **CLOSE)),
    "lookup-k4-eos-prompt": (None, False, dict(k=4, **PLAIN)),
    "feature-k3-warped": ("feature", False, dict(k=3, **CLOSE)),
}


def pair_for(models, way):
    tok, target, far, close = models
    kind, cascade, settings = WAYS[way]
    draft = {"far": far, "close": close, None: None}[kind] if kind != "feature" else feature(target)
    pair = tiny.make_pair(target, draft, tok, eos_ids=[EOS])
    pair.cascade = cascade
    return pair, settings


@pytest.mark.parametrize("way", WAYS)
def test_eos_inside_the_window_keeps_the_targets_law(models, way):
    pair, settings = pair_for(models, way)
    params = {key: settings[key] for key in PLAIN}
    length = 3 if way.endswith("len3") else 5
    prompt = PROMPT_EOS if way.endswith("eos-prompt") else PROMPT
    eos_accepted = []

    def check(result):
        ids = result.token_ids
        assert EOS not in ids[:-1], ids  # nothing after an EOS
        assert len(ids) == length or ids[-1] == EOS
        eos_accepted.append(any(t.kind == ACCEPTED and t.token_id == EOS for r in result.rounds for t in r.tokens))

    counts, accepted, proposed = counts_of(pair, prompt, 3, check=check, max_new_tokens=length, **settings)
    expected = exact_law(pair.target, prompt, 3, params, eos_ids={EOS})
    p = law_p(counts, expected)
    print(f"{way}: p={p:.4g} accepted={accepted} proposed={proposed} runs with a drafted EOS kept={sum(eos_accepted)}")
    if (pair.draft is not None or prompt is PROMPT_EOS) and not way.startswith("chain-far") and not way.startswith("tree-far"):
        assert sum(eos_accepted) > 20  # the path under test is reached
    assert p > P_MIN


def test_negative_control_a_drafted_eos_always_kept_is_caught(models, monkeypatch):
    """A wrong rule: a drafted EOS is always accepted."""
    keep_every_drafted(monkeypatch, EOS)
    pair, settings = pair_for(models, "chain-close-k4-warped")
    params = {key: settings[key] for key in PLAIN}
    counts, _, _ = counts_of(pair, PROMPT, 3, max_new_tokens=5, **settings)
    p = law_p(counts, exact_law(pair.target, PROMPT, 3, params, eos_ids={EOS}), strict=False)
    print(f"negative control: p={p:.3g}")
    assert p < 1e-6
