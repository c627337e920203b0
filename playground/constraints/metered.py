"""A matcher whose work is bounded: each call's CPU time (the calling thread's, so another
process's load does not count) at most CONSTRAINT_STEP_SECONDS, a run's at most
CONSTRAINT_RUN_SECONDS. Past either the run stops with a PlaygroundError saying why, instead of
holding the server: an ambiguous grammar can make a parser's work per token grow with the output
(an Earley parser's rows), and no size of its text predicts that; so can a long stretch of text it
forces (a 100 KB const: the backends find the whole forced text again at every token, 40 ms a token
on the demo tokenizer), said apart from ambiguity where finding it took most of the time."""
import time

from playground import limits
from playground.constraints.matcher import Wrapper
from playground.errors import PlaygroundError

SIMPLER = ("simplify the constraint (an ambiguous grammar, one that parses a text in many ways such as a: a a | "
           "\"x\", makes the work grow with every token)")
LONG_FORCED = 256  # forced tokens in one answer past which finding them is said as the cost (an ambiguous grammar's
# forced tokens are few, however slow its parser makes finding them)
SHORTER = ("most of it finding the text the constraint forces, which is found whole again at every token: shorten "
           "long fixed text (a const or enum value, a property name, a grammar's string)")


class TooCostly(PlaygroundError):
    """A constraint's work per token, or over the run, went past the host's bound."""
    where = "constraint"


class MeteredMatcher(Wrapper):
    """Wraps a matcher (llguidance's, xgrammar's, a ThinkingMatcher) with the same methods, its work timed."""

    def __init__(self, inner):
        super().__init__(inner)
        self.step_seconds, self.run_seconds = limits.CONSTRAINT_STEP_SECONDS, limits.CONSTRAINT_RUN_SECONDS
        self.spent = 0.0  # CPU seconds of matcher work in this run
        self.consumed = 0  # tokens consumed and kept (for the message)
        self.forcing = 0.0  # of `spent`, the seconds finding forced text (forced_tokens)
        self.longest_forced = 0  # the most tokens one forced_tokens() answered

    def _timed(self, work, *args, forcing: bool = False):
        start = time.thread_time()
        out = work(*args)
        took = time.thread_time() - start
        self.spent += took
        if forcing:
            self.forcing, self.longest_forced = self.forcing + took, max(self.longest_forced, len(out))
        if took > self.step_seconds:
            why = SHORTER if forcing and len(out) >= LONG_FORCED else SIMPLER
            raise TooCostly(f"the constraint took {took:.2g} s of CPU for one step after {self.consumed} tokens, more "
                            f"than this host allows ({self.step_seconds:g} s): {why}")
        if self.spent > self.run_seconds:
            why = SHORTER if self.forcing > self.spent / 2 and self.longest_forced >= LONG_FORCED else SIMPLER
            raise TooCostly(f"the constraint took {self.spent:.0f} s of CPU in this run, more than this host allows "
                            f"({self.run_seconds:g} s): {why}, or ask for fewer new tokens")
        return out

    def fill_bitmask(self, row) -> None:
        self._timed(self.inner.fill_bitmask, row)

    def consume(self, token: int) -> bool:
        ok = self._timed(self.inner.consume, token)
        self.consumed += bool(ok)
        return ok

    def rollback(self, n: int) -> None:
        self._timed(self.inner.rollback, n)
        self.consumed -= n

    def forced_tokens(self) -> list[int]:
        return self._timed(self.inner.forced_tokens, forcing=True)
