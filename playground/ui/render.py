"""Events -> HTML for the UI: the colour-coded token stream with hover details, the legend, and the
live metrics. Pure functions of events and stats (no engine, no Gradio; the stream's spans memoized per run)."""
import collections
import dataclasses
import html
import re
import threading

import unicodedata

from playground.config import BUDGET_RAN_OUT, THINK_END
from playground.errors import BIDI_CONTROLS, without_bidi_controls
from playground.events import ACCEPTED, BONUS, CORRECTED, FORCED, KINDS, OPEN_END, REJECTED, Round
from playground.metrics import counted, expected_tokens_per_round, lookup_level

COLOURS = {ACCEPTED: "#16a34a", REJECTED: "#dc2626", CORRECTED: "#ea580c", BONUS: "#2563eb", FORCED: "#6b7280"}
# Each kind's underline in a shade of its colour that stands 3:1 against its own tint on white (the colours'
# own: 2.8:1 for accepted; kept in dark mode, where they do), and in a style of its own: colour alone told
# accepted from corrected to no one with deuteranopia (both olive there), and a refused draft has none, struck
# through instead (its solid one and a thin strike told it from a kept one, under deuteranopia the same olive
# tint, on a one-character token hardly at all; an accessibility review)
UNDERLINES = {ACCEPTED: ("#15803d", "solid"), REJECTED: ("#b91c1c", "none"), CORRECTED: ("#c2410c", "double"),
              BONUS: ("#1d4ed8", "dotted"), FORCED: ("#4b5563", "dashed")}
DARK_UNDERLINES = COLOURS | {REJECTED: "#f87171"}  # (a refused token's red, dimmed with it, stood 2.5:1 on dark)
MEANING = {
    ACCEPTED: "draft token the target kept",
    REJECTED: "draft token the target refused, or one after it, never judged (not part of the text)",
    CORRECTED: "the target's own token where it refused the draft",
    BONUS: "the target's own token after every guess was kept (or with no guess that round)",
    FORCED: "the only token the constraint allows (no guess: not counted as drafted or accepted)",
}


# What a screen reader is told on reaching the stream: read through, it says a refused draft's every token (32 in a
# 128-token run; an accessibility review)
READ_ALOUD = "Drafts the target refused are read after the word refused; the Text tab below has the output alone."


def legend() -> str:
    """One Tab stop (its first entry), arrow keys from entry to entry (page_style.PAGE_JS): its seven stops lay between
    Run and the tokens."""
    keys = "".join(f'<span class="key" tabindex="{0 if i == 0 else -1}" title="{MEANING[k]}"><span class="tok tok-{k}">{k}</span></span>'
                   for i, k in enumerate(KINDS))  # (each kind's name drawn as its tokens are, by page_style.CSS, dark
    # mode too: a 12 px swatch showed neither a refused draft's strike nor a dotted underline; an accessibility review)
    rounds = ('<span class="key" tabindex="-1" title="a dotted line separates rounds; an amber one marks a round whose drafting '
              'stopped early (adaptive length, EOS, no lookup match): hover, tap or focus it for why">'
              '<span class="round-sep"></span> round &nbsp;<span class="round-sep stopped"></span> stopped early</span>')
    return f'<div class="legend" role="group" aria-label="What the colours mean (arrow keys: each entry)">{keys}{rounds}</div>'


def token_stream(events: list, eos_ids=frozenset(), reasoning: int | None = None, judged: bool = True,
                 cut: bool = False) -> str:
    """All rounds' tokens, a dotted separator between rounds; hover for kind and probabilities. A
    thinking run's first `reasoning` committed tokens (with the drafts refused among them) are
    greyed in a fold, open while it still thinks; `judged`: a constraint judges what follows; `cut`:
    its thinking budget ran out (RunResult.thinking_cut)."""
    rounds = [event for event in events if isinstance(event, Round)]
    body = _spans(rounds, eos_ids) if reasoning is None else _thinking_and_answer(rounds, eos_ids, reasoning, judged, cut)
    body = body or '<span class="stream-placeholder">tokens appear here, coloured by what happened to them</span>'
    return (f'<div class="tokstream" id="token-stream" role="region" aria-label="Token stream (arrow keys: each '
            f'token\'s details)" aria-description="{READ_ALOUD}" tabindex="0">{body}</div>')


