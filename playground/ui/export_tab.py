"""The Export tab: the page's current setting as vLLM and SGLang launch commands with one request
each, and a transformers generate call (playground.export), each in a code box with a copy button,
and what each engine cannot express. Nothing loads and nothing runs: the text is only shown."""
import html

from playground.constraints import worker
from playground.constraints.reading import READ_SECONDS
from playground.errors import PlaygroundError
from playground.export import export_setting, shell_block
from playground.limits import MAX_EXPORT_CHARS
from playground.ui import render
from playground.ui.inputs import PRESETS, settings_to_run
from playground.ui.live import checked_config

TITLES = {"vllm": "vLLM", "sglang": "SGLang", "transformers": "transformers"}


def export_view(*values) -> list[str]:
    """The page's ui.settings values -> [notes HTML, vLLM block, SGLang block, transformers code]; a setting that
    cannot be exported is said in the notes, the boxes left empty: what Run refuses, each in Run's words.
    The constraint is read within the check as typed's time (READ_SECONDS); past it, after a Run has read
    it (kept: parse_schema)."""
    try:
        s = settings_to_run(*values)  # (a kind picked, its box empty: Run refuses it, the export ran unconstrained)
        with worker.ceiling(READ_SECONDS):  # (its lanes are every visitor's: slow schemas held them 15 s each)
            checked_config(s, prompt=True, read=True)  # Run's checks: a tree of 50 children, a seed past 2^64, an
            # empty prompt were exported; the constraint read as Run reads it
        e = export_setting(s)
    except worker.OverCeiling as exc:
        return [render.error(f"{exc}: a Run reads it with more time, and the export shows after it", "export"), "", "", ""]
    except PlaygroundError as exc:
        return [render.error(str(exc), "export"), "", "", ""]
    boxes = [shell_block(e, "vllm"), shell_block(e, "sglang"), e.transformers_code]
    if (size := sum(map(len, boxes))) > MAX_EXPORT_CHARS:
        return [render.error(f"this export is {size:,} characters, more than the page shows ({MAX_EXPORT_CHARS:,}): each "
                             "engine's request holds the schema and the prompt again (escaped for JSON, a character "
                             "outside ASCII as up to 12); `python -m playground export` writes it whole", "export"), "", "", ""]
    alone = f'<p class="export-preset-note" id="export-alone">{html.escape(e.alone)}</p>' if e.alone else ""
    return [not_the_preset(s) + alone + notes_html(e.notes), *boxes]


def not_the_preset(s) -> str:
    """A line where the settings' models are not those of the preset they name: a web API caller who gave
    `preset` alone got the page's default pair's commands with nothing to say so (a CLI review)."""
    named = PRESETS.get(s.preset)
    if named is None or (named.target, named.draft) == (s.target, s.draft):
        return ""
    return (f'<p class="export-preset-note">These are the settings\' models, {html.escape(s.target)} with '
            f'{html.escape(s.draft)}, not those of the preset {html.escape(s.preset)} ({html.escape(named.target)} with '
            f'{html.escape(named.draft)}): pick the preset again for its pair (on the web API, give target and draft).</p>')


def notes_html(notes: dict) -> str:
    """What the engines cannot express: what none can once, then each engine's own; or one line
    saying everything carries over."""
    shared = [n for n in next(iter(notes.values()), []) if all(n in items for items in notes.values())]
    lists = {"Every engine": shared} | {TITLES[e]: [n for n in items if n not in shared] for e, items in notes.items()}
    parts = [f"<p><b>{title}</b>: not carried over, or different:</p><ul>"
             + "".join(f"<li>{html.escape(n)}</li>" for n in items) + "</ul>"
             for title, items in lists.items() if items]
    body = "".join(parts) or "<p>Every setting here carries over to each engine.</p>"
    return f'<div id="export-notes">{body}</div>'
