"""The page's layout and its wiring: which component feeds which callback (playground_tab,
experiments_tab, api). Each part of the layout is a function that adds its components to `ui` (a namespace
of every component by name); each kind of wiring is a function of `ui`, called in the order Gradio
registers the listeners (the order some share a trigger in). Building it starts nothing but Gradio's
patches (playground.ui.gradio_patches); app.py launches `demo`."""
import inspect
import json
import os
from types import SimpleNamespace

import gradio as gr

from playground.config import BACKENDS, POLICIES
from playground.limits import (CONCURRENCY, MAX_GRAMMAR_CHARS, MAX_PROMPT_CHARS, MAX_SCHEMA_TEXT_CHARS, MAX_SWEEP_PROMPTS,
                               MAX_SYSTEM_CHARS)
from playground.session.host import compile_refused, custom_models_allowed
from playground.presets import constraint_of
from playground.measure import sweeps
from playground.ui import gradio_patches, page_style, render, race
from playground.ui.addresses import DEVICE
from playground.ui.api import generate
from playground.ui.calls import VALUE_CHARS, bound
from playground.ui.experiment_link import CALCULATOR_RANGES, EXPERIMENT_NAMES, SWEEP_DEFAULTS, TAB, Experiment
from playground.ui.calculator import calculator, from_last_run
from playground.ui.experiments_tab import (column_headers, column_widths, empty_sweep_table, experiment_buttons,
                                           make_experiment_link, run_comparison, run_sweep, settings_line, sweep_columns, rows_shown,
                                           waits_for_run_js)
from playground.ui.export_tab import export_view
from playground.ui.files import DOWNLOAD_TTL_S, SWEEP_S
from playground.ui.inputs import (CONSTRAINT_KINDS, DEFAULT, EXAMPLE_CONSTRAINTS, DRAFTS, PRESETS, TARGETS, apply_preset, load_example,
                                  check_constraint, constraint_editor, draft_for, example_settings, inputs_from_settings, make_share_link, named_inputs, share_note, shown_note,
                                  k_with_tree, model_choices, preset_choices, preset_note, think_budget_shown, restore_from_url,
                                  apply_preset_chosen)
from playground.ui.playground_tab import (DOWNLOAD_LATER, IDLE, REDUCED_MOTION_JS, RUN_CLICKED_JS, WAITS_FOR_EXPERIMENT_JS, after_run, click_when_settled, focus_moved_to,
                                          RACE_WAITS, RUN_CHECK_JS, RUN_WAITS_JS, message_cleared, pointer_cleared, remember_run, replay_race, run,
                                          run_outputs_in_order, runnable_while_measuring, start_run, stop_run,
                                          waits_for_device)
from playground.ui.share import EXACT_IN_A_PAGE, MAX_LINK_CHARS, RANGES
from playground.ui.tree_view import CSS as TREE_CSS, tree_view

TABLE_HEIGHT = 1000  # px: a sweep's rows with their notes wrapped (at Gradio's 500, a 3-value sweep showed 2 rows)
ABOUT = """
**How to read the stream.** A *draft* model guesses `k` tokens; the *target* checks all of them in one
forward pass. Green tokens (underlined) are guesses the target kept, red struck-through ones (no underline) it refused and
those after a refusal, never judged (none of them part of the text), orange (double underline) is the target's own token where it refused, blue (dotted)
the target's own token after every guess was kept (or in a round with no guess, such as prompt lookup finding
no match), grey (dashed) a token the constraint forces. Hover a token with a mouse, tap it, or Tab to the stream
and move with the arrow keys, for its probabilities; the Text tab below shows the output alone, without the
refused guesses.

**Why the output does not change.** Under greedy decoding a guess is kept only if it is the target's own
choice, so the text is exactly the target's. When sampling, a guess `x` is kept with probability
`min(1, p_target(x) / p_draft(x))` and a refusal draws from `max(0, p_target - p_draft)` renormalised;
when every guess is kept, the bonus token is drawn from `p_target` at the next position: the output has exactly
the target's distribution. Both `p`s are taken after temperature, top-k, top-p and the constraint's mask, the same
way for both models; under a constraint the text is the target's own constrained decoding (where the grammar
allows one token only, it is forced, as the target alone's run forces it).

**Expected tokens per round** (one verify pass of the target) when each guess is kept with probability `α` and
the draft makes `k` guesses: `(1 - α^(k+1)) / (1 - α)` (the theory card; the tokens-per-target-pass card also
counts the prompt's pass and the tokens a constraint forces). `α` is per token; the *acceptance rate* shown (kept / proposed) is lower,
because guesses after a refusal are proposed but never judged. The speedup also pays for the draft: divide by
`k * c + 1`, where `c` is a draft pass's cost in target passes.
"""

gradio_patches.install()


def compile_info() -> str:
    """The Compiled passes box's words: what it does, or that this host turned it off."""
    if compile_refused():
        return "Off on this host (PLAYGROUND_COMPILED_PASSES=0): every run's passes are eager."
    return ("The target's and the draft's passes run compiled (on a GPU whole rounds replay as graphs); on by default "
            "with a GPU (not on ZeroGPU). The first run with a model, k and context size compiles first: about "
            "1.5 minutes for the 7B preset on an H200 (a GPU host compiles its default preset's before serving the "
            "page), about 20 s a pass on a 2-core CPU.")


ui = SimpleNamespace()  # every component of the page by name: what the wiring below and the tests read