def _thinking_and_answer(rounds: list[Round], eos_ids, reasoning: int, judged: bool, cut: bool) -> str:
    thought, answer, committed, closed = [], [], 0, ""  # closed: the thinking's last characters (</think> once it ends)

    def part() -> list:  # thinking while fewer than `reasoning` tokens are committed
        return thought if committed < reasoning else answer
    for event in rounds:
        if thought or answer:
            part().append(_separator(event))
        for t in event.tokens:
            thinking = part() is thought
            part().append(_token_html(t, eos_ids))
            committed += t.kind != REJECTED
            closed = closed if not thinking or t.kind == REJECTED else (closed + t.text)[-len(THINK_END):]
    return _thinking(thought, reasoning, not answer and closed != THINK_END, judged, cut) + "".join(answer)


@dataclasses.dataclass
class _Drawn:
    first: Round  # the run's first round and the last drawn, held: their ids cannot name another run's meanwhile
    last: Round
    count: int  # rounds drawn
    html: str
    eos_ids: frozenset


_DRAWN: collections.OrderedDict = collections.OrderedDict()  # id(a run's first round) -> _Drawn, the newest runs'
DRAWN_RUNS = 8  # (each holds its stream: 1.1 MB at 2,000 tokens)
_DRAWN_LOCK = threading.Lock()


def _spans(rounds: list[Round], eos_ids) -> str:
    """Every round's spans, a separator between rounds. A run's rounds never change once taken, so an update
    draws only those new since the run's last (drawn whole, 6,000 spans took 26 ms an update, which the page's
    3% share of the time spaced 2 s apart; a streaming review)."""
    if not rounds:
        return ""
    with _DRAWN_LOCK:
        drawn = _DRAWN.pop(id(rounds[0]), None)
    if (drawn is None or drawn.first is not rounds[0] or drawn.eos_ids != eos_ids or drawn.count > len(rounds)
            or rounds[drawn.count - 1] is not drawn.last):
        drawn = _Drawn(rounds[0], rounds[0], 0, "", eos_ids)
    new = []
    for event in rounds[drawn.count:]:
        if drawn.html or new:
            new.append(_separator(event))
        new += [_token_html(t, eos_ids) for t in event.tokens]
    drawn.html, drawn.count, drawn.last = drawn.html + "".join(new), len(rounds), rounds[-1]
    with _DRAWN_LOCK:
        _DRAWN[id(rounds[0])] = drawn
        while len(_DRAWN) > DRAWN_RUNS:
            _DRAWN.popitem(last=False)
    return drawn.html


def _separator(event: Round) -> str:
    stopped = " stopped" if event.target_passes and event.proposed < event.k else ""
    return f'<span class="round-sep{stopped}" tabindex="-1" title="{html.escape(_round_title(event))}"></span>'


def open_ended(stream: str) -> str:
    """A stream drawn while its run goes on, without its closing tag: each update then starts with the one before
    and is sent as its new spans (Gradio sends a string that grows at its end as an append, any other whole; the
    browser closes the box itself). Sent whole, a 2,000-token run's updates came to 13-24 MB, 1.1 MB each at the end
    (a streaming review)."""
    return stream.removesuffix("</div>")


