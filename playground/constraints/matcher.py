"""The matcher protocol every backend's matcher and every wrapper around one keeps (playground.constraints.guide
drives it): fill_bitmask(row) writes the packed mask of the current state ([W] int32); consume(token) -> bool;
rollback(n) undoes the last n consumed tokens; forced_tokens() -> the ids the state forces (jump-forward);
accepting() -> whether the output may end here; error() -> what stopped the matcher, or None; some have
fork() (a copy of the state to look ahead with). A wrapper (NoSurrogates, UniqueKeys, MeteredMatcher)
extends Wrapper, changes what it must and hands the rest to the matcher it wraps; ThinkingMatcher
(reasoning.py) keeps the protocol on its own, every method its own."""


class Wrapper:
    """A matcher that hands every call to `inner`: a wrapper's base, overriding what it changes."""

    def __init__(self, inner):
        self.inner = inner

    def fill_bitmask(self, row) -> None:
        self.inner.fill_bitmask(row)

    def consume(self, token: int) -> bool:
        return self.inner.consume(token)

    def rollback(self, n: int) -> None:
        self.inner.rollback(n)

    def forced_tokens(self) -> list[int]:
        return self.inner.forced_tokens()

    def accepting(self) -> bool:
        return self.inner.accepting()

    def error(self) -> str | None:
        return self.inner.error()


def drop_last(states: list, n: int) -> None:
    """A wrapper's per-token states (one after each consumed token, the first before any) rolled back n."""
    if n:
        del states[len(states) - n:]