def add_head():
    """The style, the title and its line, and the notices a link leaves (what of it was changed)."""
    gr.HTML(f"<style>{page_style.CSS}{race.CSS}{TREE_CSS}</style>{page_style.SKIP_LINK}", elem_id="page-head")
    gr.Markdown("# Speculative decoding & structured output playground\n"
                "A small draft model guesses, the large target verifies several tokens in one pass, the output "
                "stays exactly the target's. Paste a JSON Schema, a regex or a grammar and every token stays valid.",
                elem_id="intro")
    with gr.Row(elem_id="link-notices"):
        ui.link_notice = gr.Markdown(latex_delimiters=[])  # a link's text shown as typed, never as LaTeX
        ui.dismiss_notice = gr.Button("Dismiss", size="sm", scale=0, min_width=90, visible=False, elem_id="dismiss-notices")


def reader_heading(text: str) -> None:
    """A heading for a screen reader's jumps, not drawn (the Playground tab had its title alone: an accessibility review)."""
    gr.HTML(f"<h2>{text}</h2>", elem_classes=["reader-heading"], padding=False)


def add_settings_column():
    """The left column: preset, models, draft length and sampling, then Advanced."""
    with gr.Column(scale=1, min_width=300, elem_id="settings-column"):
        reader_heading("Settings")
        ui.preset = gr.Dropdown(preset_choices(), value=DEFAULT.preset, label="Preset", elem_id="preset-box")
        ui.note = gr.Markdown(preset_note(DEFAULT.preset), elem_id="preset-note")
        gr.HTML(page_style.SETTINGS_JUMP)  # a phone's way to the settings it shows under the output
        ui.model_msg = gr.HTML()  # above the model boxes: below them it would split their panel
        ui.target = gr.Dropdown(model_choices(TARGETS), value=DEFAULT.target, label="Target model", elem_id="target-box",
                                allow_custom_value=custom_models_allowed())
        ui.draft = gr.Dropdown(model_choices(DRAFTS), value=DEFAULT.draft, label="Draft ('ngram' = prompt lookup, 'ngram+model' = cascade)",
                               elem_id="draft-box", allow_custom_value=custom_models_allowed())
        ui.k = gr.Slider(*RANGES["k"], value=DEFAULT.k, step=1, label="Draft length k", elem_id="k-slider")
        ui.policy = gr.Radio(list(POLICIES), value=DEFAULT.policy, label="Draft length policy",
                             info="fixed: k guesses every round. schedule: k grows by 2 after a round kept whole, "
                                  "shrinks by 1 after a rejection, and a draft model's drafting pauses while guesses do not pay "
                                  "(judged by measured times: a seeded sampled run may then differ from one run to the next). "
                                  "confidence: the draft model stops guessing when unsure, each round still paying its first "
                                  "draft pass (where the draft is mostly unsure, as when sampling hot, no faster than the target "
                                  "alone; prompt lookup's guesses have no probabilities: fixed). With both, k is the ceiling.")
        ui.confidence = gr.Slider(*RANGES["confidence"], value=0.5, step=0.01, label="Confidence threshold",
                                  visible=False)  # shown with the confidence policy only
        ui.temperature = gr.Slider(*RANGES["temperature"], value=DEFAULT.temperature, step=0.01, label="Temperature (0 = greedy)")
        ui.max_new_tokens = gr.Slider(*RANGES["max_new_tokens"], value=DEFAULT.max_new_tokens, step=1, label="Max new tokens",
                                      elem_id="max-tokens")  # steps fine enough for a value typed or linked (13
        # new tokens drew the handle at 16 on a step of 8, as temperature 0.73 at 0.75)
        ui.compare = gr.Checkbox(value=True, label="Compare with the target alone")
        with gr.Accordion("Advanced", open=False) as ui.advanced:
            ui.top_p = gr.Slider(*RANGES["top_p"], value=DEFAULT.top_p, step=0.01, label="Top-p")
            ui.top_k = gr.Slider(*RANGES["top_k"], value=DEFAULT.top_k, step=1, label="Top-k (0 = off)")
            ui.seed = gr.Number(value=0, precision=0, minimum=0, maximum=EXACT_IN_A_PAGE, label="Seed")  # (a
            # browser's number rounds a larger one: 12345678901234567 typed ran as ...568, unsaid)
            ui.chat = gr.Checkbox(value=DEFAULT.chat, label="Apply the chat template (instruct models)")
            ui.system = gr.Textbox(value=DEFAULT.system, label="System prompt", lines=2)
            ui.backend = gr.Radio(list(BACKENDS), value=DEFAULT.backend, label="Constraint backend")
            ui.compile_passes = gr.Checkbox(
                value=DEFAULT.compile, label="Compiled passes (static KV cache, torch.compile)",
                interactive=not compile_refused(), info=compile_info())
            ui.tree = gr.Textbox(value=DEFAULT.tree, label="Token tree (children per depth, e.g. 1,2,1,1; dynamic: 4,4,4,4/16; +3: a prompt-lookup branch)",
                                 elem_id="tree-box", placeholder="empty: a chain of k drafts",
                                 info="The draft proposes a tree and the target verifies every branch in one pass "
                                      "(draft models only, eager passes; with a constraint each node is masked by its own path; k is then unused). "
                                      "'+N' grafts up to N tokens found by prompt lookup on each tree (greedy).")
            ui.tree_msg = gr.HTML()