# The stream's box draws an update that starts with the one before by parsing its new spans alone, into the box the
# browser left open; any other update whole. Gradio's HTML component parsed each update whole and walked every node
# against the page's: 123-174 ms for 6,200 spans against 28-37 for appending 300, a 150-250 ms freeze every 1.5-2 s
# of a long run (a streaming review). Gradio draws `html_template` (here empty, so nothing of it changes) and calls this
# with the box as `element`, its value in `props`, `watch` run after each update.
STREAM_JS = """
let drawn = null;
const draw = () => {
  const value = props.value || '';
  if (value === drawn) return;
  const box = element.lastElementChild;  // the stream's own div (token_stream), open while the run goes on
  if (drawn !== null && box && box.id === 'token-stream' && value.startsWith(drawn))
    box.insertAdjacentHTML('beforeend', value.slice(drawn.length));
  else
    element.innerHTML = value;
  drawn = value;
};
draw();
watch('value', draw);
"""


def _thinking(parts: list[str], tokens: int | None, still: bool, judged: bool, cut: bool) -> str:
    if not parts:
        return ""
    summary = (f"thinking… {counted(tokens)}" if still else f"thought for {counted(tokens)}"
               + f" ({html.escape(BUDGET_RAN_OUT)})" * cut
               + " (the constraint judges what follows)" * judged)
    return (f'<details class="thinking" id="thinking"{" open" if still else ""}><summary>{summary}</summary>'
            f'{"".join(parts)}</details>')


def committed_text(events: list) -> str:
    """The text so far: every token but the rejected ones."""
    return "".join(t.text for e in events if isinstance(e, Round) for t in e.committed)


def _round_title(r: Round) -> str:
    why = f" ({r.stop_reason})" if r.stop_reason else ""
    if r.tree is not None:
        return (f"round {r.index}: a token tree of {len(r.tree['tokens'])} nodes, {r.depth} deep{why}, "
                f"accepted {r.accepted}")
    if r.k == 0:
        return f"round {r.index}: the target alone{why}"
    forced = f" ({r.forced_drafts} of them forced)" if r.forced_drafts else ""
    return f"round {r.index}: drafted {r.proposed} of k={r.k}{why}, accepted {r.accepted}{forced}"


EOS_MARK = "⏎eos"  # an end of sequence (no text of its own), in the stream and the tree alike


def _token_html(t, eos_ids) -> str:
    title = t.kind + "".join(f" · {name} {p:.3f}" for name, p in (("p_target", t.p_target), ("p_draft", t.p_draft))
                             if p is not None)
    if t.kind == REJECTED and t.p_target is None:
        title += " · never judged: it came after a refused guess"
    if t.token_id in eos_ids and not t.text:
        return f'<span class="tok tok-{t.kind} tok-eos" tabindex="-1" title="{title} · end of sequence">{EOS_MARK}</span>'
    text = t.text if t.kind != REJECTED else t.text.replace("\n", "↵")  # a refused newline stays on its line
    title += unseen_characters(text)
    text = drawn_controls(text)
    if not text:  # ('·' read as the middle dot of 列夫·托尔斯泰)
        title += (" · no text of its own: part of a character, finished by a later guess if one shows it" if t.kind == REJECTED
                  else " · no text of its own: part of a character a later token completes, or a special token")
        return (f'<span class="tok tok-{t.kind} tok-part" data-kind="{t.kind}" tabindex="-1" title="{html.escape(title)}" '
                f'aria-label="part of a character">◦</span>')  # (read "white bullet")
    named = (f' aria-label="{spoken_blank(text)}"' if not text.strip() else  # (a newline and its indent: heard as nothing)
             f' aria-label="{html.escape(named_characters(text))}"' if markless(text) else "")
    return (f'<span class="tok tok-{t.kind}" data-kind="{t.kind}" tabindex="-1" title="{html.escape(title)}"{named}>'
            f'{html.escape(text)}</span>')


BIDI_SHOWN = {0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO", 0x2066: "LRI", 0x2067: "RLI",
              0x2068: "FSI", 0x2069: "PDI"}  # Unicode's abbreviations of the bidi controls


