"""The Experiments tab's inputs in a share link (the Playground's settings travel as in share.py):
the sweep's axis, values and prompts, the drafts compared, the calculator's sliders, and that the
page opens on that tab. Each parameter is parsed and range-checked; a wrong one is dropped with a
notice, as a wrong setting is. A sweep's values and prompts travel as typed, read as Run sweep
reads them: what it would refuse is a notice at open and a refusal when the link is made."""
import dataclasses

from playground.config import runnable_temperature
from playground.errors import PlaygroundError
from playground.limits import MAX_PROMPT_CHARS, MAX_SWEEP_PROMPTS, at_most
from playground.measure import sweeps
from playground.ui.share import RANGES, TEMPERATURES, number, text_within, whole_number

SWEEP_DEFAULTS = {"k": "1,2,3,4,6,8", "temperature": "0,0.3,0.7,1.0"}  # values reset when the axis changes
CALCULATOR_RANGES = {"acceptance": (0, 1), "k": RANGES["k"], "cost ratio": (0, 1)}  # its sliders' (α = 1 and
# c = 0 included: an exact match and prompt lookup's near-free guesses are what a user compares against)
MAX_VALUES_CHARS = 200  # a sweep's values as typed (at most 16 numbers)
TAB = "experiments"  # tab=experiments: the page opens on that tab
LABELS = {"sweep_axis": "Sweep", "sweep_values": "Values", "sweep_prompts": "Prompts", "compare_drafts": "Drafts",
          "calc_alpha": "per-token acceptance α", "calc_k": "k", "calc_c": "cost ratio c"}  # each input's on the page


@dataclasses.dataclass(frozen=True)
class Experiment:
    """The Experiments tab's inputs; the defaults are the page's first values."""
    sweep_axis: str = "k"
    sweep_values: str = SWEEP_DEFAULTS["k"]
    sweep_prompts: str = ""
    compare_drafts: tuple[str, ...] = tuple(sweeps.VARIANTS)
    calc_alpha: float = 0.7
    calc_k: int = 4
    calc_c: float = 0.1

    def inputs(self) -> list:
        """The tab's component values, in EXPERIMENT_NAMES' order."""
        return [list(v) if isinstance(v, tuple) else v for v in (getattr(self, n) for n in EXPERIMENT_NAMES)]


EXPERIMENT_NAMES = tuple(f.name for f in dataclasses.fields(Experiment))


def _axis(v: str) -> str:
    if v.lower() not in SWEEP_DEFAULTS:
        raise ValueError(f"must be one of {', '.join(SWEEP_DEFAULTS)}")
    return v.lower()


def sweep_values(axis: str, text: str) -> list:
    """A sweep's values as typed -> its numbers, or ValueError naming the wrong ones (Run sweep, a
    link and its maker read them alike)."""
    values = sweeps.parse_values(text, int if axis == "k" else float)
    lo, hi = RANGES[axis]
    runs = runnable_temperature if axis == "temperature" else lambda v: lo <= v <= hi
    if bad := [v for v in values if not runs(v)]:
        split = axis == "temperature" and "," in text and any(v > hi for v in bad)  # 0,3 for 0.3
        hint = "; a comma separates values: write 0.3 with a point" if split else ""
        allowed = TEMPERATURES if axis == "temperature" else f"between {lo} and {hi} (the slider's range)"
        raise PlaygroundError(f"sweep values for {axis} must be {allowed}, not "
                              f"{', '.join(map(str, bad[:8]))}{' ...' * (len(bad) > 8)}{hint}")
    return values


def sweep_prompts(text: str) -> str:
    """The prompts box as typed, within the host's count of prompts (one per non-empty line)."""
    text_within(MAX_PROMPT_CHARS)(text)  # first: the lines of 20 MB took a second
    at_most(len(sweeps.prompt_lines(text)), MAX_SWEEP_PROMPTS, "the number of prompts")
    return text


def _drafts(v: str) -> tuple[tuple[str, ...], list[str]]:
    """-> (the known names, in the link's order, each once; the unknown ones)."""
    names = tuple(dict.fromkeys(n for n in v.split(",") if n))
    return tuple(n for n in names if n in sweeps.VARIANTS), [n for n in names if n not in sweeps.VARIANTS]


PARSERS = {"sweep_axis": _axis, "sweep_values": text_within(MAX_VALUES_CHARS), "sweep_prompts": sweep_prompts,
           "calc_alpha": number(*CALCULATOR_RANGES["acceptance"]), "calc_k": whole_number(*CALCULATOR_RANGES["k"]),
           "calc_c": number(*CALCULATOR_RANGES["cost ratio"])}  # compare_drafts: _drafts (keeps the known names)


def experiment_from_query(params: dict[str, str]) -> tuple[Experiment, bool, dict[str, str], list[str]]:
    """Query parameters -> (the tab's inputs, whether the link opens on it, the parameters that are
    not the tab's, notices about what was ignored)."""
    experiment, refused = read_experiment(params)
    notices = [f"ignored {key}={raw[:40]!r}: {why}" for key, raw, why in refused]
    if params.get("tab", TAB).lower() not in (TAB, "playground"):
        notices.append(f"ignored tab={params['tab'][:40]!r}: a link opens on playground or {TAB}")
    rest = {key: raw for key, raw in params.items() if key not in (*EXPERIMENT_NAMES, "tab")}
    return experiment, params.get("tab", "").lower() == TAB, rest, notices


def read_experiment(params: dict[str, str]) -> tuple[Experiment, list[tuple[str, str, str]]]:
    """The tab's parameters among `params` -> (the inputs, (name, value, why) of each one refused).
    Without sweep_values a link's axis brings its own defaults; values Run sweep would refuse, and
    draft names it does not know, are refused with its reason."""
    parsed, refused = {}, []
    for key, raw in params.items():
        try:
            if key in PARSERS:
                parsed[key] = PARSERS[key](raw)
            elif key == "compare_drafts":
                known, unknown = _drafts(raw)
                refused += [(key, n, f"not one of {', '.join(sweeps.VARIANTS)}") for n in unknown]
                if known or not unknown:  # only unknown ones: ignored, the page's own stay
                    parsed[key] = known
        except ValueError as exc:
            refused.append((key, raw, str(exc)))
    axis = parsed.get("sweep_axis", Experiment.sweep_axis)
    try:
        if "sweep_values" in parsed:  # (the page's own are the host's business)
            sweep_values(axis, parsed["sweep_values"])
    except ValueError as exc:
        refused.append(("sweep_values", parsed.pop("sweep_values"), str(exc)))
    return Experiment(**({"sweep_values": SWEEP_DEFAULTS[axis]} | parsed)), refused


def experiment_params(experiment: Experiment) -> dict[str, str]:
    """The link's parameters: the tab, and each input that differs from what the page (or the link's
    axis) starts with."""
    first = Experiment(sweep_values=SWEEP_DEFAULTS[experiment.sweep_axis])  # values: the axis' own
    params = {"tab": TAB}
    for name in EXPERIMENT_NAMES:
        if (value := getattr(experiment, name)) != getattr(first, name):
            params[name] = ",".join(value) if isinstance(value, tuple) else str(value)
    return params

