"""One exception type for every mistake a user can make; its message is shown as is (CLI, UI)."""
import math
import re
from contextlib import contextmanager

# Where sizes counted (counts times what they repeat) stop growing, far past every limit: Python writes no whole
# number of more than 4,300 digits in a message (ValueError, a server error: 12,800 counts in a row made one of
# 38,000 digits); shown below says such numbers by their length (a seed of 4,300 digits came back whole)
SATURATED = 10**12


MESSAGE_CHARACTERS = 2_000  # a message's most: jsonschema's quoting a 200,000-character value made a popup of it
LOG_CHARACTERS = 500  # of a message in the server's log
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # characters that break or restyle a log's line
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides, isolates: they reorder what follows


class PlaygroundError(ValueError):
    """Bad input or an environment problem, phrased for the user: what is wrong and how to fix it.
    `where` ("model", "prompt", "constraint", "tree", "settings", or "" when unknown) names the input it is about."""
    where: str = ""

    def __init__(self, message: str = "", *args):
        super().__init__(cut(without_bidi_controls(str(message)), MESSAGE_CHARACTERS), *args)


def without_bidi_controls(text: str) -> str:
    """text with its bidi controls written as escapes (\\u202e): a message quoting a schema's property name that held
    U+202E was drawn backwards after it, in words a link's author chose (a review)."""
    return BIDI_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def cut(text: str, most: int) -> str:
    """At most `most` characters: its start and its end, where a refusal says what is wrong (a message cut
    again, once unpickled from a worker, stays as it is)."""
    if len(text) <= most:
        return text
    said = f" [... {len(text):,} characters in all ...] "
    head = (most - len(said)) // 2
    return text[:head] + said + text[len(text) - (most - len(said) - head):]


def for_log(message) -> str:
    """A message as one line of the server's log: control characters written as escapes (a newline and an ANSI
    escape typed into a schema's property name forged whole lines of the log, or hid them), at most LOG_CHARACTERS
    (a refused 200,000-character schema was logged whole: 160 KB a second from one address)."""
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), cut(str(message), LOG_CHARACTERS))


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
