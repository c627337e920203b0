"""The speedup shown to users: side by side, with its spread, and withheld when the machine's load
changed under the run. Pure functions of events, checked on constructed timings."""
from playground.events import BONUS, CORRECTED, Prefill, Round, TokenEvent
from playground.metrics import side_by_side_speedup


def rounds(seconds: list[float], tokens_each: int) -> list:
    kinds = [CORRECTED] * (tokens_each - 1) + [BONUS]
    out = [Prefill(10, 1, 0, 0.01, 0.0)]
    for i, s in enumerate(seconds):
        out.append(Round(i + 1, [TokenEvent(k, 5, "x") for k in kinds], 0, 0, 1, 0, 0.0, s, s))
    return out


def test_steady_runs_give_the_ratio_and_its_spread():
    spec = rounds([0.03] * 10 + [0.06] * 10, tokens_each=4)  # 80 tokens; the second half slower per round
    base = rounds([0.02] * 80, tokens_each=1)
    m = side_by_side_speedup(spec, base)
    assert not m["noisy"] and m["reason"] == ""
    assert abs(m["speedup"] - (0.01 + 1.6) / (0.01 + 0.9)) < 1e-9
    assert abs(m["high"] - 0.08 / 0.03) < 1e-9 and abs(m["low"] - 0.08 / 0.06) < 1e-9


def test_a_changing_load_is_reported_instead_of_a_ratio():
    spec = rounds([0.03] * 20, tokens_each=4)
    base = rounds([0.02] * 40 + [0.05] * 40, tokens_each=1)  # the machine got 2.5x slower halfway
    m = side_by_side_speedup(spec, base)
    assert m["noisy"] and "varied" in m["reason"]


def test_short_runs_are_too_short_to_judge():
    m = side_by_side_speedup(rounds([0.03] * 2, 4), rounds([0.02] * 8, 1))
    assert m["noisy"] and "only 8 tokens" in m["reason"]


def test_identity_is_said_with_the_first_difference():
    from playground.metrics import first_difference, identity_note
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2
    assert identity_note([1, 2], [1, 2], greedy=True) == "identical to the target alone"
    assert identity_note([1, 2, 3], [1, 2, 4], greedy=True) == "differs from the target alone from token 3"
    assert identity_note([1, 2], [7, 8], greedy=False) == "sampled"
