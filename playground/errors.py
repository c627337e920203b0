"""One exception type for every mistake a user can make; its message is shown as is (CLI, UI)."""


class PlaygroundError(ValueError):
    """Bad input or an environment problem, phrased for the user: what is wrong and how to fix it."""
