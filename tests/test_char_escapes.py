"""A regex's or grammar's escape that names no character is refused before a backend reads it, and an
output whose bytes are not UTF-8 is never called valid (xgrammar wrote F4 90 80 80 for U+110000)."""
import re

import pytest

from playground import session
from playground.constraints import ConstraintSpec, from_user, spec as spec_module
from playground.constraints.compile import not_utf8
from playground.errors import PlaygroundError

BACKENDS = ["llguidance", "xgrammar"]
PAST_LAST = "past U+10FFFF"
HALF = "half of a UTF-16 surrogate pair"
REFUSED = [("grammar", r'root ::= "\U00110000"', PAST_LAST, r"\U00110000"),
           ("grammar", r"start: /\U00110000/", PAST_LAST, r"\U00110000"),
           ("grammar", r"start: /\x{110000}/", PAST_LAST, r"\x{110000}"),
           ("grammar", r"root ::= [a-\UFFFFFFFF]", PAST_LAST, r"\UFFFFFFFF"),
           ("grammar", r'root ::= "\ud800"', HALF, r"\ud800"), ("grammar", r"root ::= [\ud800-\udfff]", HALF, r"\ud800"),
           ("grammar", r'start: "\ude00\ud83d"', HALF, r"\ude00"), ("regex", r"a\ude00", HALF, r"\ude00"),
           ("grammar", r"start: /\U{11000A}/", PAST_LAST, r"\U{11000A}"), ("regex", r"\\\ud800", HALF, r"\ud800")]  # (an escaped backslash, then the escape)


@pytest.fixture(scope="module")
def pair():
    return session.load_pair("demo-target", "demo-draft", "cpu")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind, text, said, escape", REFUSED)
def test_an_escape_that_names_no_character_is_refused_by_name(kind, text, said, escape, backend):
    with pytest.raises(PlaygroundError, match=re.escape(said)) as raised:
        ConstraintSpec(kind, text, backend)
    assert f"the {kind}'s escape {escape} is" in str(raised.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_characters_written_as_escapes_still_run(pair, backend):
    """A surrogate pair in a Lark string is one character to both backends; an escaped backslash before
    'u' is no escape; \\x{2000} in a Lark regex is a character, not a count of 2000 (it was refused so)."""
    prompt = session.encode_prompt(pair, "x")
    cases = [(r'start: "\ud83d\ude00"', "\U0001F600"), (r'root ::= "\U0001F600"', "\U0001F600")]
    if backend == "llguidance":  # (xgrammar reads no \x{...} in a Lark regex: its own refusal)
        cases += [(r"start: /a\x{2000}/", "a\u2000"), (r"start: /a\U{2000}/", "a\u2000")]
    for grammar, text in cases:
        constraint = session.constrain(pair, from_user(grammar=grammar, backend=backend))
        result = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=8), constraint=constraint)
        assert (result.text, result.valid) == (text, True)
    ConstraintSpec("regex", r"\\ud800\\U00110000", backend)  # a backslash, then letters and digits


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_character_named_in_a_regex_is_that_character(pair, backend):
    """Python's \\N{...} passed the regex's check, then each backend refused it in words about something else
    (llguidance "such as Python's \\Z", xgrammar "Invalid repetition count"; a review): it is the character it names,
    in a class too, and a metacharacter named so is itself. A character that is none goes unescaped (a space and #
    were escaped, and xgrammar noted "Escape sequence '\\ ' is not recognized", which the user never typed)."""
    prompt = session.encode_prompt(pair, "x")
    regex = r"\N{GREEK SMALL LETTER ALPHA}[\N{DIGIT ONE}-\N{DIGIT THREE}]\N{ASTERISK}{2}"
    constraint = session.constrain(pair, from_user(regex=regex, backend=backend))
    result = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=8), constraint=constraint)
    assert re.fullmatch("α[1-3][*]{2}", result.text) and result.valid, result.text
    regex = r"a\N{SPACE}\N{NUMBER SIGN}\N{SOLIDUS}[\N{SPACE}\N{HYPHEN-MINUS}]\N{FULL STOP}"
    constraint = session.constrain(pair, from_user(regex=regex, backend=backend))
    result = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=12), constraint=constraint)
    assert re.fullmatch("a #/[ -][.]", result.text) and result.valid and constraint.notes == (), (result.text, constraint.notes)
    regex = r"[a\N{AMPERSAND}\N{AMPERSAND}b]{2}x[\N{TILDE}\N{TILDE}]"  # (&& and ~~ in a class: llguidance's set operations;
    constraint = session.constrain(pair, from_user(regex=regex, backend=backend))  # "can never be satisfied", a review)
    result = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=12), constraint=constraint)
    assert re.fullmatch(regex, result.text) and result.valid and constraint.notes == (), (result.text, constraint.notes)
    for regex, text in ((r"a{\N{DIGIT TWO}}", "a{2}"), (r"a{2\N{COMMA}3}", "a{2,3}")):  # Python reads a count as typed:
        constraint = session.constrain(pair, from_user(regex=regex, backend=backend))  # these braces are themselves (both
        result = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=8), constraint=constraint)  # backends
        assert (result.text, result.valid) == (text, True)  # wrote "aa" and "aaa", which the check refused)
    if backend == "xgrammar":  # a caret named first in a class is refused as the typed one is (xgrammar read it negated)
        with pytest.raises(PlaygroundError, match="an escaped caret as negated: put the \\^ later"):
            session.constrain(pair, from_user(regex=r"[\N{CIRCUMFLEX ACCENT}a]", backend=backend))


