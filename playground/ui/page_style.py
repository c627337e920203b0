"""The page's own CSS (the token kinds' tints and underlines from render's colours) and its small scripts
run in the browser: a token's details by keyboard, a share link said, the preset box left."""
from playground.ui.render import COLOURS, DARK_UNDERLINES, UNDERLINES

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
.tok { border-radius: 3px; padding-bottom: 2px; }  /* no padding across the line: a span padded at its sides is
   shaped alone, and Hindi's conjuncts broke into dotted circles, Arabic's letters into their isolated forms (the
   rounded underlines still show where a token ends); 2 px below it, the underline clears an underscore (at 1x it
   hid them: `__init__` read "  init  "; a visual review) */
.tokstream, #output-text textarea, #baseline-text textarea, #prompt-box textarea { unicode-bidi: plaintext; }  /* each
   paragraph in the direction of its first letter: Arabic's full stop was drawn at its right, its start */
""" + "".join(f".tok-{k} {{ background: {COLOURS[k]}26; border-bottom: 3px {style} {shade}; }} "
               f".dark .tok-{k} {{ border-bottom-color: {DARK_UNDERLINES[k]}; }}\n"
               for k, (shade, style) in UNDERLINES.items()) + """
.tok-rejected { text-decoration: line-through 2px; opacity: 0.75; }  /* in the text's colour: its red (never drawn,
   Gradio's .prose rule won) would stand 2.9:1 dimmed; 2 px, seen on a comma */
.tok-rejected::before { content: "" / " refused: "; }  /* said by a screen reader, not shown (it read refused
   drafts as part of the text); spaced, and closed, from the tokens beside it ("returnrefused: self" ran together,
   an accessibility review) */
.tok-rejected::after { content: "" / "; "; }
.legend .tok-rejected::before, .legend .tok-rejected::after { content: none; }  /* the legend's word is its name */
.tok:focus-visible, .round-sep:focus-visible { outline: 2px solid var(--color-accent); outline-offset: 1px; }
.tok-eos { font-size: 11px; }  /* in the text's colour, as a token with no text's mark: the labels' grey on a
   token's tint stood 4.0:1 */
.thinking { margin-bottom: 6px; } .thinking .tok { color: var(--block-label-text-color); }  /* (opacity 0.45: 2.5:1;
   the labels' grey here and below: 4.8:1, where Gradio's subdued one is 1.9:1) */
.thinking summary { color: var(--block-label-text-color); cursor: pointer; font-style: italic; }
.stream-placeholder { color: var(--block-label-text-color); }
#page-head { position: absolute; }  /* the page's style and skip link take no room (a 36 px band topped each page) */
#settings-column > :has(#settings-jump) { display: none; }  /* a phone's alone (below) */
.settings-jump { font-size: 13px; }
.skip-link { position: absolute; left: -9999px; }  /* shown where the keyboard's first Tab lands */
.skip-link:focus { left: 8px; top: 8px; z-index: 1000; padding: 6px 10px; border-radius: 6px;
                   background: var(--background-fill-primary); outline: 2px solid var(--color-accent); }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.reader-heading { position: absolute !important; width: 1px !important; height: 1px; overflow: hidden; clip-path: inset(50%); }
.gradio-container input:is([type=range], [type=radio], [type=checkbox]):focus-visible { outline: 2px solid
  var(--color-accent); outline-offset: 2px; }  /* Gradio's sliders, checked radios and checkboxes showed no focus at
  all (its `[type=radio]:focus-visible { outline: none }` won over this rule without the container's class) */
.round-sep { display: inline-block; width: 0; border-left: 1px dotted #9ca3af; height: 1.1em; margin: 0 1px;
             vertical-align: middle; }
