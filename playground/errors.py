"""One exception type for every mistake a user can make; its message is shown as is (CLI, UI)."""
from contextlib import contextmanager

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
