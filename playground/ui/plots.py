"""Plotly figures from events and measurements (no engine import)."""
import functools
from collections.abc import Callable

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from playground.config import MAX_K
from playground.events import ACCEPTED, BONUS, Prefill, Round
from playground.metrics import counted, expected_speedup
from playground.ui.render import COLOURS, UNDERLINES

# Each run chart writes its numbers on it (a bar's count, a point's rate, a line's end): read from the figure, and
# what a screen reader gets of it (its tick labels and title alone before: an accessibility review).
# The legend sits at the very bottom of the figure (container coordinates), below the x-axis title. 400 px:
# on a phone a sweep's six legend lines left the plot itself about 120 px of 340.
LAYOUT = dict(template="plotly_white", height=400, margin=dict(l=50, r=20, t=50, b=100),
              legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.01, x=0))


MAX_POINTS_SAID = 24  # of each trace, in a chart's description
# The toolbar's buttons but "download as PNG" and "reset axes": 38 Tab stops between the Charts tab and the run's
# download, each drawn faint when focused (an accessibility review); a drag still zooms.
TOOLBAR_LEFT_OUT = ["zoom", "pan", "select", "lasso", "zoomin", "zoomout", "autoscale",
                    "hoverclosest", "hovercompare", "togglespikelines"]  # (reset kept: a drag's zoom undone in sight)