def drawn_controls(text: str) -> str:
    """A token's text with its bidi controls drawn as their names (⟨RLO⟩): as themselves they reordered every chip
    after them, in words a link or a schema chose (a review: `ab⟨RLO⟩cd done 1` was drawn `ab soe⏎1 enod dc`)."""
    return BIDI_CONTROLS.sub(lambda m: f"⟨{BIDI_SHOWN[ord(m.group())]}⟩", text)


def unseen_characters(text: str) -> str:
    """For a chip's title: its characters that draw nothing of their own (format characters: bidi controls, a
    zero-width joiner...), by code point and name."""
    unseen = sorted({c for c in text if unicodedata.category(c) == "Cf"})
    return "".join(f" · U+{ord(c):04X} {unicodedata.name(c, 'a format character')}" for c in unseen[:4])


def markless(text: str) -> bool:
    """Whether a token draws nothing: format characters alone (a zero-width joiner between two emoji)."""
    return bool(text) and all(unicodedata.category(c) == "Cf" for c in text)


def named_characters(text: str) -> str:
    return ", ".join(unicodedata.name(c, f"U+{ord(c):04X}").lower() for c in text[:4])


def spoken_blank(text: str) -> str:
    """A token of white space in words, for a screen reader: '\n    ' -> 'newline, 4 spaces' (an accessibility review:
    such a token was heard as its kind and probabilities alone)."""
    parts = [(text.count("\n"), "newline"), (text.count(" "), "space"), (text.count("\t"), "tab")]
    words = [counted(n, noun) if n > 1 else noun for n, noun in parts if n]
    return ", ".join(words) or "white space"


def metrics(stats: dict | None, k: int | str, speedup: dict | None = None, same: str = "sampled",
            note: str = "", theory: bool = True, policy: str = "fixed", interleaved: bool = False, baseline: str = "",
            alone_per_pass: float | None = None) -> str:
    """speedup: the comparison's playground.measure.speedup.Speedup (None before it is over); same:
    metrics.identity_note of the two outputs; policy: an adaptive one makes k a ceiling; interleaved:
    the target alone ran between this run's rounds (its time is not this run's); baseline: how the target alone
    ran where slower than plain decoding (session.baseline_form), said under the speedup; alone_per_pass: the
    target alone's tokens per pass (forced tokens cost it no pass either).
    theory: show the expected tokens per round, whose formula assumes a draft model's per-token
    acceptance (prompt lookup's guesses are not drawn that way).
    Each card: its name, its figure, a line under it, and how it is counted in a fold of its own (a review: the
    captions ran to 90 words, 1.5 phone screens of them)."""
    if not stats:
        return '<div class="metrics"></div>'
    alpha, drafted = stats["token_acceptance"], stats["proposed"] > 0  # nothing drafted: no rate to give
    cards = [("acceptance rate", f"{stats['acceptance_rate']:.2f}" if drafted else "n/a", *_rate_lines(stats, k)),
             ("accepted per round", f"{stats['mean_accepted_per_round']:.2f}" if drafted else "n/a",
              _per_round_detail(stats, k, policy), ""),
             ("tokens per target pass", f"{stats['tokens_per_target_pass']:.2f}" if stats["generated_tokens"] else "n/a",
              *_pass_lines(stats, alone_per_pass)),
             ("tokens/s", f"{stats['tokens_per_s']:.1f}", f"{counted(stats['generated_tokens'])} in {stats['wall_s']:.2f} s",
              "its own time: the target alone's turns, taken between its rounds, not counted" if interleaved else "")]
    if theory and drafted:  # nothing measured before a draft's first guess
        cards.insert(3, ("theory", f"{stats['theory_tokens_per_round']:.2f}", *_theory_lines(stats, k, alpha)))
    if speedup is not None:
        name, value, short, more = _speedup_card(speedup, same)
        cards.append((name, value, short + (f"; {html.escape(baseline)}" if baseline else ""), more))
    said = [f"{counted(stats['generated_tokens'])} in {stats['wall_s']:.2f} s"] + [f"{card[0]} {card[1]}" for card in cards
                                                                               if card[0] in ("acceptance rate", "speedup")]
    body = "".join(_card(*card) for card in cards)  # (a list: a screen reader read the cards as one run-on paragraph)
    if note:
        body += f'<div class="metric metric-wide" role="listitem"><small>{html.escape(note)}</small></div>'
    return (f'<div class="metrics" id="metrics" role="list" aria-label="Run metrics" '
            f'data-said="{html.escape("; ".join(said))}">{body}</div>')


