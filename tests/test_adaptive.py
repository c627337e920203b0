"""Smarter drafting (adaptive draft length, cascades) stays lossless: greedy output equals the
target's, sampling reproduces the target's distribution, and no round proposes more than k."""
import pytest

from playground import session
from playground.engine.schedule import HeuristicK, pass_cost
from tests import tiny
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy
from tests.test_engine_sampling import CASES, N_RUNS, P_MIN, chi_square_p, exact_joint, small  # noqa: F401

MODES = {"schedule": dict(policy="schedule"), "confidence": dict(policy="confidence", confidence=0.6),
         "cascade": dict(policy="fixed"), "cascade-confidence": dict(policy="confidence", confidence=0.6)}


def mode_pair(mode, target, draft, tokenizer, eos_ids=()):
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=eos_ids)
    pair.cascade = mode.startswith("cascade")
    return pair


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [2, 5, 9])
def test_greedy_identity(mode, k, target, noisy_draft, tokenizer):
    pair = mode_pair(mode, target, noisy_draft, tokenizer)
    prompt = tokenizer(PROMPT + "name\n    for name in os.listdir(path):\n        ").input_ids
    result = session.run(pair, prompt, session.spec_config(k=k, max_new_tokens=48, **MODES[mode]))
    assert result.token_ids == hf_greedy(target, prompt, 48, eos_id=NO_EOS)
    assert all(r.proposed <= k for r in result.rounds)  # never more than the ceiling


def test_schedule_follows_plus_two_minus_one(target, noisy_draft, tokenizer):
    pair = mode_pair("schedule", target, noisy_draft, tokenizer)
    result = session.run(pair, tokenizer(PROMPT).input_ids, session.spec_config(k=8, max_new_tokens=80, policy="schedule"))
    expected = HeuristicK(8)
    for r in result.rounds[:-1]:  # the last round is cut by the token budget
        assert r.k == expected.next_k()
        expected.observe(r.proposed, r.accepted, pass_cost(r.draft_s, r.draft_passes, r.target_s))
    assert len({r.k for r in result.rounds}) > 1
    steps = set()
    for a, b in zip(result.rounds[:-2], result.rounds[1:-1]):  # the rule itself, not only HeuristicK's word for it
        if a.k and a.proposed == a.k:  # (a round of k guesses, none cut by the budget)
            want = min(8, a.k + 2) if a.accepted == a.proposed else a.k - 1 if a.k > 1 else None
            if want is not None:
                assert b.k == want, (a, b)
                steps.add(b.k - a.k)
    assert {2, -1} <= steps  # both ways were taken


def test_schedule_pauses_where_guesses_fail():
    """A guess refused at k=1, where a guess does not pay (acceptance rate under the draft pass's
    cost in target passes), pauses drafting (k=0); each refused probe doubles the pause up to
    MAX_PAUSE, and a kept probe ends it."""
    from playground.engine.schedule import MAX_PAUSE
    policy, ks = HeuristicK(4), []
    for _ in range(80):
        ks.append(policy.next_k())
        policy.observe(ks[-1], 0, cost=1.0)  # every guess refused; a draft pass as slow as the target's
    assert ks[:12] == [2, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1]
    probes = [i for i, k in enumerate(ks) if k]
    assert max(b - a - 1 for a, b in zip(probes, probes[1:])) == MAX_PAUSE
    while policy.next_k() == 0:
        policy.observe(0, 0)
    policy.observe(1, 1)  # the probe kept
    assert policy.next_k() == 3 and policy.pause == 0


def test_a_cheap_draft_keeps_drafting_through_refusals():
    """A guess kept half the time pays where a draft pass costs a tenth of the target's: no pause;
    kept never, it does not: pauses. Untimed (cost None): transformers' schedule as it is."""
    cheap, ks, ones = HeuristicK(4), [], 0
    for _ in range(60):  # every guess refused but every other one drafted alone (k=1): a ~ 0.2
        ks.append(cheap.next_k())
        ones += ks[-1] == 1
        cheap.observe(ks[-1], ones % 2 if ks[-1] == 1 else 0, cost=0.1)
    assert 0 not in ks and ks.count(1) > 20
    for _ in range(20):  # none kept: a falls under c
        ks.append(cheap.next_k())
        cheap.observe(ks[-1], 0, cost=0.1)
    assert 0 in ks[-20:]
    untimed = HeuristicK(4)
    for _ in range(30):
        untimed.observe(untimed.next_k(), 0)
    assert untimed.next_k() == 1


def test_the_schedules_acceptance_counts_the_guesses_the_target_judged():
    """A round of 4 guesses whose second was refused judged 2 of them (the last 2 never were): its
    running rate, compared with c for pausing, took 1 of 4 as a per-guess rate and read 0.25 for 0.5
    (a review)."""
    policy = HeuristicK(4)
    policy.rate = 0.5
    policy.observe(4, 1, cost=0.1)
    assert policy.rate == pytest.approx(0.5)  # 1 kept of 2 judged: the running rate stays
    policy.observe(4, 4, cost=0.1)
    assert policy.rate == pytest.approx(0.5 + 0.3 * 0.5)  # all 4 judged and kept