def described(build: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """A chart builder whose figure carries what it shows as text, in its layout's meta (PAGE_JS names the chart
    by it for a screen reader: the accessibility tree read an unnamed picture and loose numbers, an audit): its
    title, then each trace's name and points."""
    @functools.wraps(build)
    def building(*args, **kwargs) -> go.Figure:
        fig = build(*args, **kwargs)
        fig.layout.meta = {"summary": describe(fig)}
        fig.layout.modebar.remove = TOOLBAR_LEFT_OUT
        return fig
    return building


def describe(fig: go.Figure) -> str:
    """'Title (y by x). name: x1: y1, x2: y2, ...' for each trace with points (at most MAX_POINTS_SAID each)."""
    x, y = fig.layout.xaxis.title.text, fig.layout.yaxis.title.text
    parts = [(fig.layout.title.text or "A chart") + (f" ({y} by {x})" if x and y else "")]
    for trace in fig.data:
        points = [f"{_said(x)}: {_said(y)}" for x, y in zip(trace.x or (), trace.y or ()) if y is not None]
        more = f", and {len(points) - MAX_POINTS_SAID} more" if len(points) > MAX_POINTS_SAID else ""
        parts += [f"{trace.name or 'values'}: {', '.join(points[:MAX_POINTS_SAID])}{more}"] if points else []
    return ". ".join(parts)


def _said(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _rounds(events) -> list[Round]:
    return [e for e in events if isinstance(e, Round) and e.target_passes]


@described
def accepted_histogram(events, k: int) -> go.Figure:
    """How many guesses each round kept (0..k; forced tokens are none); rounds that asked for none
    (the schedule's pause, the last token) are not counted."""
    counts = [0] * (k + 1)
    for r in _rounds(events):
        if r.k:
            counts[min(r.kept_guesses, k)] += 1
    fig = go.Figure(go.Bar(x=list(range(k + 1)), y=counts, marker_color=COLOURS["accepted"], text=counts,
                           textposition="outside", cliponaxis=False))
    fig.update_xaxes(dtick=1)  # every count labelled (plotly's own ticks skipped 1 and 3 at k=4)
    return fig.update_layout(title="Accepted draft tokens per round", xaxis_title="accepted in the round",
                             yaxis_title="rounds", **LAYOUT)


def _rates(counts: list[tuple[int, int, int]]) -> tuple[list[float], list[float]]:
    """position_counts -> per draft position i = 1..k, two definitions:
    prefix survival: of rounds that drafted position i, the share whose first i drafts were all kept;
    conditional: of rounds that drafted i and kept 1..i-1, the share that also kept i."""
    return ([kept / drafted if drafted else 0.0 for kept, drafted, _ in counts],
            [kept / reached if reached else 0.0 for kept, _, reached in counts])


def position_counts(events) -> list[tuple[int, int, int]]:
    """Per draft position i = 1..k: (rounds that kept 1..i, rounds that drafted i, of those the rounds that
    kept 1..i-1)."""
    rounds = _rounds(events)
    depth = max((r.depth for r in rounds), default=0)  # (a tree's positions are its levels, not its nodes)
    counts = []
    for i in range(1, depth + 1):  # (a chain's positions count its guesses: a forced draft is none)
        drafted = [r for r in rounds if (r.depth - r.forced_drafts if r.tree else r.guesses) >= i]
        counts.append((sum(r.kept_guesses >= i for r in drafted), len(drafted), sum(r.kept_guesses >= i - 1 for r in drafted)))
    return counts


@described
def acceptance_by_position(events) -> go.Figure:
    """Each point's rate written above it (survival's) or below it (the conditional's, above it near 0, where
    below ran into the axis's numbers); where both are the same the one number stands for both. Each rate
    is over its own rounds (those that drafted that far: a round's last guesses, cut by max new tokens or a
    policy, are fewer), so survival can fall where the conditional is 1 (a review): hover says how many."""
    counts = position_counts(events)
    survival, conditional = _rates(counts)
    xs = list(range(1, len(survival) + 1))
    below = ["top center" if y < 0.15 else "bottom center" for y in conditional]
    own = [f"{c:.2f}" if f"{c:.2f}" != f"{s:.2f}" else "" for s, c in zip(survival, conditional)]
    of_drafted = [f"kept 1..{i} in {k} of {counted(d, 'round')} that drafted {i}" for i, (k, d, _) in enumerate(counts, 1)]
    of_reached = [f"kept {i} in {k} of {counted(r, 'round')} that drafted {i} and kept 1..{i - 1}" for i, (k, _, r) in enumerate(counts, 1)]
    fig = go.Figure([go.Scatter(x=xs, y=ys, mode="lines+markers+text", name=name, text=text, hovertext=hover,
                                hoverinfo="text+name", textposition=where, cliponaxis=False)
                     for ys, name, text, hover, where in (
                         (survival, "prefix survival P(kept 1..i)", [f"{y:.2f}" for y in survival], of_drafted, "top center"),
                         (conditional, "conditional P(kept i | kept 1..i-1)", own, of_reached, below))])
    fig.update_xaxes(dtick=1)  # whole positions (plotly's own ticks put 1.5 and 2.5 between them)
    return fig.update_layout(title="Acceptance by draft position", xaxis_title="draft position i (hover: rounds)",
                             yaxis=dict(title="rate", range=[0, 1.05]), **LAYOUT)  # (what each rate is over: in
    # its hover; said in the title, it ran past both sides of the chart)


def _cumulative(events) -> tuple[list[int], list[int]]:
    passes = sum(e.target_passes for e in events if isinstance(e, Prefill))
    xs, ys, tokens = [passes], [0], 0
    for e in events:
        if isinstance(e, Round):
            passes += e.target_passes
            tokens += len(e.committed)
            xs.append(passes)
            ys.append(tokens)
    return xs, ys


@described
def cumulative_tokens(events, baseline_events=()) -> go.Figure:
    fig = go.Figure()
    for name, evs, colour in (("speculative", events, COLOURS["bonus"]), ("target alone", baseline_events, "#6b7280")):
        if evs:
            xs, ys = _cumulative(evs)  # the line's end in its legend entry (two ends written on the lines ran
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour),  # into each other)
                                     name=f"{name}: {ys[-1]} tokens, {xs[-1]} passes"))
    return fig.update_layout(title="Tokens written vs target passes", xaxis_title="target forward passes",
                             yaxis_title="tokens", **LAYOUT)


@described
def time_split(stats: dict | None, baseline_stats: dict | None = None) -> go.Figure:
    """Where the time went: draft passes, target passes, and everything else (sampling, constraint,
    bookkeeping)."""
    runs = [(n, s) for n, s in (("speculative", stats), ("target alone", baseline_stats)) if s and s["wall_s"] > 0]  # (a
    # target alone Stop came before: a bar of 0 s)
    fig = go.Figure()
    for part, colour in (("draft", COLOURS["accepted"]), ("target", COLOURS["bonus"]), ("overhead", "#9ca3af")):
        ys = [_part(s, part) for _, s in runs]
        fig.add_trace(go.Bar(x=[n for n, _ in runs], y=ys, name=part, marker_color=colour,
                             text=[f"{y:.2f} s" for y in ys], textposition="inside"))
    title = "Time split" + (", first measurement" if len(runs) > 1 else "")
    return fig.update_layout(barmode="stack", title=title, yaxis_title="seconds", **LAYOUT)