def _card(name: str, value: str, short: str, more: str) -> str:
    """A metric's card: the speedup's a row of its own; `more` (HTML) folded under "how it is counted", said to a
    screen reader with the card's name (five folds of one name; an accessibility review) (page_style.PAGE_JS keeps a
    fold open as the card is drawn again)."""
    wide = " metric-wide" if name == "speedup" else ""
    fold = (f'<details class="metric-more" data-card="{name}"><summary>how it is counted<span class="sr-only"> ({name})</span></summary><small>{more}</small></details>'
            if more else "")
    return f'<div class="metric{wide}" role="listitem"><small>{name}</small><b>{value}</b><small>{short}</small>{fold}</div>'


def _rate_lines(stats: dict, k: int | str) -> tuple[str, str]:
    """The acceptance card's line (kept of proposed, and a chain's α beside it: the theory card's and the
    calculator's, "0.36" and "0.57" read as two acceptances that disagree) and how it is counted."""
    if not stats["proposed"]:
        return "nothing was drafted", ""
    kept = f"{stats['accepted']} of {stats['proposed']}"
    if not isinstance(k, int):
        return (f"{kept} tree nodes kept", "accepted / verified tree nodes (every node of a tree counts, one branch at "
                "most is kept)")
    return (f"{kept} guesses kept; α = {stats['token_acceptance']:.2f}",
            "accepted / proposed draft tokens (the guesses after a rejection count as not kept); α: of the guesses the "
            "target judged, the share it kept, what the theory card and the speedup calculator take")


def _pass_lines(stats: dict, alone_per_pass: float | None) -> tuple[str, str]:
    """The passes card's line and fold: with forced tokens, the target alone's own figure beside it (a review:
    3.88 tokens a pass beside "about 0.89x", the target alone writing forced tokens without a pass too)."""
    passes = f"{stats['target_passes']} pass{'es' * (stats['target_passes'] != 1)}, prompt pass included"
    line = ("" if stats["generated_tokens"] else "no token written: ") + passes + (
        f"; {stats['forced']} tokens forced" if stats["forced"] else "")
    if not (stats["forced"] and alone_per_pass and stats["generated_tokens"]):
        return line, ""
    return (line + f"; the target alone {alone_per_pass:.2f}",
            f"a forced token is the only one the constraint allows: neither side runs a pass for it, so the target alone "
            f"writes {alone_per_pass:.2f} tokens a pass too, and speculation takes "
            f"{stats['tokens_per_target_pass'] / alone_per_pass:.2f}x fewer passes than it")


def _theory_lines(stats: dict, k: int | str, alpha: float) -> tuple[str, str]:
    """The theory card's line (the expectation beside what was measured) and its formula."""
    at_k, measured = stats["theory_tokens_per_round"], stats["tokens_per_round"]
    fewer = "the last draft fewer, within max new tokens; an adaptive policy or a lookup, fewer than k" + (
        "; a forced token is no guess" if stats["forced"] else "")
    short = f" (each round at the guesses it drafted: {fewer})" if (
        round(at_k, 2) != round(expected_tokens_per_round(alpha, k), 2)) else ""
    return (f"tokens a round expected at α = {alpha:.2f}; measured {measured:.2f}",
            f"tokens per round, (1 - α^(k+1)) / (1 - α){short}, if each guess were kept independently with "
            f"probability α (of the guesses the target judged, the share it kept); measured {measured:.2f} a round"
            + (" (forced tokens not counted)" if stats["forced"] else "") + ", the prompt pass not counted")


