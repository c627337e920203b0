"""Events -> HTML for the UI: the colour-coded token stream with hover details, the legend, and the
live metrics. Pure functions of events and stats (no engine, no Gradio)."""
import html
import re

from playground.config import BUDGET_RAN_OUT, THINK_END
from playground.events import ACCEPTED, BONUS, CORRECTED, FORCED, KINDS, OPEN_END, REJECTED, Round
from playground.metrics import counted, expected_tokens_per_round

COLOURS = {ACCEPTED: "#16a34a", REJECTED: "#dc2626", CORRECTED: "#ea580c", BONUS: "#2563eb", FORCED: "#6b7280"}
# Each kind's underline in a shade of its colour that stands 3:1 against its own tint on white (the colours'
# own: 2.8:1 for accepted; kept in dark mode, where they do), and in a style of its own: colour alone told
# accepted from corrected to no one with deuteranopia (both olive there)
UNDERLINES = {ACCEPTED: ("#15803d", "solid"), REJECTED: ("#b91c1c", "solid"), CORRECTED: ("#c2410c", "double"),
              BONUS: ("#1d4ed8", "dotted"), FORCED: ("#4b5563", "dashed")}
DARK_UNDERLINES = COLOURS | {REJECTED: "#f87171"}  # (a refused token's red, dimmed with it, stood 2.5:1 on dark)
MEANING = {
    ACCEPTED: "draft token the target kept",
    REJECTED: "draft token the target refused, or one after it, never judged (not part of the text)",
    CORRECTED: "the target's own token where it refused the draft",
    BONUS: "the target's own token after every guess was kept (or with no guess that round)",
    FORCED: "the only token the constraint allows (no guess: not counted as drafted or accepted)",
}

