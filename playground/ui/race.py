"""The race view: both runs of a comparison replayed side by side at their measured pace, so a user
watches speculation finish first. Pure functions of events (no engine, no Gradio)."""
import dataclasses
import html
from dataclasses import dataclass

from playground.events import Prefill, Round
from playground.metrics import counted, first_tokens, pooled_ratio

REPLAY_S = 8.0  # the slower run replays in about this long, whatever it measured
FRAME_S = 0.05  # one frame of the replay every 50 ms, fewer for long texts:
REPLAY_CHARS = 300_000  # about the most text one replay sends (each frame sends both lanes' text so far:
# 2,048 tokens a lane sent 1.7 MB in 8 s at 50 ms)


@dataclass(frozen=True, slots=True)
class Lane:
    name: str
    ends: list[float]  # engine seconds at the end of each round, prefill included
    pieces: list[str]  # the text each round added (the text so far after each: the output's length squared, kept per session)
    tokens: int  # tokens written in all
    prefill: float = 0.0  # engine seconds before the first round (counted in ends[0] too)
    counts: tuple[int, ...] = ()  # tokens each round wrote
    stopped: bool = False  # Stop ended it (the two runs are cut at different points)

    def parts(self) -> list[tuple[float, int]]:
        """(seconds, tokens) of its prefill and of each round (one part for its rounds where their
        counts are not kept), as playground.measure.speedup times a run."""
        if len(self.counts) != len(self.ends):
            return [(self.prefill, 0), (self.total - self.prefill, self.tokens)]
        return [(self.prefill, 0)] + [(end - start, n) for start, end, n in zip([self.prefill, *self.ends], self.ends, self.counts)]

    def at(self, t: float) -> tuple[str, int]:
        """-> (text, rounds finished) at engine time t."""
        done = sum(end <= t for end in self.ends)
        return "".join(self.pieces[:done]), done

    @property
    def length(self) -> int:
        return sum(map(len, self.pieces))

    @property
    def total(self) -> float:
        return self.ends[-1] if self.ends else 0.0


def lane(name: str, events: list) -> Lane:
    """Events -> a lane: the cumulative engine time (metrics.engine_seconds' clock) at each round's end."""
    t = prefill = sum(e.target_s + e.draft_s for e in events if isinstance(e, Prefill))
    ends, pieces, counts = [], [], []
    for e in events:
        if isinstance(e, Round):
            t += e.wall_s
            ends.append(t)
            pieces.append("".join(tok.text for tok in e.committed))
            counts.append(len(e.committed))
    return Lane(name, ends, pieces, sum(counts), prefill, tuple(counts))


def lanes(events: list, baseline_events: list, stopped: bool = False) -> list[Lane] | None:
    """The two lanes of a comparison that ended (`stopped`: by Stop), or None when there is nothing to race."""
    spec, base = lane("speculative", events), lane("target alone", baseline_events)
    if stopped:
        spec, base = (dataclasses.replace(ln, stopped=True) for ln in (spec, base))
    return [spec, base] if spec.ends and base.ends else None


def note_html(message: str) -> str:
    """The view's words where there is no race to draw."""
    return f'<div class="race" id="race"><p class="race-note">{html.escape(message)}</p></div>'


def ended_html(race: list[Lane]) -> str:
    """Both lanes as they ended, drawn when the run ends (the view showed the last run's race until it was
    selected again); Replay plays them at their pace."""
    return frame_html(race, max(ln.total for ln in race), None)


def replay_times(race: list[Lane]) -> tuple[list[float], float]:
    """-> (engine times of the frames, slow-down factor): the slower lane lasts about REPLAY_S."""
    slowest = max(lane.total for lane in race)
    scale = REPLAY_S / slowest if slowest > 0 else 1.0  # replay seconds per engine second
    frame_s = frame_seconds(race)
    frames = int(slowest * scale / frame_s) + 1
    return [min(slowest, i * frame_s / scale) for i in range(frames + 1)], scale


def frame_seconds(race: list[Lane]) -> float:
    """Replay seconds between frames: FRAME_S, longer where the frames (about half the texts each, on
    average) would send more than REPLAY_CHARS in all."""
    return max(FRAME_S, REPLAY_S * sum(ln.length for ln in race) / 2 / REPLAY_CHARS)