def _per_round_detail(stats: dict, k: int | str, policy: str) -> str:
    """What a round could draft (k, its ceiling under an adaptive policy, or a tree), and how many rounds
    drafted nothing (an acceptance of 1.00 over a handful of guesses read as a draft that always helps)."""
    if not isinstance(k, int):
        most = f"of {k}"
    else:
        most = f"of at most k = {k} (the {policy} policy)" if policy != "fixed" else f"of k = {k}"
    idle = stats.get("rounds_without_guesses", 0)
    return most + (f"; {counted(idle, 'round')} drafted nothing" if idle else "") + (
        f"; {lookup_level(stats)}" if stats.get("looked_up") else "")


def _speedup_card(m, same: str) -> tuple[str, str, str, str]:
    """(name, the ratio or the verdict, its line: interval and identity, how it was measured: its HTML escaped)
    of a playground.measure.speedup.Speedup, or why it cannot be told."""
    beyond = "another draw or a run under other load" if same == "sampled" else "a run under other load"  # (a sampled
    blocks = (f"{m.blocks} interleaved measurements" if m.blocks > 1 else  # run measures two draws, one where cut short)
              "one interleaved measurement")
    over = "over the interleaved measurements" if m.blocks > 1 else "side by side"
    more = (f"speculation {m.spec_tokens_per_s:.1f} tokens/s against the target alone's {m.base_tokens_per_s:.1f} {over} "
            "(the tokens/s card is this run's alone)" if m.spec_tokens_per_s and m.base_tokens_per_s else "")
    if more and m.other_lengths:  # (sampled texts of other lengths)
        more += f"; {m.other_lengths}"
    measured = (f"from one interleaved measurement: its interval is how its rounds varied; {beyond} can differ beyond "
                "it" if m.blocks == 1 else "the 95% interval, widened to each measurement's own ratio")  # (as bench says:
    more = "; ".join(filter(None, (measured, more)))  # two identical runs under load gave 1.05x and 1.27x, intervals apart)
    interval = "95% interval" + ", its top cut at the most its passes allow" * m.top_cut
    about = (f"; about {m.estimate:.2f}x" if m.estimate > 0 else "") + (f" ({same})" if same else "")  # (a Stop before
    # either run wrote a token said "about 0.00x")
    if m.noisy and m.verdict != "cannot tell":  # too wide for one number, but every measurement on one side of 1x
        return "speedup", f"{m.verdict}, {m.low:.2f}-{m.high:.2f}x", html.escape(f"too noisy for one number{about}"), html.escape(
            f"{m.reason}; {more}" if more else m.reason)
    if m.noisy:
        return "speedup", "cannot tell", html.escape(f"{m.reason}{about}"), html.escape(more)
    if m.verdict == "no clear difference":  # a number alone ("1.06x") read as faster
        return ("speedup", "no clear difference",
                html.escape(f"{m.speedup:.2f}x, but its {m.interval}, {m.low:.2f}-{m.high:.2f}x, holds 1x: as fast as "
                            f"the target alone within the noise ({blocks}); {same}"), html.escape(more))
    return ("speedup", f"{m.speedup:.2f}x", html.escape(f"{m.low:.2f}-{m.high:.2f}x ({interval}), {blocks}; {same}"),
            html.escape(more))


def warning(message: str) -> str:
    return f'<span class="badge badge-bad">{html.escape(message)}</span>'


def error(message: str, where: str, ended_early: bool = False) -> str:
    """A user error, shown once next to the input it is about; its `quoted` parts (a command to run,
    a schema's text) as code, as the CLI's reader takes them. `ended_early`: what ended a run part way (its
    own id: the page dims a refused run's output, said under Run as run-error, as the last run's)."""
    text = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", shown_message(message))
    own = f"{where}-ended" if ended_early else f"{where}-error"
    return f'<div class="field-error" id="{own}" role="alert">{text}</div>'


