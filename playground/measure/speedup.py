"""The one measurement of speculation against the target alone: the page, the sweeps, Compare
drafts, the calculator's points, the CLI and bench all take their speedup from here.

A block is one run of each on the same prompt(s) in one process, interleaved round by round: after
each speculative round the target alone catches up to the same number of tokens, so a change of
load hits both alike. Times are the engine's own (prefill plus each round's wall time): what the
caller does between rounds (rendering, streaming) never counts.

    speedup  R = (target-alone seconds for the speculative side's tokens) / (speculative seconds), all
             blocks pooled: the target alone timed up to as many tokens as speculation wrote on each
             prompt where it wrote more (what it wrote after ran alone, at longer contexts), else its
             prefill once plus its decoding seconds per token times the speculative side's tokens.
             Sides of one length (greedy) give (base s / base tokens) / (spec s / spec tokens);
             sampled sides that end at other lengths (EOS, Stop) would spread their prefills over
             other counts that way (1.0 s prefills, 10 tokens at 0.05 s against 100 at 0.1 s: 0.73x,
             where writing those 10 tokens took 1.33x longer alone)
    interval one block: a bootstrap over its rounds (2.5th-97.5th percentile of 400 resamples, fixed
             seed); several blocks: that, widened to the range of the blocks' own estimates
    verdict  an interval wider than TOLERANCE (high / low), fewer than MIN_TOKENS tokens or fewer than
             MIN_ROUNDS rounds on a side (a bootstrap over one round has no width: an output the
             constraint forced whole is one round; a side timed as whole runs: MIN_WHOLE_RUNS runs), or an interval wholly above the most the passes
             allow, or an estimate above it: measure another block, up to MAX_BLOCKS; still so: no number,
             and the reason says why
    bound    R <= (spec tokens per target pass) / (target-alone tokens per target pass): a verify pass
             reads the same weights as a pass of the target alone and is at least as wide, and a
             round adds the draft's time, so no round can beat the passes it saves. With SLACK: a
             few tokens' verify pass can cost less than one token's (SmolLM2 in bf16 on a 2-core
             AVX512-BF16 CPU: 5 tokens 39.84 ms, one 43.86 ms; BENCHMARKS.md), so a near-free draft's
             round can pass the bound by 1.1x; on a GPU a pass costs nearly the same at any width, and
             where speculation is not fused (prompt lookup, cascades) its passes without a guess are 1
             wide while the fused target alone's are k+1. An
             interval wholly above SLACK x the bound is most likely the machine's load hitting the
             target alone harder; an interval's top past it is cut there (a newcomer saw "faster,
             1.12-3.39x" beside 2.00 tokens a target pass).

Callers with opaque runs (bench's transformers rows) build their blocks from `Timed` parts
themselves: a whole run is then one part."""
import dataclasses
import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from playground import session
from playground.config import MAX_SEED
from playground.events import Prefill, Round
from playground.metrics import OTHER_LENGTHS, counted, first_tokens, pooled_ratio, rates_differ, speedup_verdict

TOLERANCE = 1.25  # high / low: about +-11% around the estimate
MAX_BLOCKS = 4
MIN_TOKENS = 16
MIN_ROUNDS = 8  # on each side, all blocks pooled: fewer say little of how much the ratio varies
MIN_WHOLE_RUNS = 6  # a side timed as whole runs (bench's transformers rows: one sample a run), all blocks pooled:
# the range of 6 runs' ratios holds their median 97% of the time (1 - 2 / 2^6); 2 runs gave 0.96-1.09x,
# 1.06-1.08x and 1.08-1.11x for one setting
RESAMPLES = 400
ONE_MEASUREMENT = ("from one interleaved measurement: its interval says how its rounds varied, not how runs differ (a "
                   "review's two identical benches under load gave 1.05x and 1.27x, their intervals apart)")
SLACK = 1.2  # on the bound (see above)


@dataclass(slots=True)
class Timed:
    """One run's time as parts: (seconds, tokens) of its prefill (0 tokens) and of each round."""
    parts: list[tuple[float, int]] = field(default_factory=list)
    whole_runs: bool = False  # each part a whole run (bench's transformers rows), not a round

    @property
    def seconds(self) -> float:
        return sum(s for s, _ in self.parts)

    @property
    def tokens(self) -> int:
        return sum(n for _, n in self.parts)


def timed(events: list) -> Timed:
    """Engine events -> their engine time: the prefill's passes, then each round's wall time."""
    parts = [(e.target_s + e.draft_s, 0) for e in events if isinstance(e, Prefill)]
    return Timed(parts + [(e.wall_s, len(e.committed)) for e in events if isinstance(e, Round)])