def add_prompt_and_constraint():
    """The prompt and the structured output section (its kind, editor, check and examples)."""
    ui.prompt = gr.Textbox(value=DEFAULT.prompt, lines=4, label="Prompt", elem_id="prompt-box")
    ui.prompt_msg = gr.HTML()
    with gr.Accordion("Structured output (JSON Schema, regex or grammar)",
                      open=constraint_of(DEFAULT) is not None) as ui.constraint_acc:
        ui.kind = gr.Radio(CONSTRAINT_KINDS, value="none", label="Constraint")
        ui.constraint = gr.Code(value="", language="json", lines=6,
                                label="Schema, pattern or grammar (Tab writes spaces here; Esc, then Tab, leaves it)",
                                interactive=True, elem_id="constraint-editor", wrap_lines=True,  # a pasted
                             # one-line schema showed its end alone
                                visible=constraint_of(DEFAULT) is not None)
        ui.grammar_help = gr.Markdown(
            "A grammar is [Lark](https://github.com/guidance-ai/llguidance/blob/main/docs/syntax.md) "
            "or GBNF (`root ::= ...`: every rule with `::=`); both backends read both, as vLLM's do "
            "(xgrammar lacks some of llguidance's Lark extensions).", elem_id="grammar-help",
            visible=bool(DEFAULT.grammar))  # with a grammar only (its check sits below)
        ui.constraint_check = gr.HTML(elem_id="constraint-check")
        ui.schema_in_prompt = gr.Checkbox(value=DEFAULT.schema_in_prompt, label="Also show the schema to the model in the prompt",
                                          visible=bool(DEFAULT.schema), elem_id="schema-in-prompt")
        ui.think_budget = gr.Slider(*RANGES["think_budget"], value=DEFAULT.think_budget, step=1,
                                    visible=think_budget_shown(DEFAULT.target, DEFAULT.think_budget)["visible"],
                                    label="Think first: thinking budget in tokens (0 = constrain from the first token)",
                                    elem_id="think-budget",
                                    info="Reasoning models (Qwen3, DeepSeek-R1) write freely until </think>, then "
                                         "the constraint applies to the answer alone; at the budget, </think> is forced.")
        ui.example_constraint = gr.Dropdown(list(EXAMPLE_CONSTRAINTS), label="Examples", value=None,
                                            elem_id="example-constraint")


def add_run_controls_and_stream():
    """Run, Stop and Share with their messages, the legend, the stream, its metrics and badge."""
    with gr.Row():
        ui.run_btn = gr.Button("Run", variant="primary", elem_id="run-button", interactive=False)  # until
        # the link's settings are shown (a click before ran the preset's: k=4 for a link's k=3)
        ui.stop_btn = gr.Button("Stop", variant="stop", elem_id="stop-button", interactive=False)
        ui.share_btn = gr.Button("Share link", elem_id="share-button")
    ui.run_msg = gr.HTML()
    ui.refresh_views = gr.Button(visible="hidden", elem_id="refresh-views")  # clicked by a change of setting
    ui.share_box = gr.Textbox(label="Share link", buttons=["copy"], elem_id="share-link", visible=False,
                              placeholder=" ")  # emptied by a change of setting: hidden (page_style.CSS)
    ui.share_note_box = gr.HTML(elem_id="share-note")  # what the link holds unlike the output shown
    gr.HTML(render.legend())
    with gr.Accordion("How to read this", open=False):  # beside the colours, where a newcomer looks
        gr.Markdown(ABOUT)
    ui.shown_note_box = gr.HTML(elem_id="shown-note")  # the output below is of other settings: which
    ui.stream = gr.HTML(render.token_stream([]), elem_id="stream", html_template="", js_on_load=render.STREAM_JS)
    ui.metrics_html = gr.HTML(render.metrics(None, DEFAULT.k), elem_id="metrics-box")
    ui.badge = gr.HTML(elem_id="run-badge")


def add_output_tabs():
    """Below the stream: texts, race, tree, JSON, export and charts; then the run's download."""
    with gr.Tabs():
        with gr.Tab("Text"):
            with gr.Row():  # (min_width: one above the other on a phone, where side by side each
                # was 130 px wide and broke words; its 6-line label moved the other's box down)
                ui.text = gr.Textbox(label="Output", info="the speculative run's text", lines=8,
                                     buttons=["copy"], elem_id="output-text", min_width=320)
                ui.baseline_text = gr.Textbox(label="Target alone", info="greedy: the same text; sampling: "
                                              "another draw from the same distribution", lines=8, min_width=320,
                                              buttons=["copy"], elem_id="baseline-text", visible=DEFAULT.compare)
        with gr.Tab("Charts"):  # second: on a phone the tabs past the third hide behind an unlabelled "⋯" (a visual
            # review). No labels: each figure has its title, and on a phone the label covered its toolbar
            with gr.Row():
                ui.hist_plot = gr.Plot(label="Accepted per round", elem_id="hist-plot", show_label=False)
                ui.pos_plot = gr.Plot(label="By draft position", show_label=False)
            with gr.Row():
                ui.cum_plot = gr.Plot(label="Tokens vs passes", show_label=False)
                ui.time_plot = gr.Plot(label="Time split", show_label=False)
        with gr.Tab("Race", elem_id="race-tab") as ui.race_tab:
            ui.race_btn = gr.Button("Replay the race", elem_id="race-button", size="sm")
            ui.race_html = gr.HTML(race.note_html(RACE_WAITS))
        with gr.Tab("Tree", elem_id="tree-tab"):
            ui.tree_html = gr.HTML(tree_view([]))
        with gr.Tab("JSON"):
            ui.pretty = gr.Code(language="json", label="A JSON Schema run's answer, indented, each number as "
                                "written (empty when its text is not whole JSON)", interactive=False,
                                buttons=["copy"], wrap_lines=True, show_line_numbers=False,
                                elem_id="json-view")  # (gr.JSON's tree read numbers as the browser does)
        with gr.Tab("Export", elem_id="export-tab") as ui.export_tab:
            gr.Markdown("The settings as they stand now (kept current as you change them, so not "
                        "necessarily the run shown in the other tabs), ready to serve at scale: launch "
                        "commands and one request for vLLM and SGLang, and the same run as a transformers "
                        "`generate` call.")
            ui.export_notes = gr.HTML()
            ui.export_vllm = gr.Code(language="shell", label="vLLM: serve, then send the request",
                                     buttons=["copy"], wrap_lines=True, show_line_numbers=False,
                                     elem_id="export-vllm")  # (numbers: wrong beside wrapped lines)
            ui.export_sglang = gr.Code(language="shell", label="SGLang: launch, then send the request",
                                       buttons=["copy"], wrap_lines=True, show_line_numbers=False,
                                       elem_id="export-sglang")
            ui.export_hf = gr.Code(language="python", label="transformers", buttons=["copy"], wrap_lines=True,
                                   show_line_numbers=False,  # (wrapped as the others: on a phone it was cut)
                                   elem_id="export-transformers")
    ui.download = gr.DownloadButton(DOWNLOAD_LATER, value=None, interactive=False, elem_id="download-run")