def pointer(place: str, where: str, ended_early: bool = False) -> str:
    """Under Run, where an error sits that may be out of sight ("in <section>", "at <input>"), a link to it (to the
    message at `where`: page_style.PAGE_JS scrolls to it and focuses its input; on a phone a model's message sat
    1,000 px below, in plain words); `ended_early`: a run that ended there part way, its output shown as its own
    (the page dims a refused run's, the last one's). A status, said politely: a Run refused for a message already shown
    (a constraint's, checked as typed) was said by nothing (an accessibility review), and a new message is an alert of
    its own, said first."""
    said, own = ("ended early", "run-ended-pointer") if ended_early else ("not run", "run-pointer")
    message = f"{where}-ended" if ended_early else f"{where}-error"
    return (f'<div class="field-error" id="{own}" role="status">{said}: <a class="message-link" href="#{message}" '
            f'data-where="{where}">see the message {html.escape(place)}</a></div>')


def progress_note(message: str, final: bool = False) -> str:
    """An experiment's progress line, kept while its results arrive."""
    mark = "" if final else '<span class="spinner"></span>'
    return f'<div class="progress-note" id="experiment-progress">{mark}{html.escape(message)}</div>'


def stopped_before_writing() -> str:
    """Under Run, for a Stop that came while the run's models loaded or its constraint compiled (it said nothing)."""
    return ('<div class="progress-note" id="run-stopped-early">stopped before the run wrote anything (while its models '
            'loaded or its constraint compiled): the output below, if any, is the last run\'s</div>')


def stopped(tokens: int, why: str = "") -> str:
    """why: what ended the run where Stop did not (its turn on the device: playground.ui.turn)."""
    return (f'<span class="badge badge-stopped" id="stopped-badge">stopped after {counted(tokens)}'
            f'{f" ({html.escape(why)})" if why else ""}: the text, stats and charts are what the run had produced</span>')


def validity_badge(valid: bool | None, error: str | None, notes: list[str] = (), open_end: bool = False) -> str:
    """The check's verdict ("valid as far as it goes", and why, where the budget cut an output that
    could have gone on), then what the constraint engine did not enforce while writing."""
    if valid is None:
        return ""
    said = "valid as far as it goes" if open_end else "valid"
    notes = [OPEN_END] * bool(valid and open_end) + list(notes)
    badge = (f'<span class="badge badge-ok" id="valid-badge">{said}</span>' if valid else
             f'<span class="badge badge-bad" id="valid-badge">invalid: {shown_message(error or "")}</span>')
    return badge + "".join(f'<div class="constraint-note">{shown_message(note)}</div>' for note in notes)


def shown_message(message: str) -> str:
    """A message (a check's verdict quoting the output, a note naming a schema's keyword) as HTML, its bidi controls
    as escapes (PlaygroundError's own are)."""
    return html.escape(without_bidi_controls(message))


def md_escape(text: str) -> str:
    """User text shown through Markdown: every Markdown or HTML character backslash-escaped, so
    it shows as typed, with no HTML, links or formatting of its own (':', '.' and '@' too: the
    page's Markdown turns bare URLs, www. names and e-mail addresses into links); on one line, so
    it cannot start a heading or a rule of its own ('=' and '-' under a line)."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+!|~&:.@=-" else " " if c in "\r\n" else c for c in text)


def holding_js(stops: str) -> str:
    """A JavaScript expression: whether a job whose Stop button is one of `stops` (a CSS selector list) holds the model:
    its Stop live, or pressed and the job still ending ('Stopping', disabled). A run clicked then waits for it."""
    return f"[...document.querySelectorAll('{stops}')].some(b => !b.disabled || b.textContent.trim() === 'Stopping')"