@dataclass(slots=True)
class Block:
    """One interleaved measurement: the times of both sides, and their events per prompt (callers
    take the outputs and statistics from them)."""
    spec: Timed
    base: Timed
    spec_runs: list[list] = field(default_factory=list)
    base_runs: list[list] = field(default_factory=list)
    guides: list = field(default_factory=list)  # the speculative runs' constraint guides (None: unconstrained)

    def ratio(self) -> float:
        return pooled_ratio(self.spec.parts, self.base.parts)

    def add(self, spec_events: list, base_events: list, guide=None) -> None:
        """One prompt's runs; the target alone timed up to the speculative side's tokens where it wrote
        more (its rounds past them ran after speculation ended, not interleaved, at longer contexts)."""
        spec = timed(spec_events)
        self.spec.parts += spec.parts
        self.base.parts += first_tokens(timed(base_events).parts, spec.tokens)
        self.spec_runs.append(spec_events)
        self.base_runs.append(base_events)
        self.guides.append(guide)


@dataclass(slots=True)
class Speedup:
    """A measured speedup: `speedup` None when it cannot tell (`reason` says why); `estimate` is
    the point estimate either way."""
    speedup: float | None
    estimate: float
    low: float
    high: float
    blocks: int
    reason: str = ""
    spec_tokens_per_s: float = 0.0
    base_tokens_per_s: float = 0.0
    side: str = ""  # too noisy, yet its whole range on one side of 1x: "faster" or "slower"
    more: bool = False  # measuring() measures another block after this estimate
    top_cut: bool = False  # the interval's top cut at the most its passes allow (SLACK times it)

    @property
    def interval(self) -> str:
        """What low-high is, in words: the 95% bootstrap interval, widened to hold each measurement's own ratio
        where there are several, its top cut where it passed the most its target passes allow."""
        return ("95% interval" + ", widened to each measurement's own ratio" * (self.blocks > 1)
                + ", its top cut at the most its passes allow" * self.top_cut)

    @property
    def caveat(self) -> str:
        """ONE_MEASUREMENT where a number is told from one block (a row or a report beside it says so), else ''."""
        return ONE_MEASUREMENT if self.blocks == 1 and self.speedup is not None else ""

    @property
    def noisy(self) -> bool:
        return self.speedup is None

    @property
    def other_lengths(self) -> str:
        """metrics.OTHER_LENGTHS where the tokens/s beside it do not divide to it, else ''."""
        return OTHER_LENGTHS if rates_differ(self.spec_tokens_per_s, self.base_tokens_per_s, self.estimate) else ""

    @property
    def verdict(self) -> str:
        """metrics.speedup_verdict of this measurement."""
        return speedup_verdict(self.speedup, self.low, self.high, self.side)

    def as_dict(self) -> dict:
        """For JSON (the download, /generate, the CLI): its fields, `other_lengths` (why its two tokens/s
        do not divide to it, or ''), which a caller dividing them would otherwise not be told, `interval`
        (what low-high is, in words) and `caveat` (a number from one measurement, or ''); not `more`,
        measuring's own step."""
        return ({key: value for key, value in asdict(self).items() if key != "more"}
                | {"other_lengths": self.other_lengths, "interval": self.interval, "caveat": self.caveat})


def estimate(blocks: list[Block]) -> Speedup:
    """The pooled ratio of these blocks, its interval, and whether it is tight enough to give."""
    spec = [p for b in blocks for p in b.spec.parts]
    base = [p for b in blocks for p in b.base.parts]
    value = pooled_ratio(spec, base)
    low, high = _bootstrap(blocks)
    ratios = [b.ratio() for b in blocks] if len(blocks) > 1 else []
    low, high = min(low, value, *ratios), max(high, value, *ratios)
    tokens = min(sum(n for _, n in spec), sum(n for _, n in base))
    rounds, runs = fewest_rounds(blocks), fewest_whole_runs(blocks)
    reason, side, bound, cut = "", "", most_possible(blocks), False
    ceiling = SLACK * bound
    if tokens < MIN_TOKENS:
        reason = f"only {counted(tokens)} on a side, too few to time"  # (a stopped run's
        # target alone can have fewer than its speculation)
    elif rounds < MIN_ROUNDS:
        reason = f"only {rounds} round{'s' * (rounds != 1)} on a side, too few to tell how much the ratio varies"
    elif runs < MIN_WHOLE_RUNS:
        reason = (f"only {counted(runs, 'whole run')} on a side timed run by run (one sample each), too few to tell "
                  f"how much the ratio varies (more prompts or measurements give more)")
    elif value > ceiling:
        where = f"its {low:.2f}-{high:.2f}x lies wholly" if low > ceiling else "its estimate lies"  # (views add it)
        reason = (f"{where} above {bound:.2f}x, about the most its target passes allow "
                  "(a verify pass costs about a pass of the target alone): perhaps the machine's other load "
                  "slowed the target alone more")
    elif not low or high / low > TOLERANCE:
        cut, high = high > ceiling, min(high, ceiling)  # (see the bound: 1.12-3.39x was shown at 2 tokens a pass)
        interval = f"its 95% interval, {low:.2f}-{high:.2f}x" + (" (its top cut there, the most its passes allow)" * cut)
        spread = (f"{interval}, over {len(blocks)} interleaved measurements" + " (each one's own ratio inside it)" * (not cut)
                  if len(blocks) > 1  # (not a min-max: one more measurement can narrow it)
                  else f"{interval}, from one interleaved measurement")  # (its rounds resampled)
        reason = f"{spread} (the machine's other load, or rounds that differ; longer runs usually narrow it)"
        side = "faster" if low > 1 else "slower" if high < 1 else ""
    else:
        cut, high = high > ceiling, min(high, ceiling)  # (said in `interval`: 2.27-2.46x was shown as 2.27-2.40x)
    return Speedup(None if reason else value, value, low, high, len(blocks), reason,
                   _rate(spec), _rate(base), side, top_cut=cut)