def test_schedule_pauses_yet_keeps_the_targets_output(target, tokenizer):
    """A draft that never agrees: the schedule pauses (rounds without a guess), the output stays the target's."""
    bad = tiny.tiny_model(vocab=len(tokenizer), seed=99)
    pair = mode_pair("schedule", target, bad, tokenizer)
    prompt = tokenizer(PROMPT).input_ids
    result = session.run(pair, prompt, session.spec_config(k=4, max_new_tokens=40, policy="schedule"))
    assert result.token_ids == hf_greedy(target, prompt, 40, eos_id=NO_EOS)
    paused = [r for r in result.rounds if r.k == 0]
    assert len(paused) > len(result.rounds) / 2 and all(r.draft_passes == 0 for r in paused)


def test_confidence_stop_is_shown(target, noisy_draft, tokenizer):
    pair = mode_pair("confidence", target, noisy_draft, tokenizer)
    result = session.run(pair, tokenizer(PROMPT).input_ids,
                         session.spec_config(k=6, max_new_tokens=40, policy="confidence", confidence=0.05))
    stops = [r.stop_reason for r in result.rounds if r.stop_reason.startswith("draft unsure")]
    assert stops and all(r.proposed < 6 for r in result.rounds if r.stop_reason.startswith("draft unsure"))


def test_cascade_uses_lookup_and_saves_draft_passes(target, tokenizer):
    repetitive = tokenizer("a = [1, 2, 3]\nb = [1, 2, 3]\nc = [1, 2, 3]\nd = [1, 2, 3]\n").input_ids
    pair = mode_pair("cascade", target, target, tokenizer)  # the draft agrees with every true guess
    cascade = session.run(pair, repetitive, session.spec_config(k=6, max_new_tokens=40))
    plain = session.run(mode_pair("fixed", target, target, tokenizer), repetitive, session.spec_config(k=6, max_new_tokens=40))
    assert cascade.token_ids == plain.token_ids
    assert cascade.stats["draft_passes"] < plain.stats["draft_passes"]  # looked-up tokens checked in one pass
    assert all(r.stop_reason == "" for r in cascade.rounds if r.proposed == r.k)  # a full round has no stop reason
    # the lookup level counted: what it offered the draft model, and what it kept (the draft is the target here:
    # every guess it kept, the target kept too)
    looked = [r for r in cascade.rounds if r.looked_up]
    assert looked and all(r.lookup_kept <= r.looked_up <= r.k - 1 and r.lookup_kept <= r.accepted for r in looked)
    assert cascade.stats["looked_up"] == sum(r.looked_up for r in cascade.rounds) > cascade.stats["lookup_kept"] > 0
    assert cascade.stats["lookup_kept"] == sum(r.lookup_kept for r in cascade.rounds)
    assert plain.stats["looked_up"] == plain.stats["lookup_kept"] == 0 and not any(r.looked_up for r in plain.rounds)
    assert [j["looked_up"] for j in cascade.as_json()["rounds"]] == [r.looked_up for r in cascade.rounds]


def test_a_cascade_keeps_the_confidence_stop(target, noisy_draft, tokenizer):
    """The cascade kept every looked-up guess the draft agreed with, however unsure it was of them: at
    confidence 0.9 the draft alone proposed nothing and the cascade 71 guesses, some at p 0.03 (a review)."""
    repetitive = tokenizer("a = [1, 2, 3]\nb = [1, 2, 3]\nc = [1, 2, 3]\nd = [1, 2, 3]\n").input_ids
    cfg = session.spec_config(k=6, max_new_tokens=40, policy="confidence", confidence=0.5)
    result = session.run(mode_pair("cascade", target, noisy_draft, tokenizer), repetitive, cfg)
    drafted = [t for r in result.rounds for t in r.drafts]
    assert result.token_ids == hf_greedy(target, repetitive, 40, eos_id=NO_EOS)
    assert all(t.p_draft >= 0.5 for t in drafted)  # greedy: each kept guess is the draft's most likely token
    assert any(r.stop_reason.startswith("draft unsure") for r in result.rounds)


@pytest.mark.parametrize("mode", MODES)
def test_sampling_matches_target(small, mode):  # noqa: F811
    tok, target, draft = small
    pair = mode_pair(mode, target, draft, tok)
    params = CASES["plain"]
    counts = {}
    for seed in range(N_RUNS):
        cfg = session.spec_config(k=2, max_new_tokens=3, seed=seed, **params, **MODES[mode])
        ids = tuple(session.run(pair, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3], cfg).token_ids)
        counts[ids] = counts.get(ids, 0) + 1
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) > P_MIN