CSS = """
/* Gradio's wrapping code boxes take their least height from the first line's (a wrapped line is several
   lines tall) times their line count: a one-line schema opened 300-700 px tall, an export box twice its text */
#constraint-editor .cm-scroller { min-height: 8em !important; }
#export-vllm .cm-scroller, #export-sglang .cm-scroller { min-height: 0 !important; }
#constraint-editor label[data-testid="block-label"] { padding-right: 80px; }  /* its words wrap before the
   download and copy buttons (a phone's 390 px hid 'spaces here;' under them) */
.tokstream { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 14px; line-height: 1.7;
             white-space: pre-wrap; word-break: break-word; padding: 10px; border-radius: 8px;
             border: 1px solid var(--border-color-primary); min-height: 120px; max-height: 480px; overflow-y: auto; }
.tok { border-radius: 3px; }  /* no padding: a padded span is shaped alone, and Hindi's conjuncts broke into dotted
   circles, Arabic's letters into their isolated forms (the rounded underlines still show where a token ends) */
.tokstream, #output-text textarea, #baseline-text textarea, #prompt-box textarea { unicode-bidi: plaintext; }  /* each
   paragraph in the direction of its first letter: Arabic's full stop was drawn at its right, its start */
""" + "".join(f".tok-{k} {{ background: {COLOURS[k]}26; border-bottom: 3px {style} {shade}; }} "
               f".dark .tok-{k} {{ border-bottom-color: {DARK_UNDERLINES[k]}; }}\n" for k, (shade, style) in UNDERLINES.items()) + """
.legend .key i { border-bottom: 3px solid; height: 9px !important; }  /* each kind's underline, under its swatch */
.tok-rejected { text-decoration: line-through; opacity: 0.75; }  /* in the text's colour: its red (never drawn,
   Gradio's .prose rule won) would stand 2.9:1 dimmed */
.tok-rejected::before { content: "" / "refused: "; }  /* said by a screen reader, not shown (it read refused
   drafts as part of the text) */
.tok:focus-visible, .round-sep:focus-visible { outline: 2px solid var(--color-accent); outline-offset: 1px; }
.tok-eos { font-size: 11px; }  /* in the text's colour, as a token with no text's mark: the labels' grey on a
   token's tint stood 4.0:1 */
.thinking { margin-bottom: 6px; } .thinking .tok { color: var(--block-label-text-color); }  /* (opacity 0.45: 2.5:1;
   the labels' grey here and below: 4.8:1, where Gradio's subdued one is 1.9:1) */
.thinking summary { color: var(--block-label-text-color); cursor: pointer; font-style: italic; }
.stream-placeholder { color: var(--block-label-text-color); }
.skip-link { position: absolute; left: -9999px; }  /* shown where the keyboard's first Tab lands */
.skip-link:focus { left: 8px; top: 8px; z-index: 1000; padding: 6px 10px; border-radius: 6px;
                   background: var(--background-fill-primary); outline: 2px solid var(--color-accent); }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.gradio-container input:is([type=range], [type=radio], [type=checkbox]):focus-visible { outline: 2px solid
  var(--color-accent); outline-offset: 2px; }  /* Gradio's sliders, checked radios and checkboxes showed no focus at
  all (its `[type=radio]:focus-visible { outline: none }` won over this rule without the container's class) */
.round-sep { display: inline-block; width: 0; border-left: 1px dotted #9ca3af; height: 1.1em; margin: 0 1px;
             vertical-align: middle; }
.round-sep.stopped { border-left: 2px solid #f59e0b; }
.legend span.key { display: inline-block; margin-right: 14px; font-size: 13px; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 3px; margin-right: 4px; vertical-align: -1px; }
.metrics { display: flex; flex-wrap: wrap; gap: 8px; }
.metric { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 6px 10px; flex: 1 1 130px; }
.metric-wide { flex-basis: 100%; }
.metric b { display: block; font-size: 20px; }
.metric small { color: var(--body-text-color-subdued); }
#share-link:has(textarea:placeholder-shown), #experiment-share-link:has(textarea:placeholder-shown) { display: none; }  /* a link no longer true is gone, box and all */
.badge { display: inline-block; padding: 3px 10px; border-radius: 12px; font-weight: 600; }
.badge-ok { background: #16a34a22; color: #15803d; } .badge-bad { background: #dc262622; color: #b91c1c; }
.badge-stopped { background: #f59e0b22; color: #b45309; }
.constraint-note { font-size: 13px; color: #b45309; margin-top: 4px; }
#stop-button:disabled, #sweep-stop:disabled, #compare-stop:disabled { opacity: 0.4; cursor: not-allowed; }
.field-error { color: #b91c1c; background: #dc262614; border-left: 3px solid #dc2626; padding: 4px 8px;
               border-radius: 4px; font-size: 14px; white-space: pre-wrap; }
.progress-note { font-size: 14px; color: var(--body-text-color-subdued); }
.spinner { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border: 2px solid #9ca3af;
           border-top-color: transparent; border-radius: 50%; animation: spin 0.8s linear infinite; }
@keyframes spin { to { transform: rotate(360deg); } }
@media (prefers-reduced-motion: reduce) {  /* asked for by the system: the spinner and Gradio's pulses stand still */
  *, ::before, ::after { animation: none !important; transition: none !important; } }
#stream > [data-testid=status-tracker].translucent { background: var(--block-background-fill); }  /* loading's
   progress over the stream (its text ran through the placeholder's); not while tokens stream ("generating") */
#token-tip { position: fixed; z-index: 1000; max-width: 280px; padding: 4px 8px; border-radius: 6px; font-size: 12px;
             background: #111827; color: #f9fafb; pointer-events: none; }
#token-tip[hidden] { display: none; }
.cm-line > span { filter: brightness(0.5); }  /* Gradio's code boxes colour a schema, a command or Python in
   Nord's light palette, 1.6-4:1 on white (a string's yellow: 1.6:1): each coloured token at half its brightness,
   5.6:1 or more (4.9:1 on the line being edited); dark mode's palette reads as it is */
.dark .cm-line > span { filter: none; }
.info-text { color: var(--block-label-text-color) !important; }  /* a setting's help: Gradio's own grey on white
   is 1.9:1 (the draft length policy's was hard to read); the labels' grey, 4.8:1 */
/* A refused Run (its message under Run, or at the prompt just above it) leaves the last run's output below, as it
   was (nothing lost): dimmed and said to be the last run's, until the message goes (its input changed, a new Run) */
.block:has(#run-pointer, #run-error, #prompt-error) ~ #stream:has(.tok) .tokstream,
.block:has(#run-pointer, #run-error, #prompt-error) ~ #stream:has(.tok) ~ .block:has(#metrics, .badge),
.block:has(#run-pointer, #run-error, #prompt-error) ~ #stream:has(.tok) ~ .tabs :is(#output-text, #baseline-text,
  #race, #tree-view, #json-view, .js-plotly-plot)
  { opacity: 0.45; }  /* the run's own output: not the Export tab (the settings now) or the tabs themselves */
.block:has(#run-pointer, #run-error, #prompt-error) ~ #stream:has(.tok)::before {
  content: "The last run's output: this Run was refused (see the message above)"; display: block;
  font-size: 13px; color: #b45309; margin-bottom: 4px; }
/* An HTML box with nothing in it (a message not said, a run's badge before a run) takes no room: each left a
   20 px band and its gap, between the prompt and its constraint, under Run; one showing Gradio's progress stays */
.block:has(> .html-container > .prose:empty):not(:has(> [data-testid=status-tracker]:not(.hide))) { display: none; }
@media (max-width: 767px) {  /* a phone: the preset picker and what the preset is, then prompt, Run and output, then
   the settings (each with its default) below them, not 1,800 px of them before Run; the column's parts join the row
   to be ordered. Up to where Gradio stacks the two columns (at 640 px, a phone in landscape, 750 px wide, had its
   settings stacked above the prompt and Run 6 screens down) */
  #settings-column { display: contents; }
  #settings-column > * { order: 1; width: 100%; }
  #settings-column > :is(:has(#preset-box), #preset-note, :has(#preset-note)) { order: -1; }
  h1 { font-size: 20px !important; line-height: 1.25 !important; }  /* its three lines at 34 px pushed Run off the
     first screen once the preset's note joined the picker */
  #intro p { font-size: 14px !important; line-height: 1.45 !important; }
  #preset-note * { font-size: 13px !important; line-height: 1.4 !important; }  /* as a setting's help text */
  #constraint-editor .cm-editor { max-height: 40vh; }  /* a link's 28-line schema, wrapped, put Run 2.4 screens
     down: it scrolls within its box */
  .js-plotly-plot .modebar-container { display: none; }  /* a touch screen shows plotly's tool bar always, over
     each chart's title ('Accepted draft tokens per round' read through nine icons) */
}
/* Dark mode: the amber, green and red words above are drawn for white (the amber note read 3.8:1 on dark) */
.dark :is(.constraint-note, .badge-stopped), .dark .block:has(#run-pointer, #run-error, #prompt-error) ~ #stream:has(.tok)::before
  { color: #fbbf24; }
.dark .badge-ok { color: #4ade80; } .dark :is(.badge-bad, .field-error) { color: #f87171; }
#output-text textarea, #baseline-text textarea { font-family: ui-monospace, SFMono-Regular, Menlo, monospace;
                                                 font-size: 13px; }
"""