def most_possible(blocks: list[Block]) -> float:
    """The bound above: (spec tokens / target passes) / (target-alone tokens / target passes), rounds
    pooled over blocks; infinite where a side has no rounds (whole runs timed as one part)."""
    def per_pass(runs) -> float:
        rounds = [e for events in runs for e in events if isinstance(e, Round)]
        passes = sum(e.target_passes for e in rounds)
        return sum(len(e.committed) for e in rounds) / passes if passes else 0.0
    spec, base = per_pass(r for b in blocks for r in b.spec_runs), per_pass(r for b in blocks for r in b.base_runs)
    return spec / base if spec and base else float("inf")


def fewest_rounds(blocks: list[Block]) -> int:
    """The rounds of the side with fewer, pooled over blocks (sides timed as whole runs not counted)."""
    return _fewest_parts(blocks, whole_runs=False, default=MIN_ROUNDS)


def fewest_whole_runs(blocks: list[Block]) -> int:
    """The runs of the side with fewer among sides timed as whole runs, pooled over blocks (MIN_WHOLE_RUNS
    where no side is: nothing to hold to it)."""
    return _fewest_parts(blocks, whole_runs=True, default=MIN_WHOLE_RUNS)


def _fewest_parts(blocks: list[Block], whole_runs: bool, default: int) -> int:
    sides = ([b.spec for b in blocks], [b.base for b in blocks])
    counts = [sum(n > 0 for t in side for _, n in t.parts) for side in sides if any(t.whole_runs for t in side) == whole_runs]
    return min(counts, default=default)


def measure(block: Callable[[], Block] | None, first: list[Block] = (), min_blocks: int = 1,
            max_blocks: int = MAX_BLOCKS, should_stop: Callable[[], bool] = lambda: False) -> Speedup:
    """The final estimate of `measuring`."""
    result = None
    for result in measuring(block, first, min_blocks, max_blocks, should_stop):
        pass
    return result


def measuring(block: Callable[[], Block] | None, first: list[Block] = (), min_blocks: int = 1,
              max_blocks: int = MAX_BLOCKS, should_stop: Callable[[], bool] = lambda: False) -> Iterator[Speedup]:
    """Measure blocks until the estimate is tight (at least `min_blocks`, at most `max_blocks`,
    `first` counted), yielding the estimate after each (below `min_blocks` too, `more` set: a page shows
    it while the next is measured); `block()` measures one more (None: only `first`). The last estimate
    yielded is the result. Once `should_stop()` (Stop, Ctrl-C, a run waiting) no block starts, and one
    it cut short is not counted: the estimate before it stands, whatever min_blocks asked (a sampled
    run stopped before its second draw yielded nothing, and the page and the CLI failed on it)."""
    blocks = list(first)
    while True:
        if blocks:
            result = estimate(blocks)
            short = (fewest_rounds(blocks) * max_blocks < MIN_ROUNDS * len(blocks)  # at this pace, never enough
                     or fewest_whole_runs(blocks) * max_blocks < MIN_WHOLE_RUNS * len(blocks))
            done = len(blocks) >= min_blocks and (result.speedup is not None or short)
            result.more = not (done or len(blocks) >= max_blocks or block is None)
            yield result
            if not result.more:
                return
        if should_stop():
            return
        blocks.append(block())
        if should_stop():  # (the block this cut short)
            return


def interleave(spec: Iterator, base: Iterator, rest: bool = True) -> Iterator[tuple[str, object]]:
    """Two event streams stepped side by side: each speculative event, then target-alone events
    until it has as many tokens; -> ("spec" | "base", event) in that order, the rest of the target
    alone's at the end (with `rest`; without, it stops where speculation ended)."""
    counts = {"spec": 0, "base": 0}
    base_done = False
    for event in spec:
        counts["spec"] += _tokens(event)
        yield "spec", event
        while not base_done and counts["base"] < counts["spec"]:
            event = next(base, None)
            if event is None:
                base_done = True
                break
            counts["base"] += _tokens(event)
            yield "base", event
    if rest and not base_done:
        for event in base:
            yield "base", event