def add_playground_tab():
    """Settings on the left; prompt, constraint and the run's views on the right; offline examples below."""
    with gr.Row():
        add_settings_column()
        with gr.Column(scale=2):
            reader_heading("Prompt and run")
            add_prompt_and_constraint()
            add_run_controls_and_stream()
            reader_heading("Output")
            add_output_tabs()
    ui.settings = [ui.preset, ui.target, ui.draft, ui.k, ui.temperature, ui.top_p, ui.top_k, ui.seed, ui.max_new_tokens, ui.prompt, ui.system, ui.chat,
                   ui.kind, ui.constraint, ui.backend, ui.compare, ui.schema_in_prompt, ui.policy, ui.confidence, ui.compile_passes,
                   ui.tree, ui.think_budget]
    offline = [[p.name, p.prompt] for p in PRESETS.values() if p.offline]
    examples = gr.Examples(offline, inputs=[ui.preset, ui.prompt], label="Offline examples (click to load)",
                           api_visibility="private")  # (then the preset, keeping what the user typed, as the Preset box)
    examples.load_input_event.then(example_settings, [ui.preset, ui.system, ui.kind, ui.constraint],
                                   ui.settings + [ui.note, ui.constraint_acc], api_visibility="private")


def add_sweep_section(first: Experiment):
    """The tab's share link, the settings it runs with, one setting swept over prompts."""
    gr.Markdown("The sweep and the draft comparison run with the Playground tab's settings (below) on a set of "
                "prompts, the speculative runs and the target alone measured side by side in this process.")
    with gr.Row():
        ui.experiment_share_btn = gr.Button("Share link (this tab's inputs and the Playground's settings)", size="sm",
                                            scale=0, min_width=360, elem_id="experiment-share-button")
    ui.experiment_share_box = gr.Textbox(label="Share link: opens on Experiments", buttons=["copy"], visible=False,
                                         elem_id="experiment-share-link", placeholder=" ")  # as share_box
    ui.experiment_settings = gr.HTML(settings_line(*inputs_from_settings(DEFAULT)), elem_id="experiment-settings")
    gr.Markdown("## Sweep\nOne setting over the prompts (one per line, `\\n` for a newline).")  # (the tab's first
    # tool had no heading where the two below had theirs: a visual review)
    with gr.Row():
        ui.axis = gr.Radio(list(SWEEP_DEFAULTS), value=first.sweep_axis, label="Sweep")
        ui.sweep_values = gr.Textbox(value=first.sweep_values, label="Values")
    ui.sweep_prompts = gr.Textbox(value=first.sweep_prompts, lines=4, label="Prompts (empty: the prompt of the Playground tab)")
    with gr.Row():
        ui.sweep_btn = gr.Button("Run sweep", variant="primary", scale=3, elem_id="sweep-run")
        ui.sweep_stop = gr.Button("Stop", variant="stop", interactive=False, scale=1, elem_id="sweep-stop")
    ui.sweep_status = gr.HTML(elem_id="sweep-status")
    ui.sweep_table = gr.Dataframe(headers=column_headers(sweep_columns(first.sweep_axis)), interactive=False,
                                  label=f"Results ({len(sweep_columns(first.sweep_axis))} columns: scroll sideways; the CSV has them all)",
                                  wrap=True, column_widths=column_widths(sweep_columns(first.sweep_axis)), elem_id="sweep-table",
                                  max_height=TABLE_HEIGHT)
    ui.sweep_plot = gr.Plot(show_label=False)  # (its title says what it is; Gradio's "Plot" tag sat over it)
    ui.sweep_csv = gr.DownloadButton("Download CSV", value=None, visible="hidden", elem_id="sweep-csv")  # once it has one


def add_comparison_section(first: Experiment):
    """Ways of drafting compared on the same prompts."""
    gr.Markdown("## Draft comparison\nDifferent ways of drafting for the target of the Playground tab "
                "(its draft model, prompt lookup, a cascade, adaptive draft lengths), on the prompts above.")
    ui.variants = gr.CheckboxGroup(list(sweeps.VARIANTS), value=list(first.compare_drafts), label="Drafts")
    with gr.Row():
        ui.compare_btn = gr.Button("Compare drafts", variant="primary", scale=3, elem_id="compare-run")
        ui.compare_stop = gr.Button("Stop", variant="stop", interactive=False, scale=1, elem_id="compare-stop")
    ui.compare_status = gr.HTML(elem_id="compare-status")
    ui.compare_table = gr.Dataframe(headers=column_headers(sweeps.COMPARE_COLUMNS), interactive=False, wrap=True,
                                    label=f"Results ({len(sweeps.COMPARE_COLUMNS)} columns: scroll sideways; the CSV has them all)",
                                    column_widths=column_widths(sweeps.COMPARE_COLUMNS), elem_id="compare-table",
                                    max_height=TABLE_HEIGHT)
    ui.compare_plot = gr.Plot(show_label=False)
    ui.compare_csv = gr.DownloadButton("Download CSV", value=None, visible="hidden", elem_id="compare-csv")  # once it has one


