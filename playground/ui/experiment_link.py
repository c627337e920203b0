"""The Experiments tab's inputs in a share link (the Playground's settings travel as in share.py):
the sweep's axis, values and prompts, the drafts compared, the calculator's sliders, and that the
page opens on that tab. Each parameter is parsed and range-checked; a wrong one is dropped with a
notice, as a wrong setting is. A sweep's values and prompts travel as typed (a value the sweep
would refuse is refused by Run sweep, as it was for the link's maker)."""
import dataclasses

from playground.limits import MAX_PROMPT_CHARS
from playground.measure import sweeps
from playground.ui.share import RANGES, number, text_within, whole_number

SWEEP_DEFAULTS = {"k": "1,2,3,4,6,8", "temperature": "0,0.3,0.7,1.0"}  # values reset when the axis changes
CALCULATOR_RANGES = {"acceptance": (0, 0.99), "k": RANGES["k"], "cost ratio": (0.01, 1)}  # its sliders'
MAX_VALUES_CHARS = 200  # a sweep's values as typed (at most 16 numbers)
TAB = "experiments"  # tab=experiments: the page opens on that tab


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
        return [*(getattr(self, name) for name in EXPERIMENT_NAMES[:3]), list(self.compare_drafts),
                self.calc_alpha, self.calc_k, self.calc_c]


EXPERIMENT_NAMES = tuple(f.name for f in dataclasses.fields(Experiment))


def _axis(v: str) -> str:
    if v not in SWEEP_DEFAULTS:
        raise ValueError(f"must be one of {', '.join(SWEEP_DEFAULTS)}")
    return v


def _drafts(v: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n for n in v.split(",") if n))  # the page's order is the link's
    if unknown := [n for n in names if n not in sweeps.VARIANTS]:
        raise ValueError(f"{unknown[0][:40]!r} is not one of {', '.join(sweeps.VARIANTS)}")
    return names


PARSERS = {"sweep_axis": _axis, "sweep_values": text_within(MAX_VALUES_CHARS), "sweep_prompts": text_within(MAX_PROMPT_CHARS),
           "compare_drafts": _drafts, "calc_alpha": number(*CALCULATOR_RANGES["acceptance"]),
           "calc_k": whole_number(*CALCULATOR_RANGES["k"]), "calc_c": number(*CALCULATOR_RANGES["cost ratio"])}


def experiment_from_query(params: dict[str, str]) -> tuple[Experiment, bool, dict[str, str], list[str]]:
    """Query parameters -> (the tab's inputs, whether the link opens on it, the parameters that are
    not the tab's, notices about what was ignored). Without sweep_values a link's axis brings its
    own defaults."""
    parsed, notices, rest = {}, [], {}
    for key, raw in params.items():
        if key in PARSERS:
            try:
                parsed[key] = PARSERS[key](raw)
            except ValueError as exc:
                notices.append(f"ignored {key}={raw[:40]!r}: {exc}")
        elif key != "tab":
            rest[key] = raw
    opens = params.get("tab") == TAB
    if "tab" in params and not opens:
        notices.append(f"ignored tab={params['tab'][:40]!r}: the only tab a link opens is {TAB}")
    axis = parsed.get("sweep_axis", Experiment.sweep_axis)
    experiment = Experiment(**({"sweep_values": SWEEP_DEFAULTS[axis]} | parsed))
    return experiment, opens, rest, notices


def experiment_params(experiment: Experiment) -> dict[str, str]:
    """The link's parameters: the tab, and each input that differs from what the page (or the link's
    axis) starts with."""
    first = Experiment(sweep_axis=experiment.sweep_axis, sweep_values=SWEEP_DEFAULTS[experiment.sweep_axis])
    params = {"tab": TAB}
    for name in EXPERIMENT_NAMES:
        value = getattr(experiment, name)
        if value != getattr(first, name) or name == "sweep_axis" and value != Experiment.sweep_axis:
            params[name] = ",".join(value) if isinstance(value, tuple) else str(value)
    return params

