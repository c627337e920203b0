"""What the page's boxes refuse, in their own words (Gradio's named neither the box nor the value, and logged a
traceback for each): a slider's, a list's, a number's and a text box's preprocess, and the popup every refusal is
shown in, escaped for a page and not for an API caller (it needs the request a call answers: Blocks.process_api
changed to know it). Set on the classes by playground.ui.gradio_patches.install, as the page is built."""
import contextvars
import functools
import html
import math

import gradio as gr
from gradio.context import LocalContext


def popup(message: str, **options) -> gr.Error:
    """An error for the page's popup, which reads its message as HTML: escaped, so what the user typed
    (quoted in the message) shows as typed (`<a href=...>` in Values was a live link there). An API
    caller reads it as text: as written (it got `tree='2,&lt;b&gt;'` for what it sent, an API review)."""
    text = html.escape(message, quote=False) if _for_a_page() else message
    return gr.Error(text, print_exception=False, **options)


def _for_a_page() -> bool:
    """Whether the call being answered may be a page's: not one of gradio_client's (it says
    `x-gradio-user: api`, or mcp for Gradio's MCP server) nor a /call/ route's (the API's alone).
    Outside a call (a test, the CLI): True, escaped."""
    request = ANSWERING.get(None) or LocalContext.request.get(None)
    if request is None:
        return True
    headers, url = getattr(request, "headers", None) or {}, str(getattr(request, "url", ""))
    return headers.get("x-gradio-user") not in ("api", "mcp") and "/gradio_api/call/" not in url


ANSWERING = contextvars.ContextVar("playground_answering", default=None)  # the request a call's inputs come with


def process_api_knowing_its_request(process_api):
    """Blocks.process_api, with the request it answers known while the components read its inputs: Gradio sets
    LocalContext.request only around the function, so a box's refusal (k='<b>&' sent to /export) reached an API
    caller escaped as for a page (an API review). Installed by gradio_patches."""
    @functools.wraps(process_api)
    async def answering(self, *args, request=None, **kwargs):
        token = ANSWERING.set(request if not isinstance(request, list) else None)  # (a batch: several requests)
        try:
            return await process_api(self, *args, request=request, **kwargs)
        finally:
            ANSWERING.reset(token)
    answering.knows_its_request = True
    return answering


def _named_refusals(own):
    """gr.Slider.preprocess, its refusals naming the slider: an emptied box was "Could not preprocess
    input component at index 3 (a `slider` component) ... TypeError", a typed 100 "Value 100 is
    greater than maximum value 16." (the box then takes the nearest value it allows, and the message says
    so: a run then used it after an "Error"). Set on the class:
    Gradio remakes a component from its constructor's arguments for a session once a callback updates
    it (k's label, the thinking budget), and writes a .pyi beside the module of any subclass."""
    def preprocess(self, payload):
        span = f"from {self.minimum:g} to {self.maximum:g}"
        if payload is None:
            raise popup(f"{self.label} is empty: type a number {span} (the page's box turns it into {self.minimum:g} "
                        "when you leave it)", title="Not a number")
        if not isinstance(payload, (int, float)):  # a string from a script: Gradio's TypeError, with a traceback
            raise popup(f"{self.label} takes a number {span}, not {str(payload)[:40]!r}")
        if not math.isfinite(payload):  # (NaN from a script was said to be what the box "turns it into")
            raise popup(f"{self.label} takes a finite number {span}, not {payload}")
        if not self.minimum <= payload <= self.maximum:  # the box sends what was typed, then takes the nearest
            # number in range once left (Gradio's Slider): a run after "Error" for a typed 40 used 16, unsaid
            nearest = min(max(payload, self.minimum), self.maximum)
            raise popup(f"{self.label} takes a number {span}, not {payload:g} (the page's box turns it into "
                        f"{nearest:g} when you leave it)", title="Out of range")
        return own(self, payload)
    preprocess.named = True
    return preprocess


MAX_CHOICES_SAID = 12  # a refused choice's message names the box's first choices, this many at most (Gradio's
# words had named none: "Preset: Value: nope is not in the list of choices", an API review)


