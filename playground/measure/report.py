"""Speedups and bench's rows as people read them: one line per row while it runs, a Markdown table, and the
files --out writes (rows.json, table.md, a plotly chart)."""
import json
import os
import pathlib

from playground.metrics import speedup_said


def label(row: dict) -> str:
    """The method, with its tree's shape for an engine-tree row (whose k is not used), its threshold for an
    engine-confidence row."""
    if row.get("tree"):
        return f"{row['method']} {row['tree']}"
    return f"{row['method']} {row['confidence']:g}" if row.get("confidence") is not None else row["method"]


def k_cell(row: dict) -> str:
    """The row's k, or '-' where it drafts none with it (the target alone, a tree): a bench showed k=2
    and k=4 beside the target alone's rows."""
    return "-" if row["method"] in ("target", "hf-target") or row.get("tree") else str(row["k"])


def verdict(row: dict) -> str:
    """A row's speedup in metrics.speedup_said's words (the row's note says why one is too noisy)."""
    if row["method"] == "target":
        return "1.00x (the baseline)"
    one = ", one measurement" if row.get("measurements") == 1 and row["speedup"] is not None else ""
    return speedup_said(row["speedup"], *row["speedup_range"], row.get("side", "")) + one


LOAD_CHANGED = 1.1  # an efficiency past it: the row's passes ran faster than the target alone's beside it (load changed)


def alone_beside(row: dict) -> str:
    """The target alone's tok/s measured beside the row, its speedup's baseline ('' for the pooled
    target row): tok/s of rows measured minutes apart are not comparable on a loaded machine (a review
    read transformers as 5x faster than the engine: its row's target alone ran 4x faster too)."""
    return "" if row.get("baseline_tokens_per_s") is None or row["method"] == "target" else f"{row['baseline_tokens_per_s']:.1f}"


def efficiency_cell(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.2f}" + (" (load changed: not a real efficiency)" if value > LOAD_CHANGED else "")


def row_line(row: dict) -> str:
    beside = f" (alone beside it {alone_beside(row)})" if alone_beside(row) else ""
    parts = [f"{label(row):>20} k={k_cell(row):<2} T={row['temperature']:<4} {row['tokens_per_s']:8.1f} tok/s{beside}",
             verdict(row)]
    for key, fmt in (("acceptance_rate", "acc {:.2f}"), ("tokens_per_target_pass", "{:.2f} tok/pass"),
                     ("identical", "identical {}")):
        if row.get(key) is not None:
            parts.append(fmt.format(row[key]))
    if row.get("efficiency") is not None:
        parts.append(f"eff {efficiency_cell(row['efficiency'])}")
    if row["speedup"] is None:
        parts.append(f"-- no single number: {row['note']}")
    return "  ".join(parts)


def markdown_table(rows: list[dict]) -> str:
    head = ("| method | k | T | tokens/s | the target alone beside it, tokens/s | speedup over the target alone run "
            "beside it (95% interval; too noisy for one number: its side and interval) | acceptance | tokens/pass | "
            "efficiency (its rounds' measured pass costs / their time, over the target alone's beside it) | identical |\n|---|---|---|---|---|---|---|---|---|---|\n")
    cell = lambda v, f: "" if v is None else f.format(v)  # noqa: E731
    return head + "".join(
        f"| {label(r)} | {k_cell(r)} | {r['temperature']} | {r['tokens_per_s']:.1f} | {alone_beside(r)} | "
        f"{_table_verdict(r)} | "
        f"{cell(r['acceptance_rate'], '{:.2f}')} | {r['tokens_per_target_pass']:.2f} | {efficiency_cell(r.get('efficiency'))} | "
        f"{cell(r.get('identical'), '{}')} |\n" for r in rows)


def _table_verdict(row: dict) -> str:
    """verdict(), with the interval of a row too noisy to tell on either side ('cannot tell' alone lost
    it: the table has no note column)."""
    low, high = row["speedup_range"]
    unsided = row["method"] != "target" and row["speedup"] is None and not row.get("side") and low > 0
    return verdict(row) + (f", {low:.2f}-{high:.2f}x" if unsided else "")