def _part(stats: dict, part: str) -> float:
    if part == "overhead":
        return max(0.0, stats["wall_s"] - stats["draft_s"] - stats["target_s"])
    return stats[f"{part}_s"]


@described
def sweep_chart(rows: list[dict], x: str) -> go.Figure:
    """Speedup and tokens per pass against the swept setting (k or temperature), best speedup marked; under
    them, on a panel of their own over the same x, the acceptance rate and α (0 to 1): on a second axis of one
    panel an acceptance of 0.13 sat on a speedup of 0.92 and on the 1x line (a newcomer's review)."""
    rows = sorted(rows, key=lambda r: r[x])  # (values typed 3,1,2 drew a zigzag)
    xs = [r[x] for r in rows]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.64, 0.36], vertical_spacing=0.07)
    top, bottom = dict(row=1, col=1), dict(row=2, col=1)
    if any(r["speedup"] is not None for r in rows):  # (its legend named an interval no point had)
        fig.add_trace(go.Scatter(x=xs, y=[r["speedup"] for r in rows], mode="lines+markers", name="speedup (95% interval)",
                                 line=dict(color=COLOURS["bonus"]), error_y=_interval(rows)), **top)
    fig.add_trace(go.Scatter(x=xs, y=[r["acceptance_rate"] for r in rows], mode="lines+markers", name=ACCEPTANCE,
                             line=dict(dash="dot", color=COLOURS["accepted"])), **bottom)  # (blue as the speedup's
    # by default). And α, the calculator's: over k the rate falls by construction, α need not (a maths review)
    fig.add_trace(go.Scatter(x=xs, y=[r["token_acceptance"] for r in rows], mode="lines+markers", name=ALPHA,
                             line=dict(color=COLOURS["accepted"]), marker=dict(symbol="triangle-up", size=7)), **bottom)
    fig.add_trace(go.Scatter(x=xs, y=[r["tokens_per_target_pass"] for r in rows], mode="lines+markers",
                             name="tokens per pass", line=dict(dash="dash", color=PASS_COLOUR),
                             marker=dict(symbol="diamond", size=6)), **top)
    untold = _untold(rows)
    for group, name, colour in _noisy_groups(untold):  # too noisy to tell: its interval, not a point of the line
        fig.add_trace(go.Scatter(x=[r[x] for r in group], y=[r["speedup_estimate"] for r in group], mode="markers",
                                 name=name, marker=dict(color=colour, symbol="circle-open", size=10),
                                 error_y=_range(group)), **top)
    if best := clear_best(rows):
        fig.add_trace(go.Scatter(x=[best[x]], y=[best["speedup"]], mode="markers", name=f"best {x} measured = {best[x]}",
                                 marker=dict(size=16, symbol="star", color="#f59e0b")), **top)
    elif (told := [r for r in rows if r["speedup"] is not None]) and len(told + untold) > 1:
        fig.add_annotation(text="no clear best: the intervals overlap", showarrow=False, xref="paper", yref="paper",
                           x=0.5, y=1.0, yanchor="bottom", font=dict(color="#6b7280"))
    target_alone_line(fig, **top)
    fig.update_yaxes(title_text="speedup, tokens a pass", title_font_color=UNDERLINES[BONUS][0], **top)
    fig.update_yaxes(title_text="acceptance", title_font_color=UNDERLINES[ACCEPTED][0], range=[0, 1.05], **bottom)
    fig.update_xaxes(title_text=x, **bottom)
    if x == "k":
        fig.update_xaxes(dtick=1)  # whole draft lengths, no 1.5
    return fig.update_layout(title=f"Sweep over {x}", **(LAYOUT | {"height": 520}))