def _named_choices(own):
    """gr.Dropdown's (gr.Radio's, gr.CheckboxGroup's, gr.Number's) preprocess, its refusals naming the
    box, in the server's log on one line: a wrong choice or a NaN seed sent by a script was "Value: x
    is not in the list of choices: [...]" or "cannot convert float NaN to integer" with no name, each
    with a full traceback in the log (a cheap way to fill it); a number past its box's bounds is refused
    with them (the page's seed: up to 2^53, which a browser's number holds exactly), and a fraction where
    it takes whole numbers (precision 0). Set on the class, as for sliders."""
    def preprocess(self, payload):
        if isinstance(payload, float) and not math.isfinite(payload):
            raise popup(f"{self.label} takes a finite number, not {payload}")
        low, high = getattr(self, "minimum", None), getattr(self, "maximum", None)
        if isinstance(payload, (int, float)) and None not in (low, high) and not low <= payload <= high:
            raise popup(f"{self.label} takes a number from {low:.16g} to {high:.16g}, not {payload}",
                        title="Out of range")  # (Gradio's words: "Seed: Value 12345678901234567 is greater than ...")
        if getattr(self, "precision", None) == 0 and isinstance(payload, float) and not payload.is_integer():
            raise popup(f"{self.label} takes a whole number, not {payload}")  # (Gradio rounded it: seed 1.5 ran as 2
            # where /generate refused it, and 0.4 left a link unsaid; an API review)
        if isinstance(self, gr.CheckboxGroup) and payload is not None and not isinstance(payload, list):
            raise popup(f"{self.label} takes a list of names, not {str(payload)[:40]!r}")  # (a
            # string was read letter by letter: "Value: 'd' is not in the list of choices")
        try:
            return own(self, payload)
        except gr.Error as exc:  # (a few choices named: "Value: 'outlines' (type: <class 'str'>) is not in the list")
            chosen = [c[1] if isinstance(c, (tuple, list)) else c for c in getattr(self, "choices", None) or ()]
            if not chosen:
                raise popup(f"{self.label}: {exc.message[:300]}") from None
            more = f" and {len(chosen) - MAX_CHOICES_SAID} more" if len(chosen) > MAX_CHOICES_SAID else ""
            named = f"{', '.join(map(str, chosen[:MAX_CHOICES_SAID]))}{more}"
            if isinstance(payload, list):  # a CheckboxGroup's: the first name it does not have (the list was quoted)
                unknown = next((item for item in payload if item not in chosen), payload)
                raise popup(f"{self.label} takes names among {named}, not {str(unknown)[:40]!r}") from None
            raise popup(f"{self.label} takes one of {named}, not {str(payload)[:40]!r}") from None
        except (ValueError, TypeError, OverflowError):
            raise popup(f"{self.label} cannot take {str(payload)[:40]!r}") from None
    preprocess.named = True
    return preprocess


def _text_only(own):
    """gr.Textbox.preprocess, refusing what is not text: it passed on str() of any JSON value a script sent, so
    Compare drafts measured a list of prompts as the prompt "['a']" and every text check passed (a review)."""
    def preprocess(self, payload):
        if payload is not None and not isinstance(payload, str):
            raise popup(f"{self.label or 'a text box'} takes text, not {type(payload).__name__}: {str(payload)[:40]!r}")
        return own(self, payload)
    preprocess.named = True
    return preprocess


def install() -> None:
    """Each box's preprocess changed once: on the class (Gradio remakes a component from its constructor's arguments
    for a session once a callback updates it, and writes a .pyi beside the module of any subclass)."""
    if not getattr(gr.Textbox.preprocess, "named", False):
        gr.Textbox.preprocess = _text_only(gr.Textbox.preprocess)
    if not getattr(gr.Slider.preprocess, "named", False):
        gr.Slider.preprocess = _named_refusals(gr.Slider.preprocess)
    for choosing in (gr.Dropdown, gr.Radio, gr.CheckboxGroup, gr.Number):
        if not getattr(choosing.preprocess, "named", False):
            choosing.preprocess = _named_choices(choosing.preprocess)
