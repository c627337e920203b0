"""What the stream shows: a rejected newline stays on its line as a visible, struck-through symbol."""
from playground.events import ACCEPTED, CORRECTED, REJECTED, Round, TokenEvent
from playground.ui import render
from playground.ui.render import token_stream


def test_a_rejected_newline_is_a_symbol_not_a_line_break():
    tokens = [TokenEvent(ACCEPTED, 1, "x ="), TokenEvent(REJECTED, 2, "\n"), TokenEvent(CORRECTED, 3, " 1\n")]
    html = token_stream([Round(1, tokens, 1, 0, 1, 1, 0.0, 0.0, 0.0)])
    rejected = html.split('data-kind="rejected"')[1].split("</span>")[0]
    assert "↵" in rejected and "\n" not in rejected
    assert " 1\n" in html  # committed newlines are kept as they are


def test_stream_text_is_escaped():
    html = token_stream([Round(1, [TokenEvent(ACCEPTED, 1, "<img src=x onerror=alert(1)>")], 0, 0, 1, 0, 0.0, 0.0, 0.0)])
    assert "<img" not in html and "&lt;img" in html


def test_the_theory_card_is_shown_only_for_draft_models():
    from playground.metrics import summarize
    from playground.ui.render import metrics
    stats = summarize([Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 2, 1, 1, 2, 0.0, 0.0, 0.01)],
                      0.01)
    assert "theory" in metrics(stats, 2) and "theory" not in metrics(stats, 2, theory=False)


def test_the_verdict_carries_what_the_engine_did_not_enforce():
    html_text = render.validity_badge(True, None, ["not enforced while writing (checked after the run): <uniqueItems>"])
    assert 'id="valid-badge">valid<' in html_text and 'class="constraint-note"' in html_text
    assert "&lt;uniqueItems&gt;" in html_text and "<uniqueItems>" not in html_text