def clear_best(rows: list[dict]) -> dict | None:
    """The row whose speedup was told and whose whole interval lies above every other row's (the
    intervals of those too noisy to tell included); None where the intervals overlap, or with nothing to
    be better than (a sweep stopped after its first point)."""
    told = [r for r in rows if r["speedup"] is not None]
    best = max(told, key=lambda r: r["speedup"], default=None)
    others = [r["speedup_high"] for r in told + _untold(rows) if r is not best]
    return best if best is not None and others and all(best["speedup_low"] > high for high in others) else None


MEASURED_COLOUR = "#dc2626"  # the calculator's measured runs


def _alpha(alpha: float | None) -> str:
    return "nothing drafted" if alpha is None else f"per-token acceptance α={alpha:.2f}"


@described
def speedup_curve(acceptance: float, k: int, cost_ratio: float, measured: list[dict] = (),
                  k_sweep: list[dict] = ()) -> go.Figure:
    """Expected speedup vs k for the chosen acceptance and draft/target cost ratio; measured runs
    (acceptance, k, speedup) as points, those too noisy to tell faint (estimate and interval); the last
    K sweep's rows as a measured line (its estimate where a point could not tell, with its interval)."""
    ks = list(range(1, MAX_K + 1))  # the k slider's range
    fig = go.Figure(go.Scatter(x=ks, y=[expected_speedup(acceptance, kk, cost_ratio) for kk in ks], mode="lines",
                               name=f"expected (α={acceptance:.2f}, c={round(cost_ratio, 3):g})"))  # c as its slider (0.025)
    fig.add_trace(go.Scatter(x=[k], y=[expected_speedup(acceptance, k, cost_ratio)], mode="markers",
                             name=f"k = {k}", marker=dict(size=14, color="#f59e0b")))
    if told := [m for m in measured if m.get("speedup")]:
        fig.add_trace(go.Scatter(x=[m["k"] for m in told], y=[m["speedup"] for m in told], mode="markers",
                                 name="measured runs", marker=dict(size=10, symbol="x", color=MEASURED_COLOUR),
                                 text=[_alpha(m["alpha"]) for m in told]))
    for group, name, colour in _noisy_groups(_untold(measured), MEASURED_COLOUR):
        fig.add_trace(go.Scatter(x=[m["k"] for m in group], y=[m["speedup_estimate"] for m in group], mode="markers",
                                 name=name, marker=dict(color=colour, symbol="circle-open", size=10),
                                 error_y=_range(group), text=[_alpha(m["alpha"]) for m in group]))
    if k_sweep:
        fig.add_trace(go.Scatter(x=[r["k"] for r in k_sweep], y=[r["speedup_estimate"] for r in k_sweep],  # (= the
                                 mode="lines+markers", name="your last K sweep (measured)", error_y=_range(k_sweep),  # speedup where told)
                                 line=dict(color=MEASURED_COLOUR, dash="dash"),
                                 marker=dict(symbol=["circle" if r["speedup"] else "circle-open" for r in k_sweep], size=9),
                                 text=[_alpha(r["token_acceptance"])
                                       + ("" if r["speedup"] else ", too noisy for one number") for r in k_sweep]))
    target_alone_line(fig)
    return fig.update_layout(title="Speedup calculator", xaxis_title="draft length k", yaxis_title="speedup", **LAYOUT)


