"""Speculative sampling must reproduce the target's distribution exactly. Small vocabulary (12
tokens), thousands of seeded runs, a chi-square test of the first three tokens against the exact
probabilities computed by brute force, with a draft deliberately different from the target. A
negative control shows the test has the power to catch a wrong rule."""
import itertools

import numpy as np
import pytest
import torch

from playground import session
from playground.config import SamplingParams
from playground.engine.verify import verify_sampled
from tests import tiny

V = 12
PROMPT = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
N_RUNS = 2500
P_MIN = 1e-3  # reject only on strong evidence: the tests stay stable while a wrong rule fails


@pytest.fixture(scope="module")
def small():
    tok = tiny.letters_tokenizer(V)
    # a large init scale gives peaked, clearly different distributions for target and draft
    target = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=21, eos_id=V - 1, init_std=0.6)
    draft = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=22, eos_id=V - 1, init_std=0.6)
    return tok, target, draft


def reference_warp(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Plain sampling's distribution, written independently of playground.engine.sampling."""
    probs = torch.softmax(logits.double() / temperature, -1)
    out = torch.zeros_like(probs)
    for row, p in enumerate(probs):
        order = torch.argsort(p, descending=True).tolist()
        order = order[:top_k] if top_k else order  # top-k first, then top-p on what is left
        p = p / p[order].sum()
        keep, mass = [], 0.0
        for tok in order:
            if keep and mass >= top_p:
                break
            keep.append(tok)
            mass += p[tok].item()
        out[row, keep] = p[keep] / p[keep].sum()
    return out


def exact_joint(model, length: int, params: dict) -> dict[tuple, float]:
    """P(x_1..x_length | PROMPT) under the warped target, by enumerating every sequence."""
    probs = {(): 1.0}
    for _ in range(length):
        prefixes = [s for s in probs if probs[s] > 0]
        batch = torch.tensor([PROMPT + list(s) for s in prefixes])
        with torch.no_grad():
            last = model(input_ids=batch).logits[:, -1]  # [n_prefixes, V]
        dist = reference_warp(last, **params)
        probs = {s + (t,): probs[s] * dist[i, t].item() for i, s in enumerate(prefixes) for t in range(V)}
    return probs


def chi_square_p(counts: dict, expected: dict, n: int) -> float:
    """Pearson's chi-square p-value; cells expecting fewer than 5 hits are pooled into one."""
    big = [c for c in expected if expected[c] * n >= 5]
    obs = [counts.get(c, 0) for c in big]
    exp = [expected[c] * n for c in big]
    obs.append(n - sum(obs))
    exp.append(n - sum(exp))
    if exp[-1] < 1e-9:
        assert obs[-1] == 0
        obs, exp = obs[:-1], exp[:-1]
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp))
    df = len(obs) - 1
    return torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                   torch.tensor(stat / 2, dtype=torch.float64)).item()


def first_tokens_counts(pair, length: int, kept: int, **settings) -> dict:
    """How often each first `kept` tokens came out of N_RUNS seeded runs writing `length` tokens."""
    counts = {}
    for seed in range(N_RUNS):
        ids = tuple(session.run(pair, PROMPT, session.spec_config(max_new_tokens=length, seed=seed, **settings)).token_ids)
        counts[ids[:kept]] = counts.get(ids[:kept], 0) + 1
    return counts


def sample_counts(pair, k: int, length: int, params: dict) -> dict:
    return first_tokens_counts(pair, length, length, k=k, **params)


CASES = {
    "plain": dict(temperature=1.0, top_k=0, top_p=1.0),
    "warped": dict(temperature=0.7, top_k=6, top_p=0.9),
}


@pytest.mark.parametrize("case", CASES)
def test_draft_model_sampling_matches_target(small, case):
    tok, target, draft = small
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    params = CASES[case]
    counts = sample_counts(pair, k=2, length=3, params=params)
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) > P_MIN


@pytest.mark.parametrize("way", [dict(k=4, **CASES["plain"]), dict(tree=(2, 2, 2), **CASES["warped"])], ids=["k4", "tree"])
def test_deep_rounds_keep_the_targets_law(small, way):
    """A run of 3 tokens drafts at most 2 in a round (it keeps budget - 1 and the target's token): the
    tests above never judged a third or fourth draft, nor a tree's third level. Runs of 5 tokens (the
    first round drafts 4, or a whole 3-level tree) have their first 3 compared with the target's law."""
    tok, target, draft = small
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    params = {key: way[key] for key in CASES["plain"]}
    first = session.run(pair, PROMPT, session.spec_config(max_new_tokens=5, seed=0, **way)).rounds[0]
    assert first.depth == (4 if "k" in way else 3)  # the depth the rounds reach
    counts = first_tokens_counts(pair, 5, 3, **way)
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) > P_MIN


def test_prompt_lookup_sampling_matches_target(small):
    tok, target, _ = small
    pair = tiny.make_pair(target, None, tok, eos_ids=[])
    params = CASES["plain"]
    counts = sample_counts(pair, k=3, length=3, params=params)
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) > P_MIN


def test_negative_control_draft_distribution_is_rejected(small):
    """Sampling from the draft alone (what 'accept everything' gives) must fail the same test."""
    tok, target, draft = small
    params = CASES["plain"]
    draft_joint = exact_joint(draft, 3, params)
    seqs, weights = zip(*draft_joint.items())
    picks = torch.multinomial(torch.tensor(weights), N_RUNS, replacement=True, generator=torch.Generator().manual_seed(0))
    counts = {}
    for i in picks.tolist():
        counts[seqs[i]] = counts.get(seqs[i], 0) + 1
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) < 1e-6


