"""in_turns: ways of doing the same work timed one after another, turn by turn, the first turn a warm-up."""
from playground.models.in_turns import medians_in_turns, seconds_of


def test_ways_are_timed_in_turns_after_a_warm_up_and_stop_past_the_budget():
    order, clock = [], iter(range(1, 1000))
    ways = {"a": lambda: (order.append("a"), float(next(clock)))[1], "b": lambda: (order.append("b"), 0.5)[1]}
    medians = medians_in_turns(ways, tries=4)
    assert order == ["a", "b"] * 5  # one warm-up turn, then four counted
    assert medians == {"a": 3.5, "b": 0.5}  # a's counted seconds 2, 3, 4, 5 (1: its warm-up)
    order.clear()
    medians_in_turns(ways, tries=9, over_after_s=0.0)
    assert order == ["a", "b"] * 4  # past the budget: stopped after the warm-up and three counted turns


def test_seconds_of_runs_every_call():
    calls = []
    assert seconds_of(lambda *args: calls.append(args), [(1, 2), (3,)]) >= 0 and calls == [(1, 2), (3,)]


def test_no_counted_turn_is_refused():
    import pytest
    with pytest.raises(ValueError, match="one counted turn"):
        medians_in_turns({"a": lambda: 1.0}, tries=0)