# A token's (a round mark's, a legend entry's) title, shown where it was tapped or clicked: a phone has no hover,
# and a token's probabilities (what each colour means) were out of its reach. Its text is set as text, never read as HTML.
# By keyboard: the stream is one Tab stop, its arrow keys (Home, End) go from token to token, each focused one's
# tip shown (the legend likewise, entry to entry), Escape hides it (a title's hover was the only way to a token's
# details). The run's badge (its verdict) is said by a screen reader as it changes (copied into a status line drawn
# for it alone). The Preset box's text on taking the focus is kept for PRESET_LEFT_JS.
PAGE_JS = """() => {
  if (window.pageJs) return;
  window.pageJs = true;
  const tip = Object.assign(document.createElement('div'), {id: 'token-tip', hidden: true});
  tip.setAttribute('aria-hidden', 'true');  // drawn for the eye: a focused mark's title is its description already
  // (a status line said each token twice)
  document.body.appendChild(tip);
  const MARKS = '.tok[title], .round-sep[title], .legend .key[title]';
  const markOf = (node) => node && node.closest ? node.closest(MARKS) : null;
  document.addEventListener('click', (event) => {
    show(markOf(event.target));
    if (event.target.closest && event.target.closest('.skip-link')) {  // (the link's own jump would not focus the box)
      event.preventDefault();
      const box = document.querySelector('#prompt-box textarea');
      if (box) box.focus();
    }
  });
  document.addEventListener('focusin', (event) => {
    const mark = markOf(event.target);
    if (mark) show(mark);
    if (event.target.closest && event.target.closest('#preset-box')) window.presetOnFocus = event.target.value;  // (PRESET_LEFT_JS)
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') { tip.hidden = true; return; }
    const stream = event.target.closest ? event.target.closest('#token-stream, .legend') : null;  // (the legend: one
    const step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -Infinity, End: Infinity}[event.key];
    if (!stream || step === undefined) return;  // Tab stop, its entries by arrow keys as the stream's tokens)
    const marks = [...stream.querySelectorAll(MARKS)].filter((m) => m.getClientRects().length);
    if (!marks.length) return;  // (those drawn: a closed thinking fold's are not, and focus() does nothing there)
    const at = marks.indexOf(markOf(event.target));
    const next = Math.abs(step) === Infinity ? (step > 0 ? marks.length - 1 : 0)
      : at < 0 ? (step > 0 ? 0 : marks.length - 1) : Math.max(0, Math.min(marks.length - 1, at + step));
    marks[next].focus();
    event.preventDefault();
  });
  const said = Object.assign(document.createElement('div'), {id: 'run-said', className: 'sr-only'});
  said.setAttribute('role', 'status');  // always drawn: the badge's own box is hidden while empty, and a live
  document.body.appendChild(said);  // region shown as it fills is not reliably read
  const badge = document.getElementById('run-badge');
  if (badge) new MutationObserver(() => { const text = badge.textContent.trim(); if (text) said.textContent = text; })
    .observe(badge, {childList: true, subtree: true, characterData: true});
  const stop = document.getElementById('stop-button');  // a run and its measuring over: what it came to, said once
  if (stop) new MutationObserver(() => {  // (only "common.complete", Gradio's own, was said at a run's end)
    const metrics = document.getElementById('metrics');
    if (stop.disabled && metrics && metrics.dataset.said && !document.getElementById('run-error'))
      said.textContent = ['Run over: ' + metrics.dataset.said, badge && badge.textContent.trim()].filter(Boolean).join('. ');
  }).observe(stop, {attributes: true, attributeFilter: ['disabled']});
  const describe = () => {  // the constraint editor and the prompt point at what is said about them (Gradio names
    const editor = document.querySelector('#constraint-editor .cm-content');  // its editor "Code input container")
    if (editor && !editor.hasAttribute('aria-label')) {
      editor.setAttribute('aria-label', 'Constraint (in it, Tab indents; Escape then Tab leaves it)');
      editor.setAttribute('aria-describedby', 'constraint-check');
    }
    for (const [input, message] of [['#prompt-box textarea', 'prompt-error'], ['#constraint-editor .cm-content', 'constraint-error']]) {
      const box = document.querySelector(input);
      if (box) box.setAttribute('aria-invalid', document.getElementById(message) ? 'true' : 'false');
    }
    for (const chart of document.querySelectorAll('.js-plotly-plot')) {  // named by what it shows (plots.described)
      const summary = chart._fullLayout && chart._fullLayout.meta && chart._fullLayout.meta.summary;
      if (summary && chart.getAttribute('aria-label') !== summary) {
        chart.setAttribute('role', 'img');
        chart.setAttribute('aria-label', summary);
      }
    }
    const prompt = document.querySelector('#prompt-box textarea');
    if (prompt && document.getElementById('prompt-error')) prompt.setAttribute('aria-describedby', 'prompt-error');
    else if (prompt) prompt.removeAttribute('aria-describedby');
  };
  new MutationObserver(describe).observe(document.body, {childList: true, subtree: true});
  describe();
  function show(mark) {
    if (!mark) { tip.hidden = true; return; }
    const at = mark.getBoundingClientRect();
    tip.textContent = mark.title;
    tip.style.left = Math.max(4, Math.min(at.left, window.innerWidth - 288)) + 'px';
    tip.hidden = false;
    const below = at.bottom + 6;  // above the token where it would end past the screen's foot (it was drawn off it)
    tip.style.top = (below + tip.offsetHeight <= window.innerHeight ? below : Math.max(4, at.top - 6 - tip.offsetHeight)) + 'px';
  }
  document.addEventListener('scroll', () => { tip.hidden = true; }, true);
}"""