def add_calculator_section(first: Experiment):
    """The speedup formula's curve, the user's measured runs and last K sweep on it."""
    gr.Markdown("## Speedup calculator\nExpected tokens per round (one verify pass of the target) and speedup for a per-token acceptance "
                "probability `α`, draft length `k` and draft/target cost ratio `c`: `(1 - α^(k+1)) / (1 - α) / "
                "(k c + 1)`, taking a verify pass of k + 1 tokens to cost what one target pass does (near true "
                "where a pass waits on memory, as a big model's on a GPU; the demo pair's on a CPU grows by a "
                "third from 1 to 5 tokens) and leaving out each round's overhead. Your Playground runs of a "
                "draft model with a fixed k, compared with the target alone "
                "(their estimated α), appear as red crosses; too noisy for one number, as circles at their estimate "
                "with their 95% interval, each measurement's own ratio inside it (red where it is clear of 1x, grey where it holds 1x); your "
                "last K sweep, as a red dashed line of its measured points (open where too noisy for one number). The "
                "button below sets the sliders to your last run's α, k and c (its drafting time per guess over its "
                "verify pass's time), so the curve is that run's.")
    with gr.Row():
        ui.calc_a = gr.Slider(*CALCULATOR_RANGES["acceptance"], value=first.calc_alpha, step=0.01, label="per-token acceptance α",
                              info="a run's theory card shows its α (not its acceptance rate, which counts the "
                                   "drafts after a rejection too)", min_width=240)
        ui.calc_k = gr.Slider(*CALCULATOR_RANGES["k"], value=first.calc_k, step=1, label="k", min_width=240)
        ui.calc_c = gr.Slider(*CALCULATOR_RANGES["cost ratio"], value=first.calc_c, step=0.001, label="cost ratio c",
                              info="a draft pass's time over a target pass's (a draft 20x faster: 0.05)",
                              elem_id="calc-c", min_width=240)  # (each a line of its own on a phone: k sat beside
        # α's help text there, α's number box pushed under it)
    with gr.Row():
        ui.calc_from_run = gr.Button("Set α, k and c from my last run", size="sm", scale=0, min_width=260,
                                     elem_id="calc-from-run")
    ui.calc_text = gr.Markdown(elem_id="calc-text")
    ui.calc_plot = gr.Plot(elem_id="calc-plot", show_label=False)


def add_experiments_tab():
    """Sweeps, the draft comparison and the speedup calculator."""
    first = Experiment()  # the tab's first values
    add_sweep_section(first)
    add_comparison_section(first)
    add_calculator_section(first)
    ui.experiment = [ui.axis, ui.sweep_values, ui.sweep_prompts, ui.variants, ui.calc_a, ui.calc_k, ui.calc_c]  # EXPERIMENT_NAMES' order


def add_states():
    """What a session keeps between events, and the run's check of its constraint (hidden)."""
    ui.history = gr.State([])
    ui.k_sweep = gr.State(None)  # the last K sweep's points, for the calculator's chart
    ui.measured = gr.State(None)
    ui.shown_settings = gr.State(None)  # the settings of the run whose output is shown (for share_note)
    ui.race_lanes = gr.State(None)  # the last comparison's two runs, for the race view
    ui.still = gr.Checkbox(False, visible="hidden", elem_id="reduced-motion")  # the reader asks for less motion
    # (set in the browser as a replay starts: the race then shows its end at once; an accessibility review)
    ui.run_status = gr.State(None)  # the last run's Run click (its ticket) and phase
    ui.run_check = gr.HTML(visible="hidden", elem_id="run-check")  # a run's check of its constraint, or its refusal, for
    # constraint_check (RUN_CHECK_JS): HTML, not State, so that the web API's /run still returns it


def bound_long_texts():
    """The long texts' bounds (any other value is at most calls.VALUE_CHARS): past the page's own limit, so that
    its message says what is too long (a pasted document: 4x), and at most what a session may keep (1.25x)."""
    for box, limit, room in ((ui.prompt, MAX_PROMPT_CHARS, 4), (ui.system, MAX_SYSTEM_CHARS, 4), (ui.constraint, MAX_SCHEMA_TEXT_CHARS, 1.25),
                             (ui.sweep_prompts, MAX_SWEEP_PROMPTS * MAX_PROMPT_CHARS, 1.25)):
        bound(box, limit, room)
        if isinstance(box, gr.Textbox):  # the browser takes no more than the guard lets through: a longer paste
            box.max_length = int(limit * room)  # was refused by it (a corner toast, a red Error on the last output)


def wire_presets():
    """A preset chosen applies its settings (keeping what the user typed)."""
    # Gradio 6 sends a dropdown's .input when it is only left (Tab, a click away), its value unchanged: that re-applied
    # the preset over the settings changed since, without a word. Its .select comes only from a mouse's click (a
    # preset picked again gives the preset's own); a choice by keyboard is an .input, applied where the box's text
    # differs from what it showed when it took the focus (PRESET_LEFT_JS)
    typed = [ui.preset, ui.prompt, ui.system, ui.kind, ui.constraint]
    for chosen, fn, js in ((ui.preset.select, apply_preset, None), (ui.preset.input, apply_preset_chosen, page_style.PRESET_LEFT_JS)):
        chosen(fn, typed, ui.settings + [ui.note, ui.constraint_acc], js=js, api_visibility="private").then(
            think_budget_shown, [ui.target, ui.think_budget], ui.think_budget, queue=False,  # a budget set: shown (quick: out
            api_visibility="private")  # of the queue, as the link's, where two of these held its lane past its share)