@described
def draft_comparison(rows: list[dict]) -> go.Figure:
    """Speedup (bars) and acceptance (diamonds) of each way of drafting for one target."""
    names = [r["variant"] for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    if any(r["speedup"] is not None for r in rows):  # (its legend named bars none of them had)
        fig.add_trace(go.Bar(x=names, y=[r["speedup"] for r in rows], name="speedup (95% interval)",
                             marker_color=COLOURS["bonus"], error_y=_interval(rows)), secondary_y=False)
    for group, name, colour in _noisy_groups(_untold(rows)):  # in the same places, hatched: the estimate and the
        # 95% interval (in the speedup's colour where that interval is clear of 1x, else grey)
        fig.add_trace(go.Bar(x=[r["variant"] for r in group], y=[r["speedup_estimate"] for r in group], name=name,
                             marker=dict(color=colour, opacity=0.45, pattern=dict(shape="/")), error_y=_range(group)),
                      secondary_y=False)
        fig.update_layout(barmode="overlay")
    fig.add_trace(go.Scatter(x=names, y=[r["acceptance_rate"] for r in rows], mode="markers", name=ACCEPTANCE,
                             marker=dict(size=14, symbol="diamond", color=COLOURS["accepted"])), secondary_y=True)
    for r in rows:
        if str(r.get("note") or "").startswith("not run"):  # its empty slot read as a speedup of 0
            fig.add_annotation(x=r["variant"], y=0, yanchor="bottom", text="not run (see its row)", showarrow=False,
                               font=dict(color="#6b7280"))
    target_alone_line(fig, secondary_y=False)
    two_axes(fig, "speedup", "acceptance rate")  # (on a phone, the longer title ran into the chart's)
    return fig.update_layout(title="Draft comparison", **LAYOUT)


def two_axes(fig: go.Figure, left: str, right: str) -> None:
    """A speedup's axis (left, titled in the speedup's blue) and the rates' (right, 0 to 1, in the acceptance's green;
    each the shade that reads 4.5:1 on white), the grid of the left alone: the rates' own lines, their ticks not the
    speedup's, read an acceptance of 0.59 as a speedup of 2 (a visual review)."""
    fig.update_yaxes(title_text=left, title_font_color=UNDERLINES[BONUS][0], secondary_y=False)
    fig.update_yaxes(title_text=right, title_font_color=UNDERLINES[ACCEPTED][0], range=[0, 1.05], showgrid=False,
                     secondary_y=True)


UNTOLD = "speedup, too noisy (estimate, interval)"  # short: a phone shows about 40 characters of a legend line
ONE_SIDE = "speedup clear of 1x, noisy (interval)"  # too noisy for one number, its whole interval faster (or slower)
ACCEPTANCE = "acceptance rate (kept / proposed)"  # the tables' column; not α, the calculator's (kept / (kept + refusals))
ALPHA = "α, per-token acceptance"
PASS_COLOUR = "#7c3aed"  # tokens per target pass (the speedup blue, the acceptance green)


def target_alone_line(fig: go.Figure, **axis) -> None:
    """The dotted line at 1x, named in the legend (unnamed, it read as a mark of the acceptance axis
    beside it; a name on the chart sat on a bar on a phone)."""
    fig.add_hline(y=1.0, line_dash="dot", line_color=ONE_X_COLOUR, **axis)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=TARGET_ALONE,
                             line=dict(dash="dot", color=ONE_X_COLOUR)), **axis)


TARGET_ALONE, ONE_X_COLOUR = "target alone (1x)", "#9ca3af"


def _noisy_groups(untold: list[dict], told_colour: str = COLOURS["bonus"]) -> list[tuple[list[dict], str, str]]:
    """(rows, legend name, colour) of the speedups too noisy for one number: those whose whole range
    lies on one side of 1x (surely faster, or slower: drawn grey they read as the weakest) apart, in
    the colour of the told ones."""
    sided = [r.get("verdict") in ("faster", "slower") for r in untold]  # (a range over too few rounds can be
    # clear of 1x and say nothing: its verdict is "cannot tell")
    groups = (([r for r, s in zip(untold, sided) if s], ONE_SIDE, told_colour),
              ([r for r, s in zip(untold, sided) if not s], UNTOLD, "#9ca3af"))
    return [group for group in groups if group[0]]


def _untold(rows: list[dict]) -> list[dict]:
    """Rows measured whose speedup could not be told (too noisy): they have an estimate and a range."""
    return [r for r in rows if r["speedup"] is None and r.get("speedup_estimate") and r.get("speedup_low") is not None]


def _range(rows: list[dict]) -> dict:
    return dict(type="data", symmetric=False, array=[r["speedup_high"] - r["speedup_estimate"] for r in rows],
                arrayminus=[r["speedup_estimate"] - r["speedup_low"] for r in rows])


def _interval(rows: list[dict]) -> dict:
    """Error bars from each row's measured interval (none where the speedup could not be told)."""
    told = [r["speedup"] is not None for r in rows]
    return dict(type="data", symmetric=False,
                array=[r["speedup_high"] - r["speedup"] if t else 0 for r, t in zip(rows, told)],
                arrayminus=[r["speedup"] - r["speedup_low"] if t else 0 for r, t in zip(rows, told)])