# The page's first Tab stop: to the prompt (Run two stops after it, past the structured output's section; it was
# the 22nd stop from the top).
SKIP_LINK = '<a class="skip-link" href="#prompt-box">Skip to the prompt and Run</a>'


# A share link made: said by a screen reader (focus stays on its button, the link appears below it).
SAY_LINK_READY = """() => { const said = document.getElementById('run-said');
  if (said) said.textContent = 'Share link ready, below the button, with a copy button'; }"""


# The Preset box's .input, in the browser: the preset's name, or null where the box shows what it showed when it took
# the focus (only left: Tab, a click away); what it shows now is what the next one is judged against.
PRESET_LEFT_JS = """(name, ...typed) => {
  const box = document.querySelector('#preset-box input');
  const left = box !== null && box.value === window.presetOnFocus;
  if (box !== null) window.presetOnFocus = box.value;
  return [left ? null : name, ...typed];
}"""


def legend() -> str:
    """One Tab stop (its first entry), arrow keys from entry to entry (PAGE_JS): its seven stops lay between
    Run and the tokens."""
    keys = "".join(f'<span class="key" tabindex="{0 if i == 0 else -1}" title="{MEANING[k]}"><i style="background:'
                   f'{COLOURS[k]}26; border-color:{UNDERLINES[k][0]}; border-bottom-style:{UNDERLINES[k][1]}"></i>{k}</span>'
                   for i, k in enumerate(KINDS))
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
    thought, answer, committed, closed = [], [], 0, ""  # closed: the thinking's last characters (</think> once it ends)

    def part() -> list:  # thinking while fewer than `reasoning` tokens are committed
        return thought if reasoning is not None and committed < reasoning else answer
    for event in events:
        if not isinstance(event, Round):
            continue
        if thought or answer:
            stopped = " stopped" if event.target_passes and event.proposed < event.k else ""
            part().append(f'<span class="round-sep{stopped}" tabindex="-1" title="{html.escape(_round_title(event))}"></span>')
        for t in event.tokens:
            thinking = part() is thought
            part().append(_token_html(t, eos_ids))
            committed += t.kind != REJECTED
            closed = closed if not thinking or t.kind == REJECTED else (closed + t.text)[-len(THINK_END):]
    body = _thinking(thought, reasoning, not answer and closed != THINK_END, judged, cut) + "".join(answer)
    body = body or '<span class="stream-placeholder">tokens appear here, coloured by what happened to them</span>'
    return (f'<div class="tokstream" id="token-stream" role="region" aria-label="Token stream (arrow keys: each '
            f'token\'s details)" tabindex="0">{body}</div>')


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
    if not text:  # ('·' read as the middle dot of 列夫·托尔斯泰)
        title += " · no text of its own: part of a character a later token completes, or a special token"
        return f'<span class="tok tok-{t.kind} tok-part" data-kind="{t.kind}" tabindex="-1" title="{html.escape(title)}">◦</span>'
    return f'<span class="tok tok-{t.kind}" data-kind="{t.kind}" tabindex="-1" title="{html.escape(title)}">{html.escape(text)}</span>'


