"""One exception type for every mistake a user can make; its message is shown as is (CLI, UI)."""
import math
from contextlib import contextmanager

# Where sizes counted (counts times what they repeat) stop growing, far past every limit: Python writes no whole
# number of more than 4,300 digits in a message (ValueError, a server error: 12,800 counts in a row made one of
# 38,000 digits); shown below says such numbers by their length (a seed of 4,300 digits came back whole)
SATURATED = 10**12


class PlaygroundError(ValueError):
    """Bad input or an environment problem, phrased for the user: what is wrong and how to fix it.
    `where` ("model", "prompt", "constraint", "tree", "settings", or "" when unknown) names the input it is about."""
    where: str = ""


@contextmanager
def blamed_on(where: str):
    """Errors raised inside name `where` as their cause, unless they already name one."""
    try:
        yield
    except PlaygroundError as exc:
        exc.where = exc.where or where
        raise


def shown(value) -> str:
    """A refused value as its message says it back: a whole number of more than 24 digits by its count of
    digits, anything else at most 40 characters (a string as Python writes it, quoted)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**24:
        try:
            digits = len(str(abs(value)))
        except ValueError:  # past Python's 4,300 digits
            digits = int(math.log10(abs(value))) + 1
        return f"a {'negative ' * (value < 0)}number of {digits:,} digits"
    text = str(value) if isinstance(value, (int, float)) else repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