def wire_link_restore(page: gr.Blocks):
    """A link's settings restored as the page loads; Run enabled once they are shown."""
    # Run is enabled once a link's settings are shown, whatever happens to them (Gradio runs .then only
    # after a success: .failure too); cheap steps, kept out of the queue (a full queue refused them)
    page.load(None, None, None, js=page_style.PAGE_JS, queue=False, api_visibility="private")  # a token's
    # probabilities on a tap (no hover on a phone) or by keyboard, the verdict said, the Preset's focus followed
    restored = page.load(restore_from_url, None, ui.settings + [ui.note, ui.constraint_acc, ui.advanced, *ui.experiment, ui.tabs, ui.link_notice],
                         queue=False, api_visibility="private")
    budget = restored.then(think_budget_shown, [ui.target, ui.think_budget], ui.think_budget, queue=False, api_visibility="private")
    for step in (restored.failure, budget.then, budget.failure):
        step(lambda: gr.update(interactive=True), None, ui.run_btn, queue=False, api_visibility="private")


def wire_messages_cleared():
    """A message next to an input goes once that input changes."""
    for box in (ui.preset, ui.target, ui.draft):  # a model's error was about the models chosen then (as below)
        box.input(None, None, ui.model_msg, js="() => ''", queue=False, api_visibility="private")
        box.input(None, ui.run_msg, ui.run_msg, js=pointer_cleared("model"), queue=False, api_visibility="private")
    # So was the prompt's, the tree's, and the pointer to it under Run (a constraint's own message is its
    # check as typed): each goes once its input changes, in the browser, before a Run.
    for box, message, where in ((ui.prompt, ui.prompt_msg, "prompt"), (ui.tree, ui.tree_msg, "tree")):
        box.change(None, [message, box], message, js=message_cleared(where), queue=False, api_visibility="private")
    for boxes, where in (((ui.kind, ui.constraint, ui.backend), "constraint"), ((ui.tree,), "tree")):
        for box in boxes:
            box.change(None, [ui.run_msg, *boxes], ui.run_msg, js=pointer_cleared(where), queue=False, api_visibility="private")


def wire_shown_inputs():
    """Inputs shown, hidden or set by others (confidence, tree and k, thinking budget, constraint kind)."""
    ui.target.input(draft_for, [ui.target, ui.draft], ui.draft, api_visibility="private")  # a draft of its tokenizer
    ui.policy.change(lambda p: gr.update(visible=p == "confidence"), ui.policy, ui.confidence, api_visibility="private")
    ui.tree.change(k_with_tree, ui.tree, ui.k, queue=False, api_visibility="private")  # k looked live and did nothing
    ui.target.change(think_budget_shown, [ui.target, ui.think_budget], ui.think_budget, api_visibility="private")
    ui.kind.change(constraint_editor, ui.kind, ui.constraint, api_visibility="private")
    ui.kind.change(lambda k: gr.update(visible=k == "JSON schema"), ui.kind, ui.schema_in_prompt, api_visibility="private")
    ui.kind.change(lambda k: gr.update(visible=k == "grammar"), ui.kind, ui.grammar_help, api_visibility="private")
    ui.compare.change(lambda on: gr.update(visible=on), ui.compare, ui.baseline_text, api_visibility="private")


def wire_run():
    """Run, Stop and what follows a run (buttons, focus, the calculator's history, the race's replays)."""
    run_outputs = run_outputs_in_order(dict(
        stream=ui.stream, metrics=ui.metrics_html, text=ui.text, baseline_text=ui.baseline_text, badge=ui.badge, json=ui.pretty,
        accepted_chart=ui.hist_plot, position_chart=ui.pos_plot, cumulative_chart=ui.cum_plot, time_chart=ui.time_plot,
        download=ui.download, measured=ui.measured, model_msg=ui.model_msg, prompt_msg=ui.prompt_msg, run_msg=ui.run_msg,
        run_check=ui.run_check, constraint_section=ui.constraint_acc, tree_msg=ui.tree_msg, advanced=ui.advanced,
        race_lanes=ui.race_lanes, race=ui.race_html, tree=ui.tree_html, status=ui.run_status, shown_settings=ui.shown_settings))
    # Each button is enabled only when it can act (a full queue: Run again), with one progress indicator, on
    # the stream. Run is enabled again while a run only measures its speedup again: a click ends that
    # measuring (start_run) and the new run starts once it has (always_last: Gradio defers it till then).
    ui.run_btn.click(None, None, None, js=RUN_CLICKED_JS, queue=False, api_visibility="private")
    ui.run_btn.click(None, ui.run_msg, ui.run_msg, js=WAITS_FOR_EXPERIMENT_JS, queue=False, api_visibility="private")  # (the
    # run's first update clears it)
    ui.run_btn.click(waits_for_device, ui.run_msg, ui.run_msg, js=RUN_WAITS_JS, queue=False, api_visibility="private",
                     show_progress="hidden")  # (another's run holding the model: so said)
    ui.run_check.change(None, [ui.run_check, ui.kind, ui.constraint, ui.backend, ui.constraint_check], ui.constraint_check, js=RUN_CHECK_JS,
                        queue=False, api_visibility="private")  # the run's check, drawn if the editor still holds its constraint
    started = ui.run_btn.click(start_run, None, [ui.run_btn, ui.stop_btn], queue=False, api_visibility="private")
    started.then(None, None, None, js=focus_moved_to("#stop-button"), queue=False, api_visibility="private")
    running = (started
               .then(named_inputs(run), ui.settings, run_outputs,
                     api_name="run", concurrency_limit=CONCURRENCY, concurrency_id=DEVICE,
                     show_progress_on=[ui.stream], trigger_mode="always_last"))
    ui.run_status.change(runnable_while_measuring, ui.run_status, ui.run_btn, queue=False, api_visibility="private")
    running.failure(lambda: IDLE, None, [ui.run_btn, ui.stop_btn], queue=False, api_visibility="private")
    ended = running.then(after_run, ui.run_status, [ui.run_btn, ui.stop_btn], queue=False, api_visibility="private")
    ended.then(None, None, None, js=focus_moved_to("#run-button"), queue=False, api_visibility="private")
    ended.then(remember_run, [ui.measured, ui.history], ui.history, api_visibility="private")
    ui.stop_btn.click(stop_run, None, None, queue=False, api_visibility="private")
    replays = [trigger(replay_race, [ui.race_lanes, ui.still], ui.race_html, api_visibility="private", concurrency_limit=8,
                       concurrency_id="race", show_progress="hidden", js=REDUCED_MOTION_JS)
               for trigger in (ui.race_tab.select, ui.race_btn.click)]
    ui.run_btn.click(None, None, None, queue=False, api_visibility="private", cancels=replays)  # (a replay going on
    # drew the last run's frames over this run's race)