def metrics(stats: dict | None, k: int | str, speedup: dict | None = None, same: str = "sampled",
            note: str = "", theory: bool = True, policy: str = "fixed", interleaved: bool = False) -> str:
    """speedup: the comparison's playground.measure.speedup.Speedup (None before it is over); same:
    metrics.identity_note of the two outputs; policy: an adaptive one makes k a ceiling; interleaved:
    the target alone ran between this run's rounds (its time is not this run's).
    theory: show the expected tokens per round, whose formula assumes a draft model's per-token
    acceptance (prompt lookup's guesses are not drawn that way)."""
    if not stats:
        return '<div class="metrics"></div>'
    alpha, drafted = stats["token_acceptance"], stats["proposed"] > 0  # nothing drafted: no rate to give
    cards = [
        ("acceptance rate", f"{stats['acceptance_rate']:.2f}" if drafted else "n/a", _rate_detail(k, drafted, alpha)
         + (f": {stats['accepted']} of {stats['proposed']}" if drafted else "")),
        ("accepted per round", f"{stats['mean_accepted_per_round']:.2f}" if drafted else "n/a", _per_round_detail(stats, k, policy)),
        ("tokens per target pass", f"{stats['tokens_per_target_pass']:.2f}" if stats["generated_tokens"] else "n/a",
         ("" if stats["generated_tokens"] else "no token written: ")
         + f"{stats['target_passes']} pass{'es' * (stats['target_passes'] != 1)}, prompt pass included"
         + (f"; {stats['forced']} of the tokens forced by the constraint"
            if stats["forced"] else "")),
        ("tokens/s", f"{stats['tokens_per_s']:.1f}", f"{counted(stats['generated_tokens'])} in {stats['wall_s']:.2f} s"
         + (" of its own (the target alone's turns, taken between its rounds, not counted)" if interleaved else "")),
    ]
    if theory and drafted:  # nothing measured before a draft's first guess
        at_k = stats["theory_tokens_per_round"]
        fewer = "the last draft fewer, within max new tokens; an adaptive policy or a lookup, fewer than k" + (
            "; a forced token is no guess" if stats["forced"] else "")
        short = f" (each round at the guesses it drafted: {fewer})" if (
            round(at_k, 2) != round(expected_tokens_per_round(alpha, k), 2)) else ""
        cards.insert(3, ("theory", f"{at_k:.2f}",
                         f"tokens per round, (1 - α^(k+1)) / (1 - α){short}, if each guess were kept independently with "
                         f"probability α = {alpha:.2f} (of the guesses the target judged, the share it kept); measured "
                         f"{stats['tokens_per_round']:.2f} a round" + (" (forced tokens not counted)" if stats["forced"] else "")
                         + ", the prompt pass not counted"))
    if speedup is not None:
        cards.append(_speedup_card(speedup, same))
    said = [f"{counted(stats['generated_tokens'])} in {stats['wall_s']:.2f} s"] + [f"{name} {value}" for name, value, _ in cards
                                                                               if name in ("acceptance rate", "speedup")]
    wide = lambda name: " metric-wide" if name == "speedup" else ""  # noqa: E731  (its reasons: a row of their own)
    body = "".join(f'<div class="metric{wide(name)}"><small>{name}</small><b>{value}</b><small>{detail}</small></div>'
                   for name, value, detail in cards)
    if note:
        body += f'<div class="metric metric-wide"><small>{html.escape(note)}</small></div>'
    return f'<div class="metrics" id="metrics" data-said="{html.escape("; ".join(said))}">{body}</div>'