def frame_html(race: list[Lane], t: float, scale: float | None) -> str:
    """Both lanes as they stood at engine time t, replayed `scale` replay seconds per engine second
    (None: not replayed, as they ended): text so far, a bar of tokens, and the finish time."""
    cards = []
    for ln in race:
        text, done = ln.at(t)
        finished = done == len(ln.ends)
        share = len(text) / max(1, ln.length)
        rate = f", {counted(ln.tokens)}, {ln.tokens / ln.total:.1f} tokens/s" if ln.tokens and ln.total > 0 else ""
        status = (f"{'stopped at' if ln.stopped else 'finished in'} {ln.total:.2f} s{rate}" if finished else f"{t:.2f} s")
        cards.append(f'<div class="race-lane" data-finished="{str(finished).lower()}">'
                     f'<div class="race-head"><b>{html.escape(ln.name)}</b><span>{status}</span></div>'
                     f'<div class="race-bar"><i style="width:{100 * share:.1f}%"></i></div>'
                     f'<pre class="race-text">\n{html.escape(text)}</pre></div>')  # HTML drops a newline after <pre>
    pace = ("as they ended (Replay the race plays them at their measured pace)" if scale is None else
            "replayed in real time" if abs(scale - 1) < 0.01 else
            f"replayed slowed down to be watched: 1 s of the runs lasts {scale:.1f} s here" if scale > 1 else
            f"replayed sped up: 1 s of the runs lasts {scale:.2f} s here")  # (both lanes alike)
    note = f"{pace}; the comparison's first measurement (the speedup card pools all of them)"
    counts = {ln.tokens for ln in race}
    if len(counts) > 1 and any(ln.stopped for ln in race):  # cut by Stop, each where it stood
        note += ("; stopped: each run where it stood, " + " and ".join(counted(ln.tokens) for ln in race)
                 + " (the line at the end costs the target alone at speculation's length)")
    elif len(counts) > 1:  # sampled: the two texts differ, so do their lengths
        note += ("; the runs wrote different texts, " + " and ".join(counted(ln.tokens) for ln in race)
                 + ": who finishes first says little (the line at the end costs the target alone at speculation's length)")
    return (f'<div class="race" id="race"><small>{html.escape(note)}</small><div class="race-lanes">{"".join(cards)}</div>'
            f'{_outcome(race, t)}</div>')


def _outcome(race: list[Lane], t: float) -> str:
    """Once both lanes have finished: this measurement's own ratio, said apart from the card's (a
    replay ending 1.14x beside a card saying 'about 1.66x' read as a contradiction)."""
    if len(race) != 2 or any(ln.at(t)[1] < len(ln.ends) or not (ln.tokens and ln.total > 0) for ln in race):
        return ""
    spec, base = race
    ratio = pooled_ratio([(spec.total, spec.tokens)], first_tokens(base.parts(), spec.tokens))
    why = "stopped" if spec.stopped else "the texts differ"
    alone = ("the target alone" if spec.tokens == base.tokens else
             f"the target alone wrote its first {counted(spec.tokens)} ({why})" if base.tokens > spec.tokens else
             f"the target alone would write its {counted(spec.tokens)} (its prefill, then its own time per token: {why})")
    return (f'<p class="race-outcome">This measurement alone: speculation <b>{ratio:.2f}x</b> as fast as '
            f"{alone}. The speedup card pools every measurement of the comparison, so it may differ: "
            "one measurement on a busy machine varies.</p>")


CSS = """
.race-lanes { display: flex; gap: 10px; } .race-lane { flex: 1; min-width: 0; }
@media (max-width: 640px) { .race-lanes { flex-direction: column; } }  /* a phone: one lane above the other (side by
   side, each 145 px wide broke code mid-name on every line; a visual review) */
.race-head { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 0 8px; font-size: 14px; }
.race-outcome, .race-note { margin: 8px 0 0; font-size: 14px; }
.race-bar { height: 6px; background: #e5e7eb; border-radius: 3px; margin: 4px 0; }
.race-bar i { display: block; height: 100%; background: #2563eb; border-radius: 3px; }
.race-lane[data-finished="true"] .race-bar i { background: #16a34a; }
.race-text { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; white-space: pre-wrap;
             word-break: break-word; max-height: 320px; overflow-y: auto; margin: 0; }
"""