def test_acceptance_rule_first_token_is_exact():
    """The rule alone, on fixed distributions: the first emitted token is distributed as p[0]."""
    gen = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(3, 6, generator=gen) * 2, -1)  # [k+1, V], k = 2
    q = torch.softmax(torch.randn(2, 6, generator=gen) * 2, -1)  # [k, V]
    counts = torch.zeros(6)
    n = 20000
    for _ in range(n):
        x = torch.multinomial(q, 1, generator=gen).squeeze(-1)  # x_i ~ q_i
        accepted, nxt = verify_sampled(p, q, x, gen)
        first = x[0] if accepted > 0 else nxt
        counts[first] += 1
    expected = {(t,): p[0, t].item() for t in range(6)}
    assert chi_square_p({(t,): counts[t].item() for t in range(6)}, expected, n) > P_MIN


def test_a_draw_follows_its_row_and_never_takes_a_forbidden_token():
    """sampling.draw races the row against Exp(1) noise made on a CPU as -log(U) (torch's multinomial took
    five times as long): each token at its probability, a zero one never, the noise never 0 (a 0 would
    make its token win whatever its probability)."""
    from playground.engine.sampling import draw, exponential_noise_
    gen = torch.Generator().manual_seed(1)
    noise = exponential_noise_(torch.empty(200_000), gen)
    assert noise.min() > 0 and abs(noise.mean() - 1) < 0.01 and abs(noise.var() - 1) < 0.03  # Exp(1): mean and var 1
    probs = torch.tensor([[0.5, 0.0, 0.25, 0.125, 0.0, 0.125]])
    n = 20000
    tokens = torch.stack([draw(probs, probs.log(), SamplingParams(**CASES["plain"]), gen) for _ in range(n)]).flatten()
    counts = torch.bincount(tokens, minlength=6)
    assert counts[1] == counts[4] == 0
    expected = {(t,): probs[0, t].item() for t in (0, 2, 3, 5)}
    assert chi_square_p({(t,): counts[t].item() for t in (0, 2, 3, 5)}, expected, n) > P_MIN


def test_seeded_runs_reproduce(small):
    tok, target, draft = small
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    runs = [session.run(pair, PROMPT, session.spec_config(k=3, temperature=1.0, seed=s, max_new_tokens=20)).token_ids
            for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_warp_matches_reference():
    logits = torch.randn(5, 40, generator=torch.Generator().manual_seed(3)) * 3
    from playground.engine.sampling import warp
    for t, k, p in itertools.product([0.5, 1.0, 1.7], [0, 1, 7], [1.0, 0.8, 0.3]):
        ours = warp(logits, SamplingParams(temperature=t, top_k=k, top_p=p)).double()
        assert torch.allclose(ours, reference_warp(logits, t, k, p), atol=1e-5), (t, k, p)


CLOSE = dict(temperature=1.3, top_k=8, top_p=0.95)  # warped, with a close draft: many guesses kept


@pytest.mark.parametrize("way", [dict(k=3), dict(tree=(3, 2)), dict(k=3, policy="schedule")],
                         ids=["chain", "tree", "schedule"])
def test_a_close_draft_under_warping_keeps_many_guesses_and_the_targets_distribution(small, way):
    """The draft above had none of 900 warped guesses kept (2% at temperature 1): the warped tests
    never reach the rule's accept branch. A perturbed copy of the target has about half kept."""
    tok, target, _ = small
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, 0.3, seed=5), tok, eos_ids=[])
    counts, accepted = {}, 0
    for seed in range(N_RUNS):
        result = session.run(pair, PROMPT, session.spec_config(max_new_tokens=3, seed=seed, **CLOSE, **way))
        counts[tuple(result.token_ids)] = counts.get(tuple(result.token_ids), 0) + 1
        accepted += result.stats["accepted"]
    assert accepted > N_RUNS // 2, accepted  # half a guess kept a run at least, of the 3 tokens each writes (the far draft: none)
    assert chi_square_p(counts, exact_joint(target, 3, CLOSE), N_RUNS) > P_MIN


@pytest.mark.parametrize("given, said", [({"k": 2.5}, "k must be a whole number, got 2.5"),
                                         ({"k": "4"}, "k must be a whole number, got '4'"),
                                         ({"max_new_tokens": 10.5}, "max new tokens must be a whole number"),
                                         ({"seed": 1.5, "temperature": 0.5}, "seed must be a whole number"),
                                         ({"top_k": 2.5, "temperature": 0.5}, "top-k must be a whole number"),
                                         ({"top_p": "0.9", "temperature": 0.5}, "top-p must be a number"),
                                         ({"k": True}, "k must be a whole number, got True"),
                                         ({"tree": (2.5, 2)}, r"a token tree is a tuple of whole numbers"),
                                         ({"tree": ("2", "2")}, r"a token tree is a tuple of whole numbers"),
                                         ({"compile": "no"}, "compile must be True or False, got 'no'")])
def test_the_apis_settings_refuse_a_value_of_the_wrong_kind(given, said):
    """A CLI/API review: session.spec_config() took k=2.5, a seed of 1.5, max_new_tokens=10.5, which failed
    deep in the engine (TypeError; manual_seed's RuntimeError), and k='4' with a bare TypeError."""
    from playground.errors import PlaygroundError
    with pytest.raises(PlaygroundError, match=said):
        session.spec_config(**given)
    assert session.spec_config(k=np.int64(3), temperature=np.float32(0.5)).k == 3  # numpy's numbers are numbers