def _per_round_detail(stats: dict, k: int | str, policy: str) -> str:
    """What a round could draft (k, its ceiling under an adaptive policy, or a tree), and how many rounds
    drafted nothing (an acceptance of 1.00 over a handful of guesses read as a draft that always helps)."""
    if not isinstance(k, int):
        most = f"of {k}"
    else:
        most = f"of at most k = {k} (the {policy} policy)" if policy != "fixed" else f"of k = {k}"
    idle = stats.get("rounds_without_guesses", 0)
    return most + (f"; {counted(idle, 'round')} drafted nothing" if idle else "")


def _rate_detail(k: int | str, drafted: bool, alpha: float) -> str:
    """What the acceptance rate divides: a chain's drafts, or a tree's nodes (k names the tree); a chain's
    α beside it (the theory card's: two acceptances, 0.36 and 0.57, read as a contradiction)."""
    if isinstance(k, int):
        counted, more = "accepted / proposed draft tokens", (" (the guesses after a rejection count as not kept; "
                                                             f"of the guesses judged, α = {alpha:.2f} were kept)")
    else:
        counted, more = "accepted / verified tree nodes (every node of a tree counts, one branch at most is kept)", ""
    return counted + (more if drafted else ": nothing was drafted")


def _speedup_card(m, same: str) -> tuple[str, str, str]:
    """The ratio with its interval (playground.measure.speedup.Speedup), or why it cannot be told."""
    blocks = (f"{m.blocks} interleaved measurements" if m.blocks > 1 else  # (as bench says it: two identical runs
              "one interleaved measurement (its interval: how its rounds varied; a run under other load can "
              "differ beyond it)")  # under load gave 1.05x and 1.27x, their intervals apart)
    over = "over the interleaved measurements" if m.blocks > 1 else "side by side"
    rates = (f"; speculation {m.spec_tokens_per_s:.1f} tok/s against the target alone's {m.base_tokens_per_s:.1f} {over} "
             "(tokens/s above is this run's alone)" if m.spec_tokens_per_s and m.base_tokens_per_s else "")
    if rates and m.other_lengths:  # (sampled texts of other lengths)
        rates += f"; {m.other_lengths}"
    about = (f"; about {m.estimate:.2f}x" if m.estimate > 0 else "") + (f" ({same})" if same else "")  # (a Stop before
    # either run wrote a token said "about 0.00x")
    if m.noisy and m.verdict != "cannot tell":  # too wide for one number, but every measurement on one side of 1x
        return ("speedup", f"{m.verdict}, {m.low:.2f}-{m.high:.2f}x", html.escape(f"too noisy for one number: {m.reason}{about}{rates}"))
    if m.noisy:
        return "speedup", "cannot tell", html.escape(f"{m.reason}{about}{rates}")
    if m.verdict == "no clear difference":  # a number alone ("1.06x") read as faster
        return ("speedup", "no clear difference",
                html.escape(f"{m.speedup:.2f}x, but its 95% interval, {m.low:.2f}-{m.high:.2f}x, holds 1x: as fast as "
                            f"the target alone within the noise ({blocks}); {same}{rates}"))
    return ("speedup", f"{m.speedup:.2f}x",
            html.escape(f"{blocks}, {m.low:.2f}-{m.high:.2f}x (95% interval); {same}{rates}"))