.round-sep.stopped { border-left: 2px solid #f59e0b; }
.legend span.key { display: inline-block; margin-right: 14px; font-size: 13px; }
.metrics { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-start; }  /* each card its own height (the
   theory card's 9 lines made every card of its row as tall, "accepted per round" 80% empty; a visual review) */
.metric { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 6px 10px; flex: 1 1 130px; }
.metric-wide { flex-basis: 100%; }
.metric b { display: block; font-size: 20px; }
.metric small { color: var(--body-text-color-subdued); }
.metric-more summary { font-size: 12px; color: var(--body-text-color-subdued); cursor: pointer; }
.metric-more[open] summary { margin-bottom: 2px; }
#share-link:has(textarea:placeholder-shown), #experiment-share-link:has(textarea:placeholder-shown) { display: none; }  /* a link no longer true is gone, box and all */
.badge { display: inline-block; padding: 3px 10px; border-radius: 12px; font-weight: 600; }
.badge-ok { background: #16a34a22; color: #15803d; } .badge-bad { background: #dc262622; color: #b91c1c; }
.badge-stopped { background: #f59e0b22; color: #b45309; }
.constraint-note { font-size: 13px; color: #b45309; margin-top: 4px; }
#stop-button:disabled, #sweep-stop:disabled, #compare-stop:disabled { opacity: 0.4; cursor: not-allowed; }
.field-error { color: #b91c1c; background: #dc262614; border-left: 3px solid #dc2626; padding: 4px 8px;
               border-radius: 4px; font-size: 14px; white-space: pre-wrap; }
.field-error a { color: inherit; text-decoration: underline; }  /* the pointer's link, as its message reads (the
   page's link blue stood 4.6:1 on its tint, under 4 in dark mode) */
.shown-note { font-size: 14px; color: #b45309; margin: 0; }
.progress-note { font-size: 14px; color: var(--body-text-color-subdued); }
/* an experiment waiting its turn: Gradio fades its note box to 0.2 while it is queued, and the note saying why was faint */
.html-container.pending:has(#experiment-waits) { opacity: 1; }
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
  #settings-column > :is(:has(#preset-box), #preset-note, :has(#preset-note), :has(#settings-jump)) { order: -1; }
  #settings-column > :has(#settings-jump) { display: block; }
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
.dark :is(.constraint-note, .badge-stopped, .shown-note), .dark .block:has(#run-pointer, #run-error, #prompt-error) ~ #stream:has(.tok)::before
  { color: #fbbf24; }
.dark .badge-ok { color: #4ade80; } .dark :is(.badge-bad, .field-error) { color: #f87171; }
.dark .js-plotly-plot { filter: invert(0.9) hue-rotate(180deg); }  /* the charts' white panels (plotly_white) glared on
   the dark page: drawn dark, each colour's hue kept (its lightness turned, as the page's own dark colours are) */
/* Text boxes show the focus as buttons do (a 1 px border turning light blue, 1.8:1, was all; an accessibility review),
   and a chart's toolbar is drawn whole while a button of it has the focus (it sat at 0.22 opacity) */
.gradio-container :is(textarea, input:not([type]), input[type=text], input[type=number]):focus-visible,
.gradio-container .cm-editor.cm-focused { outline: 2px solid var(--color-accent) !important; outline-offset: 1px; }
/* (!important and typeless inputs: Gradio's `outline: none !important` won on text boxes, and its dropdowns'
   inputs have no type; a box with the focus showed a 1.8:1 border, 1.4:1 in dark mode, an accessibility review) */
.js-plotly-plot .modebar:focus-within { opacity: 1 !important; }
#output-text textarea, #baseline-text textarea { font-family: ui-monospace, SFMono-Regular, Menlo, monospace;
                                                 font-size: 13px; }
"""


# What keeps its height from a Run to the run's end (RUN_CLICKED_JS sets it, PAGE_JS lets go): the stream's block and
# the metrics' (JavaScript: the elements found)
HELD_BLOCKS = "[document.getElementById('stream'), document.getElementById('metrics-box')].filter(Boolean)"


# A token's (a round mark's, a legend entry's) title, shown where it was tapped or clicked: a phone has no hover,
# and a token's probabilities (what each colour means) were out of its reach. Its text is set as text, never read as HTML.
# By keyboard: the stream is one Tab stop, its arrow keys (Home, End) go from token to token, each focused one's
# tip shown (the legend likewise, entry to entry), Escape hides it (a title's hover was the only way to a token's
# details). The run's badge (its verdict) is said by a screen reader as it changes (copied into a status line drawn
# for it alone). The Preset box's text on taking the focus is kept for PRESET_LEFT_JS.
PAGE_JS = """() => {
  if (window.pageJs) return;
  window.pageJs = true;
  const MESSAGE_INPUTS = {model: '#target-box input', tree: '#tree-box textarea', constraint: '#constraint-editor .cm-content'};
  const NAMED = {'#output-text': "Output: the speculative run's text", '#baseline-text': "The target alone's text",
                 '#share-link': 'Share link', '#experiment-share-link': 'Share link to the Experiments tab',
                 '#export-vllm': 'vLLM commands', '#export-sglang': 'SGLang commands', '#export-transformers': 'transformers code'};
  const STOPS = {'#stop-button': 'Stop the run', '#sweep-stop': 'Stop the sweep', '#compare-stop': 'Stop the draft comparison'};
  const EXPERIMENTS = {'sweep-run': {name: 'Sweep', status: 'sweep-status'},  // (by its start button: disabled as it
                       'compare-run': {name: 'Draft comparison', status: 'compare-status'}};  // starts, enabled once over)
  const tip = Object.assign(document.createElement('div'), {id: 'token-tip', hidden: true});
  tip.setAttribute('aria-hidden', 'true');  // drawn for the eye: a focused mark's title is its description already
  // (a status line said each token twice)
  document.body.appendChild(tip);
  const MARKS = '.tok[title], .round-sep[title], .legend .key[title]';
  const markOf = (node) => node && node.closest ? node.closest(MARKS) : null;
  document.addEventListener('click', (event) => {
    show(markOf(event.target));
    if (event.target.closest && event.target.closest('.settings-jump')) {  // (the link's own jump wrote #target-box
      event.preventDefault();  // into the page's address, which a copied address then carried; the box is not
      document.getElementById('target-box').scrollIntoView({block: 'start'});  // focused: a phone's keyboard would
    }  // cover what the reader came to see)
    if (event.target.closest && event.target.closest('.skip-link')) {  // (the link's own jump would not focus the box)
      event.preventDefault();
      const box = document.querySelector('#prompt-box textarea');
      if (box) box.focus();
    }
    const link = event.target.closest ? event.target.closest('.message-link') : null;  // under Run, to a refusal's
    if (link) {  // message: scrolled into sight, the focus on the input it is about (render.pointer)
      event.preventDefault();
      const message = document.querySelector(link.getAttribute('href'));
      const input = document.querySelector(MESSAGE_INPUTS[link.dataset.where]);
      if (message) message.scrollIntoView({block: 'center'});
      if (input) input.focus({preventScroll: true});
    }
  });
  // The stream follows its tokens: its box scrolls past 480 px, and a long run wrote out of sight, the page looking
  // stuck (a visual review); not while the reader has scrolled up in it. A new Run follows again (RUN_CLICKED_JS).
  window.streamFollows = true;
  document.addEventListener('scroll', (event) => {
    const box = event.target;
    if (box.classList && box.classList.contains('tokstream'))
      window.streamFollows = box.scrollHeight - box.scrollTop - box.clientHeight < 30;
  }, true);
  const streamBlock = document.getElementById('stream');
  if (streamBlock) new MutationObserver(() => {
    const box = streamBlock.querySelector('.tokstream');
    if (box && window.streamFollows && box.scrollHeight > box.clientHeight) box.scrollTop = box.scrollHeight;
  }).observe(streamBlock, {childList: true, subtree: true, characterData: true});
  // A metric's fold stays as the reader left it while the run draws its cards again (each update is new HTML). Read
  // from the click (a key's too), not from 'toggle', which comes a task later: by then a redraw had often replaced
  // the fold, its event lost with it
  window.openCards = new Set();
  document.addEventListener('click', (event) => {
    const summary = event.target.closest ? event.target.closest('.metric-more > summary') : null;
    if (!summary) return;
    const fold = summary.parentElement;  // (its state before this click: the click opens a shut one)
    if (fold.open) window.openCards.delete(fold.dataset.card); else window.openCards.add(fold.dataset.card);
  }, true);
  const metricsBlock = document.getElementById('metrics-box');
  if (metricsBlock) new MutationObserver(() => {
    for (const fold of metricsBlock.querySelectorAll('.metric-more:not([open])'))
      if (window.openCards.has(fold.dataset.card)) fold.open = true;
  }).observe(metricsBlock, {childList: true, subtree: true});
  document.addEventListener('focusin', (event) => {
    const mark = markOf(event.target);
    if (mark) show(mark);
    if (event.target.closest && event.target.closest('#preset-box')) window.presetOnFocus = event.target.value;  // (PRESET_LEFT_JS)
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') { tip.hidden = true; return; }
    const stream = event.target.closest ? event.target.closest('#token-stream, .legend') : null;  // (the legend: one
    const step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -Infinity, End: Infinity,
                  PageDown: 1, PageUp: -1}[event.key];  // (Page keys: round to round; a 700-token run was 700 presses)
    if (!stream || step === undefined) return;  // Tab stop, its entries by arrow keys as the stream's tokens)
    const marks = [...stream.querySelectorAll(MARKS)].filter((m) => m.getClientRects().length);
    if (!marks.length) return;  // (those drawn: a closed thinking fold's are not, and focus() does nothing there)
    const at = marks.indexOf(markOf(event.target));
    let next = Math.abs(step) === Infinity ? (step > 0 ? marks.length - 1 : 0)
      : at < 0 ? (step > 0 ? 0 : marks.length - 1) : Math.max(0, Math.min(marks.length - 1, at + step));
    if (event.key.startsWith('Page'))
      while (next > 0 && next < marks.length - 1 && !marks[next].classList.contains('round-sep')) next += step;
    marks[next].focus();
    event.preventDefault();
  });
  const said = Object.assign(document.createElement('div'), {id: 'run-said', className: 'sr-only'});
  said.setAttribute('role', 'status');  // always drawn: the badge's own box is hidden while empty, and a live
  document.body.appendChild(said);  // region shown as it fills is not reliably read
  const badge = document.getElementById('run-badge');
  const sayBadge = (text, tries) => {  // said unless "Run over" says it with the run's figures, as Stop is disabled
    if (said.textContent.includes(text)) return;  // (a Stop was said twice 120 ms apart, the second cutting the first
    const stop = document.getElementById('stop-button');  // off; a fixed 0.4 s wait for Stop's round trip shrank
    if (stop && !stop.disabled && tries) setTimeout(() => sayBadge(text, tries - 1), 400);  // to 0.2 s spare under load)
    else said.textContent = text; };
  if (badge) new MutationObserver(() => { const text = badge.textContent.trim(); if (text) setTimeout(() => sayBadge(text, 10), 400); })
    .observe(badge, {childList: true, subtree: true, characterData: true});
  let loading = '';  // a run's loading, said as each step begins (Gradio's bar is read only where the reader goes to
  if (streamBlock) new MutationObserver(() => {  // it: seconds of silence after Run; an accessibility review)
    const level = streamBlock.querySelector('.progress-level-inner');
    const step = level ? level.textContent.trim().replace(/ - [\d.]+%$/, '') : '';  // (its percent: not said)
    if (step && step !== loading) said.textContent = step;
    loading = step;
  }).observe(streamBlock, {childList: true, subtree: true, characterData: true});
  const stop = document.getElementById('stop-button');  // a run and its measuring over: what it came to, said once
  if (stop) new MutationObserver(() => {  // (only "common.complete", Gradio's own, was said at a run's end)
    if (stop.disabled) for (const held of HELD_BLOCKS) held.style.minHeight = '';  // (held from Run: RUN_CLICKED_JS)
    const metrics = document.getElementById('metrics');
    const refused = document.querySelector('#run-error, #run-pointer, #prompt-error, #run-stopped-early');  // (a
    if (stop.disabled && metrics && metrics.dataset.said && !refused)  // refused Run re-said the last run's figures)
      said.textContent = ['Run over: ' + metrics.dataset.said, badge && badge.textContent.trim()].filter(Boolean).join('. ');
  }).observe(stop, {attributes: true, attributeFilter: ['disabled']});
  let groups = 0;  // the radio and checkbox groups named so far (each label's id)
  const describe = () => {  // the constraint editor and the prompt point at what is said about them (Gradio names
    const editor = document.querySelector('#constraint-editor .cm-content');  // its editor "Code input container")
    const named = 'Constraint (in it, Tab indents; Escape then Tab leaves it)';  // (Gradio's own label was kept:
    if (editor && editor.getAttribute('aria-label') !== named) {  // it names the editor itself, so this never ran)
      editor.setAttribute('aria-label', named);
      editor.setAttribute('aria-describedby', 'constraint-check');
    }
    for (const [input, message] of [['#prompt-box textarea', 'prompt-error'], ['#constraint-editor .cm-content', 'constraint-error']]) {
      const box = document.querySelector(input);
      if (box) box.setAttribute('aria-invalid', document.getElementById(message) ? 'true' : 'false');
    }
    for (const chart of document.querySelectorAll('.js-plotly-plot')) {  // named by what it shows (plots.described):
      const summary = chart._fullLayout && chart._fullLayout.meta && chart._fullLayout.meta.summary;  // its drawing,
      const [drawn, ...layers] = chart.querySelectorAll('svg.main-svg');  // not the chart's box, whose toolbar's
      if (summary && drawn && drawn.getAttribute('aria-label') !== summary) {  // buttons an image's role hid while
        drawn.setAttribute('role', 'img');  // Tab still reached them (an accessibility review); its other layers'
        drawn.setAttribute('aria-label', summary);  // labels are the drawing's again
        for (const layer of layers) layer.setAttribute('aria-hidden', 'true');
      }
      for (const tool of chart.querySelectorAll('.modebar-btn[data-title]:not([aria-label])'))  // (an icon alone:
        tool.setAttribute('aria-label', tool.dataset.title);  // "button", of no name)
    }
    for (const group of document.querySelectorAll('fieldset:not([aria-labelledby])')) {  // a radio's or checkbox's
      const label = group.querySelector('[data-testid="block-info"]'), info = group.querySelector('.info-text');  // group
      if (!label) continue;  // was named by nothing ("fixed, radio button": of which setting? an accessibility review)
      groups += 1;
      label.id = label.id || `group-label-${groups}`;
      group.setAttribute('aria-labelledby', label.id);
      if (info) { info.id = info.id || `group-info-${groups}`; group.setAttribute('aria-describedby', info.id); }
    }
    const prompt = document.querySelector('#prompt-box textarea');
    if (prompt && document.getElementById('prompt-error')) prompt.setAttribute('aria-describedby', 'prompt-error');
    else if (prompt) prompt.removeAttribute('aria-describedby');
    for (const [box, name] of Object.entries(NAMED)) {  // Gradio's label names a box's copy button, not the box: seven
      const field = document.querySelector(`${box} textarea, ${box} .cm-content`);  // unnamed boxes, seven "Copy"s
      if (field && field.getAttribute('aria-label') !== name) field.setAttribute('aria-label', name);
      if (field && field.disabled) { field.disabled = false; field.readOnly = true; }  // (disabled, Tab passed it by)
      const copy = document.querySelector(`${box} button[aria-label="Copy"]`);
      if (copy) copy.setAttribute('aria-label', `Copy: ${name}`);
    }
    for (const [button, name] of Object.entries(STOPS)) {  // three buttons named "Stop"
      const stop = document.querySelector(button);
      if (stop && stop.getAttribute('aria-label') !== name) stop.setAttribute('aria-label', name);
    }
    for (const reset of document.querySelectorAll('button[aria-label="Reset to default value"]')) {  // six alike
      const label = reset.closest('.block') && reset.closest('.block').querySelector('[data-testid=block-info]');
      if (label) reset.setAttribute('aria-label', `Reset ${label.textContent.trim()} to its default`);
    }
    for (const list of document.querySelectorAll('ul[role=listbox]'))  // a dropdown's open list took a Tab stop of
      if (list.getAttribute('tabindex') !== '-1') list.setAttribute('tabindex', '-1');  // its own (a scroller with no
    // tabindex is one), then closed under it: the focus fell to the page's body (an accessibility review)
    for (const fold of document.querySelectorAll('button.label-wrap')) {  // an accordion said the same open or shut
      const open = fold.classList.contains('open') ? 'true' : 'false';
      if (fold.getAttribute('aria-expanded') !== open) fold.setAttribute('aria-expanded', open);
    }
    for (const live of document.querySelectorAll('.sr-only[aria-live]')) blankUntranslated(live);
  };
  const blankUntranslated = (live) => {  // Gradio's own, untranslated: read out as "common dot complete" after each event
    if (live && live.textContent.trim() === 'common.complete') live.textContent = '';
  };
  new MutationObserver(describe).observe(document.body, {childList: true, subtree: true});
  new MutationObserver((changes) => {  // a live region's text changed in place (only those looked at: every text
    for (const c of changes)  // change ran describe(), Gradio's timers ten times a second)
      blankUntranslated(c.target.parentElement && c.target.parentElement.closest('.sr-only[aria-live]'));
  }).observe(document.body, {characterData: true, subtree: true});
  new MutationObserver((changes) => {  // a fold opened or shut; a box disabled again; an experiment's button
    if (changes.some((c) => c.target.matches && c.target.matches('button.label-wrap, textarea, input'))) describe();
    for (const c of changes) {  // disabled (it started) or enabled again (it ended): said, with its last progress
      const what = EXPERIMENTS[c.attributeName === 'disabled' && c.target.id];  // line (nothing said it started or
      if (!what || c.target.disabled === Boolean(what.going)) continue;  // ended: an accessibility review)
      what.going = c.target.disabled;
      const status = document.getElementById(what.status);
      const line = status ? status.textContent.trim() : '';
      said.textContent = what.going ? `${what.name} started` : `${what.name} over${line ? ': ' + line : ''}`;
    }
  }).observe(document.body, {attributes: true, attributeFilter: ['class', 'disabled'], subtree: true});
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
}""".replace("HELD_BLOCKS", HELD_BLOCKS)


# The page's first Tab stop: to the prompt (Run two stops after it, past the structured output's section; it was
# the 22nd stop from the top).
# On a phone the settings sit under the output (Run on the first screen): a link under the preset's note goes to them
# (a newcomer's review: k and the temperature were 1,900 px down, after the output, with nothing to say so)
SETTINGS_JUMP = ('<a class="settings-jump" id="settings-jump" href="#target-box">Models, k and sampling: below the '
                 'output ↓</a>')
SKIP_LINK = '<a class="skip-link" href="#prompt-box">Skip to the prompt and Run</a>'


# A share link made: said by a screen reader (focus stays on its button, the link appears below it).
SAY_LINK_READY = """(...inputs) => { const said = document.getElementById('run-said');
  if (said) said.textContent = 'Share link ready, below the button, with a copy button'; return inputs; }"""


# The Preset box's .input, in the browser: the preset's name, or null where the box shows what it showed when it took
# the focus (only left: Tab, a click away); what it shows now is what the next one is judged against.
PRESET_LEFT_JS = """(name, ...typed) => {
  const box = document.querySelector('#preset-box input');
  const left = box !== null && box.value === window.presetOnFocus;
  if (box !== null) window.presetOnFocus = box.value;
  return [left ? null : name, ...typed];
}"""