OWN_FILES = ("machine.json", "rows.json", "table.md", "speedup.html", "speedup.png")  # what a bench writes in --out


def others_files(out: pathlib.Path) -> list[str]:
    """The names of a bench's files in `out` that no bench wrote: with no machine.json of one beside
    them (a bench writes it first), they are the user's, and a bench would have removed them (a
    speedup.png of the user's went, and a host without kaleido writes none in its place)."""
    present = [name for name in OWN_FILES if (out / name).is_file()]
    try:
        ours = isinstance(json.loads((out / "machine.json").read_text()), dict)
    except (OSError, ValueError):
        ours = False
    return [] if ours else present


def clear_earlier(out: pathlib.Path) -> list[str]:
    """Remove an earlier bench's files from `out` before this one writes there (-> their names): a bench
    stopped before its chart left the last one's chart beside its own rows, its machine.json beside the
    last one's rows before its first."""
    earlier = [name for name in OWN_FILES if (out / name).is_file()]
    for path in [out / name for name in earlier] + [out / f"{name}.partial" for name in OWN_FILES]:
        path.unlink(missing_ok=True)  # (and what a write cut short left)
    return earlier


def write_machine(machine: dict, out: pathlib.Path) -> None:
    """machine.json: what the rows beside it were measured on (playground.measure.machine)."""
    out.mkdir(parents=True, exist_ok=True)
    _replace(out / "machine.json", json.dumps(machine, indent=1))


def _replace(path: pathlib.Path, text: str) -> None:
    """The file written whole or not at all (a bench stopped while writing left half a rows.json)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def write_rows(rows: list[dict], out: pathlib.Path, title: str) -> None:
    """rows.json and table.md as they stand (rewritten after every row, so a long bench leaves what
    it measured even when stopped)."""
    out.mkdir(parents=True, exist_ok=True)
    _replace(out / "rows.json", json.dumps(rows, indent=1))
    _replace(out / "table.md", f"# {title}\n\n" + markdown_table(rows))


def _trace(go, rows: list[dict], name: str):
    """One method's points at their estimate with the 95% interval as error bars, open where too noisy
    for one number (as the page draws them; their speedup None, they were left out of the line)."""
    y = [r["speedup_estimate"] for r in rows]
    return go.Scatter(x=[r["k"] for r in rows], y=y, mode="lines+markers", name=name,
                      marker={"symbol": ["circle" if r["speedup"] is not None else "circle-open" for r in rows], "size": 9},
                      error_y={"type": "data", "array": [r["speedup_range"][1] - v for r, v in zip(rows, y)],
                               "arrayminus": [v - r["speedup_range"][0] for r, v in zip(rows, y)]})


def write_outputs(rows: list[dict], out: pathlib.Path, title: str, log=print) -> list[pathlib.Path]:
    """rows.json, table.md and a plotly chart (HTML; PNG too when kaleido and a browser are there)."""
    import plotly.graph_objects as go
    write_rows(rows, out, title)
    fig = go.Figure()
    for method in dict.fromkeys(r["method"] for r in rows):
        for temperature in dict.fromkeys(r["temperature"] for r in rows):
            mine = [r for r in rows if r["method"] == method and r["temperature"] == temperature]
            if mine:  # (a method not measured at a temperature: no empty legend entry)
                fig.add_trace(_trace(go, mine, f"{label(mine[0])} T={temperature}"))
    fig.update_layout(title=title, xaxis_title="k", yaxis_title="speedup over target-only (95% interval; open: too noisy "
                      "for one number)", template="plotly_white")
    written = [out / "rows.json", out / "table.md", out / "speedup.html"]
    fig.write_html(out / "speedup.html", include_plotlyjs=True)  # plotly.js inside: the chart works offline
    try:
        fig.write_image(out / "speedup.png", width=900, height=500)
        written.append(out / "speedup.png")
    except Exception as exc:  # kaleido or its browser missing: the HTML chart is there
        reason = " ".join(str(exc).split())[:160] or "kaleido could not render it here"
        log(f"(no PNG chart: {reason}; speedup.html has the chart)")
    return written
