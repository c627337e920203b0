"""The Experiments tab's speedup calculator: the chain's formula (playground.metrics) for the sliders' α, k and
c, its best k, and beside them the user's own compared runs (playground_tab.remember_run) and last K sweep
(experiments_tab.k_sweep_points) as measured; a run the formula does not describe is said, not taken."""
import math

import gradio as gr

from playground.metrics import expected_speedup, expected_tokens_per_round, speedup_said
from playground.ui import plots, render
from playground.ui.experiment_link import CALCULATOR_RANGES
from playground.ui.share import RANGES


def _outside_calculator_ranges(*values) -> str:
    """'' when each value is a number in its slider's range (k a whole one), else what is wrong (NaN and
    typed text too)."""
    for (name, (low, high)), value in zip(CALCULATOR_RANGES.items(), values):
        number = not isinstance(value, bool) and isinstance(value, (int, float))
        if not number or not low <= value <= high or (name == "k" and not float(value).is_integer()):
            whole = " a whole number" if name == "k" else ""
            typed_as = "empty" if value is None or value == "" else render.md_escape(str(value)[:40])
            told = f"{'k' if name == 'k' else f'the {name}'} must be{whole} between {low} and {high}, not {typed_as}"
            if name == "cost ratio" and number and high < value < float("inf"):  # (a seed's c is the target's cost over the draft's)
                told += f": c is a draft pass's time over a target pass's (a draft {value:g}x faster: {1 / value:.3g})"
            return told
    return ""


def from_last_run(history: list, k_sweep: dict | None = None, *sliders) -> tuple:
    """The calculator's sliders set to the last compared run's α, k and c (each within its slider's
    range; the calculator's text gives the run's own), so the curve is that run's: a run drawn against
    the default curve read as the formula failing. -> (α, k, c, the calculator's text: where there is
    no run yet, a word above the result the `sliders` (α, k, c) give, which stays: it was replaced, a
    K sweep's line read gone)."""
    runs = formula_runs(history)
    if not runs:
        word = ("**No run to take them from yet:** run a draft model with a fixed k, compared with the target alone, "
                "in the Playground tab (a sweep's runs are its own line on the chart)" + _beyond(history) * (not sliders)
                + ".")  # (with the sliders, the calculator's text below says it: it was said twice, a review)
        return (gr.skip(),) * 3 + (f"{word}\n\n{calculator(*sliders, history, k_sweep)[0]}" if sliders else word,)
    last = runs[-1]
    (a_low, a_high), (c_low, c_high) = CALCULATOR_RANGES["acceptance"], CALCULATOR_RANGES["cost ratio"]
    c = gr.skip() if last.get("cost_ratio") is None else round(min(max(last["cost_ratio"], c_low), c_high), 3)  # as
    # the text gives it (to 0.01, a run's 0.075 was 0.08 on the slider: 1.63x expected where it said 1.65x)
    return round(min(max(last["alpha"], a_low), a_high), 2), last["k"], c, gr.skip()


def formula_runs(history: list) -> list[dict]:
    """The remembered runs the formula describes (playground_tab.remember_run), oldest first."""
    return [m for m in history or [] if "beyond" not in m]


def _beyond(history: list) -> str:
    """Why the last compared run is not the one the calculator takes, where it came after them ('' if not)."""
    if not history or "beyond" not in history[-1]:
        return ""
    return (f"; your last compared run, with {history[-1]['beyond']}, is not one the formula describes (a draft model "
            "drafting a chain of fixed k)")


def _last_run(history: list) -> str:
    """The last compared run's own figures (and pair), beside the calculator's (its sliders hold only their range)."""
    runs, later = formula_runs(history), _beyond(history)
    if not runs:
        return later
    last = runs[-1]
    c = "" if last.get("cost_ratio") is None else f", c {last['cost_ratio']:.3f}"
    shown = _noisy(last) if not last.get("speedup") else speedup_said(  # ("no clear difference, 1.04x (0.97-1.12x)"
        last["speedup"], last["speedup_low"], last["speedup_high"])    # as its card said: a bare 1.04x read as faster)
    which = "Your last compared run" if not later else "Your last compared run the formula describes"
    pair = f", {last['pair']}" if last.get("pair") else ""
    return (f"{later}. {which}{pair}: α {last['alpha']:.2f}, k {last['k']}{c}, measured {shown} (the formula leaves "
            f"out each round's overhead and the prompt passes, which the measured speedup holds, and takes a verify "
            "pass of k + 1 tokens to cost what the target alone's one-token pass does)")


def _noisy(run: dict) -> str:
    """A run's speedup too noisy for one number, as its card said it: 'faster, 1.14-2.09x, about 1.66x'."""
    verdict = {"faster": "faster, ", "slower": "slower, "}.get(run.get("verdict"), "")
    spread = f"{run['speedup_low']:.2f}-{run['speedup_high']:.2f}x, " if run.get("speedup_low") and run.get("speedup_high") else ""
    return f"{verdict}{spread}about {run['speedup_estimate']:.2f}x (too noisy for one number)"