def test_bytes_that_are_no_utf8_are_named():
    token_bytes = (b"a", b"\xf4\x90", b"\x80\x80", "é".encode()[:1], "é".encode()[1:])
    assert not_utf8(token_bytes, [0, 1, 2]).startswith("the output's bytes are not UTF-8 text (byte 2: f4 90 80 80)")
    assert not_utf8(token_bytes, [0, 3, 4]) is None and not_utf8(token_bytes, [0, 3]) is None  # a cut character: the text's
    assert not_utf8(None, [1, 2]) is None


def test_an_output_xgrammar_wrote_past_the_last_character_is_invalid(pair, monkeypatch):
    """The check before refuses the escape; with it taken away, the run's own check still says no."""
    monkeypatch.setattr(spec_module, "check_escapes", lambda text, named: None)
    constraint = session.constrain(pair, from_user(grammar=r'root ::= "\U00110000"', backend="xgrammar"))
    assert constraint.token_bytes is not None
    result = session.run(pair, session.encode_prompt(pair, "x"), session.spec_config(k=3, max_new_tokens=8),
                         constraint=constraint)
    assert result.valid is False and "not UTF-8" in result.validation_error


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_python_reads_plainly_runs_on_both_backends(pair, backend):
    """A fuzzing review: llguidance read [&&] and [~~] as set operations ("can never be satisfied"), \\< and \\>
    as word boundaries, refused a class's \\b (a backspace to Python); both refused a comment (?#...)."""
    prompt = session.encode_prompt(pair, "x")
    for regex, text in ((r"[&&]", "&"), (r"[~~]a", "~a"), (r"\<a\>", "<a>"), (r"[\b]", "\b"), (r"(?#a note)ab", "ab")):
        constraint = session.constrain(pair, from_user(regex=regex, backend=backend))
        result = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=8), constraint=constraint)
        assert (result.text, result.valid) == (text, True), regex


def test_the_turkic_i_under_ignore_case_is_one_letter_in_a_negated_class(pair):
    """Python's (?i) reads i, I, İ and ı as one letter, llguidance as two pairs: (?i)[^a-z] wrote İ, which the
    check refused (a fuzzing review). A negated class holding any of them refuses all four; a last '-' stays itself."""
    from playground.constraints.llg import llguidance_meaning
    assert llguidance_meaning("(?i)[^a-z]") == "(?i)[^a-ziIİı]" and llguidance_meaning("(?i)[^i-]") == "(?i)[^iiIİı-]"
    assert llguidance_meaning("[^a-z]") == "[^a-z]" and llguidance_meaning("(?i)[^b]") == "(?i)[^b]"
    with pytest.raises(PlaygroundError, match="can never be satisfied"):  # (İ was the one it wrote)
        session.constrain(pair, from_user(regex="(?i)[^\\x00-\\u012f\\u0131-\\U0010ffff]", backend="llguidance"))