def wire_views():
    """The Export and Experiments tabs and the note on the output, kept current with the settings."""
    exports = [ui.export_notes, ui.export_vllm, ui.export_sglang, ui.export_hf]
    ui.export_tab.select(named_inputs(export_view), ui.settings, exports, api_name="export",
                         show_progress="hidden")  # loads nothing: the text of the setting
    changed = [box.change for box in ui.settings]  # any setting, by hand, a preset or an example
    gr.on(changed, None, None, None, js=click_when_settled("#refresh-views"), queue=False,
          api_visibility="private")  # a burst of changes (a link's or a preset's 22 settings, typing): one call
    ui.refresh_views.click(lambda shown, *values: [*export_view(*values), settings_line(*values), shown_note(shown, *values)],
                           [ui.shown_settings] + ui.settings, exports + [ui.experiment_settings, ui.shown_note_box],
                           trigger_mode="always_last", api_visibility="private", show_progress="hidden")  # the Export
    # and Experiments tabs and the note on the output kept current, in one call a burst
    ui.shown_settings.change(shown_note, [ui.shown_settings] + ui.settings, ui.shown_note_box, trigger_mode="always_last",
                             queue=False, api_visibility="private", show_progress="hidden")  # a run started or
    # ended: the note said at once, not after a burst's settling


def wire_share_links():
    """Share links made on demand, emptied once a setting changes."""
    changed = [box.change for box in ui.settings]
    ui.share_btn.click(named_inputs(make_share_link), ui.settings, ui.share_box, api_name="share_link").success(
        lambda shown, *values: (gr.update(visible=True), share_note(shown, *values)), [ui.shown_settings] + ui.settings,
        [ui.share_box, ui.share_note_box], queue=False, api_visibility="private",  # shown once it has a link, with what it
        js=page_style.SAY_LINK_READY)  # holds unlike the output shown, and said (a screen reader heard nothing: focus
    # stays on the button)
    gr.on(changed, None, None, [ui.share_box, ui.share_note_box], js="() => ['', '']", queue=False,
          api_visibility="private")  # a setting changed: the link no longer says it
    ui.experiment_share_btn.click(named_inputs(make_experiment_link, EXPERIMENT_NAMES), ui.experiment + ui.settings,
                                  ui.experiment_share_box, api_name="share_experiment").success(
        lambda: gr.update(visible=True), None, ui.experiment_share_box, queue=False, api_visibility="private",
        js=page_style.SAY_LINK_READY)
    gr.on(changed + [box.change for box in ui.experiment], None, None, ui.experiment_share_box, js="() => ''", queue=False,
          api_visibility="private")


def wire_constraint_check():
    """The constraint checked as typed; an example loaded."""
    gr.on([ui.kind.change, ui.constraint.change, ui.backend.change], check_constraint, [ui.kind, ui.constraint, ui.backend],
          ui.constraint_check, api_visibility="private", concurrency_limit=1, concurrency_id="constraint-check",
          trigger_mode="always_last",  # one check at a time, then the newest (a preset changes all three at once)
          show_progress="hidden")  # quick; its fading stayed on after a refused Run had written the box
    ui.example_constraint.input(load_example, [ui.example_constraint, ui.prompt], [ui.kind, ui.constraint, ui.prompt],
                                api_visibility="private")
    for event in (ui.preset.change, ui.kind.input, ui.constraint.input):  # another preset, or an edit: no longer the example
        event(None, None, ui.example_constraint, js="() => null", queue=False, api_visibility="private")  # (not a Tab)