def calculator(acceptance: float, k: int, cost_ratio: float, history: list, k_sweep: dict | None = None):
    """-> (its text, its chart). The sliders' values come unchecked (the page wires it with Gradio's own
    check off: a typed 0 was refused in a toast, leaving the last result as if current); a value past
    its slider is said in the text, under the sliders, and the chart cleared. k_sweep: the last K
    sweep's points (k_sweep_points), drawn as measured."""
    if refused := _outside_calculator_ranges(acceptance, k, cost_ratio):
        return f"**Not computed:** {refused}", None
    per_round = expected_tokens_per_round(acceptance, int(k))
    speed = expected_speedup(acceptance, int(k), cost_ratio)
    text = f"**{per_round:.2f}** tokens per round (a verify pass), expected speedup **{_times(speed)}** ({_best_k(acceptance, cost_ratio)})"
    runs = formula_runs(history)
    told = [m for m in runs if m.get("speedup")]
    if untold := len(runs) - len(told):
        their, circles = ("their", "circles") if untold > 1 else ("its", "a circle")
        text += (f". {untold} of your runs compared with the target alone gave no single number for {their} speedup "
                 f"(too noisy for one): drawn as {circles} at {their} estimate, with {their} 95% interval")
    sweep_rows = (k_sweep or {}).get("rows") or []
    return (text + _last_run(history) + _last_sweep(k_sweep),
            plots.speedup_curve(acceptance, int(k), cost_ratio, runs, sweep_rows))


EVEN = 1e-9  # the formula's float error: α = c gives 0.9999999999999999x


def _times(speedup: float) -> str:
    """'1.42x'; a speedup under 1 rounded down (0.995 read "1.00x ... the target alone is faster")."""
    if speedup < 1 - EVEN:
        return f"{math.floor(speedup * 100 + EVEN) / 100:.2f}x"  # (+EVEN: 0.88 computed as 0.8799999999999999)
    return f"{max(speedup, 1.0):.2f}x"  # (0.9999999999999999: 1.00x)


def _best_k(acceptance: float, cost_ratio: float) -> str:
    """The k the formula favours, or that none pays: below 1x speculation is slower than the target alone."""
    best = max(range(1, RANGES["k"][1] + 1), key=lambda k: expected_speedup(acceptance, k, cost_ratio))
    if acceptance > 0 and not cost_ratio:  # rises with every k: in floats it stops rising before 16 (α 0.05: k = 12)
        best = RANGES["k"][1]
    top = expected_speedup(acceptance, best, cost_ratio)
    if abs(top - 1) < EVEN:  # (α = c: 1 + α over 1 + c)
        return f"at best break-even: k = {best} gives 1.00x, as fast as the target alone"
    if top < 1:
        return (f"no k pays for these numbers: the best, k = {best}, gives {_times(top)}; the target alone is faster "
                "(a higher acceptance or a cheaper draft is needed)")
    enough = next(k for k in range(1, best + 1) if expected_speedup(acceptance, k, cost_ratio) >= FLAT * top)
    flat = (f"; k = {enough} already gives {_times(expected_speedup(acceptance, enough, cost_ratio))}, within 1% of "
            f"k = {best}'s {_times(top)}" if enough < best else "")  # (α 0.3, c 0: k = 3 gives 1.42x, k = 16 1.43x)
    if best == RANGES["k"][1] and not cost_ratio:  # (prompt lookup's guesses cost next to nothing)
        return (f"best k for these numbers: {best} or more: with c = 0 drafting is free here, so a longer round never "
                f"costs more (a real verify pass grows with its width){flat}")
    if best == RANGES["k"][1]:  # the formula's best lies past the slider (α 0.95, c 0.01: k = 40, 12.5x against 10.0x)
        return f"best k for these numbers: {best} or more ({best} is the slider's limit){flat}"
    return f"best k for these numbers: {best}{flat}"


FLAT = 0.99  # a k within 1% of the best gives as much, for all a measurement can tell


def _last_sweep(k_sweep: dict | None) -> str:
    """What the last K sweep's line on the chart is, and the best k it measured (where one was clear)."""
    if (k_sweep or {}).get("beyond"):
        return (f". Your last K sweep, with {k_sweep['beyond']}, is not drawn: the formula describes a draft model "
                "drafting a chain of fixed k")
    if not (k_sweep or {}).get("rows"):
        return ""
    rows = k_sweep["rows"]
    alphas = [r["token_acceptance"] for r in rows if r.get("token_acceptance") is not None]  # the slider's α (its
    # acceptance rate falls with k by construction: α(1 - α^k) / ((1 - α) k), 0.50 at k = 1 to 0.125 at k = 8 for α 0.5)
    low, high = (f"{min(alphas):.2f}", f"{max(alphas):.2f}") if alphas else ("", "")
    spread = "" if not alphas else f", α {low}" if low == high else f", α {low}-{high}"
    if len(rows) == 1:  # (one point: no line, and no k to be best among; a review)
        return (f". Your last K sweep (temperature {k_sweep['temperature']:g}{spread}) measured k {rows[0]['k']} alone: "
                "its point is that run, with its own α")
    best = plots.clear_best(rows)
    measured_best = f"; best k measured: {best['k']}" if best else "; no k measured clearly best"
    return (f". Your last K sweep (temperature {k_sweep['temperature']:g}{spread}) is the measured line: each point is "
            f"its own run, with its own α{measured_best}")