def warning(message: str) -> str:
    return f'<span class="badge badge-bad">{html.escape(message)}</span>'


def error(message: str, where: str) -> str:
    """A user error, shown once next to the input it is about; its `quoted` parts (a command to run,
    a schema's text) as code, as the CLI's reader takes them."""
    text = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(message))
    return f'<div class="field-error" id="{where}-error" role="alert">{text}</div>'


def pointer(place: str) -> str:
    """Under Run, where an error sits that may be out of sight ("in <section>", "at <input>")."""
    return f'<div class="field-error" id="run-pointer">not run: see the message {html.escape(place)}</div>'


def progress_note(message: str, final: bool = False) -> str:
    """An experiment's progress line, kept while its results arrive."""
    mark = "" if final else '<span class="spinner"></span>'
    return f'<div class="progress-note" id="experiment-progress">{mark}{html.escape(message)}</div>'


def stopped(tokens: int) -> str:
    return (f'<span class="badge badge-stopped" id="stopped-badge">stopped after {counted(tokens)}: the text, '
            f'stats and charts are what the run had produced</span>')


def validity_badge(valid: bool | None, error: str | None, notes: list[str] = (), open_end: bool = False) -> str:
    """The check's verdict ("valid as far as it goes", and why, where the budget cut an output that
    could have gone on), then what the constraint engine did not enforce while writing."""
    if valid is None:
        return ""
    said = "valid as far as it goes" if open_end else "valid"
    notes = [OPEN_END] * bool(valid and open_end) + list(notes)
    badge = (f'<span class="badge badge-ok" id="valid-badge">{said}</span>' if valid else
             f'<span class="badge badge-bad" id="valid-badge">invalid: {html.escape(error or "")}</span>')
    return badge + "".join(f'<div class="constraint-note">{html.escape(note)}</div>' for note in notes)


def md_escape(text: str) -> str:
    """User text shown through Markdown: every Markdown or HTML character backslash-escaped, so
    it shows as typed, with no HTML, links or formatting of its own (':', '.' and '@' too: the
    page's Markdown turns bare URLs, www. names and e-mail addresses into links); on one line, so
    it cannot start a heading or a rule of its own ('=' and '-' under a line)."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+!|~&:.@=-" else " " if c in "\r\n" else c for c in text)