def wire_experiments():
    """Sweeps and the draft comparison: their buttons, runs and CSV downloads."""
    # the axis' values, in the browser: from the server, a reset queued behind a loaded host's events came after
    # values typed meanwhile, and the sweep ran the defaults (browser tests raced it under load, 2026-12-04)
    ui.axis.input(None, ui.axis, ui.sweep_values, js=f"(axis) => ({json.dumps(SWEEP_DEFAULTS)})[axis] ?? ''", queue=False,
                  api_visibility="private")
    ui.axis.change(empty_sweep_table, [ui.axis, ui.sweep_table], ui.sweep_table, queue=False, api_visibility="private")  # a link's too
    measuring_events = {}  # experiment name -> its measuring event
    for button, stop, experiment, inputs, outputs, name in (
            (ui.sweep_btn, ui.sweep_stop, named_inputs(run_sweep, ("axis", "sweep_values", "prompts")), [ui.axis, ui.sweep_values, ui.sweep_prompts], [ui.sweep_status, ui.sweep_table, ui.sweep_plot, ui.sweep_csv, ui.k_sweep], "sweep"),
            (ui.compare_btn, ui.compare_stop, named_inputs(run_comparison, ("variants", "prompts")), [ui.variants, ui.sweep_prompts], [ui.compare_status, ui.compare_table, ui.compare_plot, ui.compare_csv],
             "compare_drafts")):
        start, stopping, end = experiment_buttons(name, len(inputs))
        started = button.click(start, None, [button, stop, *inputs], queue=False, api_visibility="private")  # as Run and Stop
        started.then(None, None, None, js=focus_moved_to(f"#{stop.elem_id}"), queue=False, api_visibility="private")  # (it
        # fell to the page's body as its button was disabled: an accessibility review)
        measuring = started.then(experiment, inputs + ui.settings, outputs, api_name=name, concurrency_limit=CONCURRENCY,
                                 concurrency_id=DEVICE, show_progress_on=[outputs[0]])
        measuring_events[name] = measuring
        button.click(None, outputs[0], outputs[0], js=waits_for_run_js(name), queue=False, api_visibility="private")
        for step in (measuring.then, measuring.failure):
            step(end, None, [button, stop, *inputs], queue=False, api_visibility="private").then(
                None, None, None, js=focus_moved_to(f"#{button.elem_id}"), queue=False, api_visibility="private")
        measuring.failure(None, outputs[0], outputs[0], js="(s) => (s || '').includes('experiment-waits') ? '' : s",
                          queue=False, api_visibility="private")  # (it never started: its note of waiting goes)
        stop.click(stopping, None, stop, queue=False, api_visibility="private")
    # Download CSV shows once a sweep ended with a file (toggled here: the sweep's API returns the path alone; the
    # button's own value cannot be sent back, serving.RequestGuard refuses a file in a request)
    for button, name, table, csv in ((ui.sweep_btn, "sweep", ui.sweep_table, ui.sweep_csv),
                                     (ui.compare_btn, "compare_drafts", ui.compare_table, ui.compare_csv)):
        button.click(lambda: gr.update(visible="hidden"), None, csv, queue=False, api_visibility="private")
        measuring_events[name].then(lambda rows: gr.update(visible=rows_shown(rows) or "hidden"), table,
                                    csv, queue=False, api_visibility="private")


def wire_calculator(page: gr.Blocks):
    """The calculator redrawn on any of its inputs; set from the last run."""
    gr.on([ui.calc_a.change, ui.calc_k.change, ui.calc_c.change, ui.history.change, ui.k_sweep.change, page.load], calculator,
          [ui.calc_a, ui.calc_k, ui.calc_c, ui.history, ui.k_sweep], [ui.calc_text, ui.calc_plot], preprocess=False,  # values checked there
          trigger_mode="always_last", api_visibility="private")  # one at a time, then the newest (a link or "Set
    # from my last run" changes three sliders at once: four events of its lane, past an address's share of one)
    ui.calc_from_run.click(from_last_run, [ui.history, ui.k_sweep, ui.calc_a, ui.calc_k, ui.calc_c], [ui.calc_a, ui.calc_k, ui.calc_c, ui.calc_text],
                           preprocess=False, queue=False, api_visibility="private")  # (the sliders as the calculator takes them)


def wire_link_notices():
    """A link's notices stay until dismissed."""
    ui.link_notice.change(lambda notice: gr.update(visible=bool(notice)), ui.link_notice, ui.dismiss_notice, queue=False,
                          api_visibility="private")  # a link's notices stay, once read and fixed, until dismissed
    ui.dismiss_notice.click(lambda: "", None, ui.link_notice, queue=False, api_visibility="private")


def add_generate_api(page: gr.Blocks):
    """The web API's /generate, its texts bounded as the page's are."""
    gr.api(generate, api_name="generate", concurrency_limit=CONCURRENCY, concurrency_id=DEVICE)
    api_texts = {"prompt": (MAX_PROMPT_CHARS, 4), "schema": (MAX_SCHEMA_TEXT_CHARS, 1.25), "grammar": (MAX_GRAMMAR_CHARS, 4),
                 "link": (MAX_LINK_CHARS, 1)}
    for name, box in zip(inspect.signature(generate).parameters, next(
            fn for fn in page.fns.values() if fn.api_name == "generate").inputs):  # (their labels: "1st", "2nd")
        bound(box, *api_texts.get(name, (VALUE_CHARS, 1)), name)


ANALYTICS = None if "GRADIO_ANALYTICS_ENABLED" in os.environ else False  # Gradio's telemetry and version check
# at start-up: off unless the host asks (a public Space's promise is that nothing it serves fetches a URL; a review)
with gr.Blocks(title="Speculative decoding playground", delete_cache=(SWEEP_S, DOWNLOAD_TTL_S), analytics_enabled=ANALYTICS) as demo:
    add_head()
    with gr.Tabs() as ui.tabs, gr.Tab("Playground", id="playground"):
        add_playground_tab()
    with ui.tabs, gr.Tab("Experiments", id=TAB):
        add_experiments_tab()
    add_states()
    bound_long_texts()
    wire_presets()
    wire_link_restore(demo)
    wire_messages_cleared()
    wire_shown_inputs()
    wire_run()
    wire_views()
    wire_share_links()
    wire_constraint_check()
    wire_experiments()
    wire_calculator(demo)
    wire_link_notices()
    add_generate_api(demo)