def drawn(cfg, block: int):
    """The settings of a block's runs: sampled, each block draws with its own seed (the run's seed plus
    the block's number, 0 the first), so blocks differ as draws do and the interval covers how much the
    ratio varies with what was drawn (one seed for all timed one text again and again: two seeds of one
    setting gave 0.89-1.13x and 1.25-1.53x, README); greedy, the same settings."""
    if cfg.sampling.greedy:
        return cfg
    return dataclasses.replace(cfg, seed=(cfg.seed + block) % (MAX_SEED + 1))


def least_blocks(cfg, prompts: int = 1) -> int:
    """Blocks measured before an estimate may be told: sampled on one prompt, two (two draws: one block's
    bootstrap over its rounds says how the machine varied, not what another seed draws; one draw told
    1.22x where another of the same setting measured 0.89-1.13x, README); else one (greedy texts do
    not change, and several prompts draw several texts in one block)."""
    return 2 if not cfg.sampling.greedy and prompts < 2 else 1


def engine_block(pair, prompts: list[list[int]], cfg, constraint=None, warm: bool = True,
                 should_stop: Callable[[], bool] = lambda: False, whole_base: bool = False,
                 first_block: int = 0) -> Callable[[], Block]:
    """A maker of blocks: each prompt's speculative run and the target alone, interleaved round by
    round, one prompt after the other (runs never hold the models' caches at once). With `warm`,
    both run once until the speculative side has written WARM_TOKENS, so one-time costs stay out of
    every block (with the run's own settings: a compiled run's cache size follows its max new tokens,
    and a shorter warm-up compiled graphs and kept a cache of a size the blocks never use). Once
    `should_stop()` is true a block ends where it is (callers do not count a block cut short). The
    target alone stops once it has as many tokens as speculation wrote (Block.add times no more of it;
    a sampled draw that runs on past them took its own time at every point of a temperature sweep),
    or with `whole_base` runs to its own end (the CLI shows its text). Sampled, the blocks made draw as
    blocks `first_block`, `first_block` + 1, ... (`drawn`; the page's first block is its streamed run)."""
    numbers = itertools.count(first_block)  # each block's number as it is made (drawn)

    def run(block: Block, ids: list[int], most: int | None = None, cfg=cfg) -> None:  # most: speculative tokens, then end
        guides = [session.new_guide(constraint, cfg) for _ in range(2)]
        spec, base = (session.generate(pair, ids, cfg, side, guide) for side, guide in zip((True, False), guides))
        seen, written = {"spec": [], "base": []}, 0
        for side, event in interleave(spec, base, rest=whole_base):
            if should_stop() or (most is not None and written >= most):
                break
            seen[side].append(event)
            written += _tokens(event) if side == "spec" else 0
        spec.close(), base.close()
        block.add(seen["spec"], seen["base"], guides[0])

    def block() -> Block:
        made, block_cfg = Block(Timed(), Timed()), drawn(cfg, next(numbers))
        for ids in prompts:
            if should_stop():
                break
            run(made, ids, cfg=block_cfg)
        return made
    if warm and prompts:
        run(Block(Timed(), Timed()), prompts[0], WARM_TOKENS)
    return block


WARM_TOKENS = 4  # a warm-up's speculative side (the target alone beside it as far)


def _tokens(event) -> int:
    return len(event.committed) if isinstance(event, Round) else 0


def _rate(parts: list[tuple[float, int]]) -> float:
    seconds = sum(s for s, _ in parts)
    return sum(n for _, n in parts) / seconds if seconds else 0.0


def _bootstrap(blocks: list[Block]) -> tuple[float, float]:
    """2.5th and 97.5th percentiles of the pooled ratio with each block's rounds resampled (its
    prefill kept), speculative and target-alone independently."""
    rng = random.Random(0)
    fixed = [[p for p in b.spec.parts if p[1] == 0] for b in blocks], [[p for p in b.base.parts if p[1] == 0] for b in blocks]
    rounds = [[p for p in b.spec.parts if p[1]] for b in blocks], [[p for p in b.base.parts if p[1]] for b in blocks]
    if not all(rounds[0]) or not all(rounds[1]):
        return 0.0, 0.0
    ratios = []
    for _ in range(RESAMPLES):
        sides = [[p for f, r in zip(fixed[i], rounds[i]) for p in f + rng.choices(r, k=len(r))] for i in (0, 1)]
        ratios.append(pooled_ratio(*sides))
    ratios.sort()
    return ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]


