"""Run statistics, computed from the engine's events alone (no engine import); a speculative run set beside
the target alone: its speedup's JSON, whether the two texts are identical and where they first differ; the
theory's formulas (tokens per round, speedup at an acceptance and a cost ratio)."""
from playground.events import FORCED, STOPPED, Prefill, Round


def summarize(events: list) -> dict:
    """Events of one run (a Prefill, then Rounds) -> the stats of the CLI contract; `wall_s` is the
    engine's time (engine_seconds: the prompt pass and each round's own, whoever reads the run: the
    CLI's loop, the page, a sweep). Runs joined (a sweep's measurements) count each run's prompt pass:
    counting the first alone gave a sweep more tokens per target pass than each of its runs had."""
    wall_s = engine_seconds(events)
    prefills = [e for e in events if isinstance(e, Prefill)]
    prompt_s = prompt_seconds(events)
    rounds = [e for e in events if isinstance(e, Round)]
    generated = sum(len(r.committed) for r in rounds)
    forced = sum(t.kind == FORCED for r in rounds for t in r.tokens)
    verified = [r for r in rounds if r.target_passes]  # rounds of drafting and verifying (not only forced tokens)
    proposed = sum(r.guesses for r in rounds)  # a draft the constraint allowed alone is forced,
    accepted = sum(r.kept_guesses for r in rounds)  # neither guessed nor judged
    rejections = sum(r.refused for r in rounds)  # (a tree's proposed counts its every node: not accepted < proposed)
    target_passes = sum(r.target_passes for r in rounds) + sum(p.target_passes for p in prefills)
    draft_passes = sum(r.draft_passes for r in rounds) + sum(p.draft_passes for p in prefills)
    return {
        "rounds": len(rounds),
        "target_passes": target_passes,
        "draft_passes": draft_passes,
        "proposed": proposed,
        "accepted": accepted,
        "acceptance_rate": _rate(accepted, proposed),  # null where nothing was drafted (0.0 read as every
        "token_acceptance": _rate(accepted, accepted + rejections),  # guess refused; the page said n/a)
        "mean_accepted_per_round": _per_round(accepted, verified),
        "rounds_without_guesses": sum(not r.guesses for r in verified),  # a lookup with no match, a paused or unsure draft
        "looked_up": sum(r.looked_up for r in rounds),  # a cascade's: prompt lookup's guesses the draft model checked,
        "lookup_kept": sum(r.lookup_kept for r in rounds),  # and those it kept (0 and 0 for any other way of drafting)
        "tokens_per_target_pass": _ratio(generated, target_passes),
        "tokens_per_round": _per_round(generated - forced, verified),  # what verification wrote: the theory's measure
        "theory_tokens_per_round": None if any(e.tree for e in prefills + verified) else _per_round(
            sum(expected_tokens_per_round(_ratio(accepted, accepted + rejections), r.guesses) for r in verified),
            verified),  # a chain's, each round at the guesses it drafted (the last ones draft fewer, within
        # the token budget: at k=5 and 32 tokens, 5.33 of 6.00 even at α = 1; a confidence stop or a lookup that
        # finds nothing drafts fewer than k: at k = 8, 21 guesses over 43 rounds read 8.21 against 1.49); a tree's
        # has no such formula
        "generated_tokens": generated,
        "forced": forced,
        "wall_s": wall_s,
        "tokens_per_s": _ratio(generated, wall_s),
        "prompt_s": prompt_s,  # the prompt pass of both models, inside wall_s: 1.5 s of a long prompt's 1.8 s made
        "decode_tokens_per_s": _ratio(generated, wall_s - prompt_s),  # 33 tok/s of writing read as 4.5 (a CLI review)
        "draft_s": sum(r.draft_s for r in rounds) + sum(p.draft_s for p in prefills),
        "target_s": sum(r.target_s for r in rounds) + sum(p.target_s for p in prefills),
    }


def lookup_level(stats: dict) -> str:
    """A cascade's first level (stats with looked_up > 0): how much of its drafting prompt lookup did."""
    offered, kept = stats["looked_up"], stats["lookup_kept"]
    return (f"prompt lookup offered the draft model {offered} guess{'es' * (offered != 1)} and it kept {kept} "
            f"({kept / offered:.0%}; each one kept, a draft step not taken)")


def expected_tokens_per_round(acceptance: float, k: int) -> float:
    """(1 - a^(k+1)) / (1 - a): tokens per target pass when each draft token is accepted with
    probability a independently (Leviathan et al. 2023, eq. 1). `a` is that per-token probability
    (stats["token_acceptance"]: accepted / (accepted + rejections), its estimate from a run), not
    the share of proposed tokens accepted, which is lower because tokens after a rejection are
    proposed but never judged."""
    if not (0.0 <= acceptance <= 1.0 and k >= 0):  # (NaN too: 1.5 gave k + 1, a negative k a negative count)
        raise ValueError(f"acceptance must be in [0, 1] and k >= 0, got {acceptance!r} and {k!r}")
    if acceptance >= 1.0:
        return k + 1.0
    return (1 - acceptance ** (k + 1)) / (1 - acceptance)


def expected_speedup(acceptance: float, k: int, cost_ratio: float) -> float:
    """Speedup over the target alone when a draft pass costs `cost_ratio` target passes and the
    verify pass costs one: tokens per round / (k * c + 1)."""
    if not cost_ratio >= 0.0:  # (-1/k divided by zero)
        raise ValueError(f"the cost ratio must be >= 0, got {cost_ratio!r}")
    return expected_tokens_per_round(acceptance, k) / (k * cost_ratio + 1)


def cost_ratio(events: list) -> float | None:
    """The c of expected_speedup as a run measured it, over its rounds that verified (a prompt pass
    costs more than a step): drafting time per guess (k c is a round's drafting: a catch-up pass and
    a cascade's free looked-up guesses counted) over a verify pass's mean time. None without both."""
    rounds = [e for e in events if isinstance(e, Round) and e.target_passes]
    proposed, target_passes = sum(r.proposed for r in rounds), sum(r.target_passes for r in rounds)
    target_s = sum(r.target_s for r in rounds)
    if not proposed or not target_s:
        return None
    return sum(r.draft_s for r in rounds) / proposed / (target_s / target_passes)


def engine_seconds(events: list) -> float:
    """Prefill plus each round's own wall time: what the caller does between rounds never counts."""
    return prompt_seconds(events) + sum(e.wall_s for e in events if isinstance(e, Round))


def prompt_seconds(events: list) -> float:
    """The prompt pass of both models (each Prefill's)."""
    return sum(e.target_s + e.draft_s for e in events if isinstance(e, Prefill))


def pooled_ratio(spec: list[tuple[float, int]], base: list[tuple[float, int]]) -> float:
    """Speculation's speedup from each side's (seconds, tokens) parts, a part of 0 tokens a prefill:
    (base prefill s + spec tokens x base decoding s per token) / spec seconds, the target alone
    costed at the speculative side's length (playground.measure.speedup says why)."""
    s_sec, s_tok = sum(s for s, _ in spec), sum(n for _, n in spec)
    b_pre, b_dec = sum(s for s, n in base if not n), sum(s for s, n in base if n)
    b_tok = sum(n for _, n in base)
    return (b_pre + s_tok * b_dec / b_tok) / s_sec if s_sec and s_tok and b_tok else 0.0


def first_tokens(parts: list[tuple[float, int]], tokens: int) -> list[tuple[float, int]]:
    """The parts that wrote the first `tokens` tokens (the last one's time in proportion to the tokens
    kept); all of them where they wrote no more."""
    kept, written = [], 0
    for seconds, n in parts:
        if n and written >= tokens:
            break
        take = min(n, tokens - written)
        kept.append((seconds * take / n, take) if n else (seconds, 0))
        written += take
    return kept


OTHER_LENGTHS = ("the target alone's texts ended before speculation's, so the speedup costs it at speculation's "
                 "length (its prompt pass once, then its own time per token), not the ratio of the two tokens/s")


def rates_differ(spec_tokens_per_s: float, base_tokens_per_s: float, speedup: float) -> bool:
    """The two sides' tokens/s do not divide to the speedup (by more than 1%): sampled texts of other
    lengths, whose speedup pooled_ratio takes at the speculative side's length."""
    if not (spec_tokens_per_s and base_tokens_per_s and speedup):
        return False
    return abs(spec_tokens_per_s / base_tokens_per_s / speedup - 1) > 0.01


def first_difference(a: list[int], b: list[int], stopped: bool = False) -> int | None:
    """Index of the first token where two outputs differ (the shorter one's length if one is a
    prefix of the other), None when they are identical. stopped: the runs were cut short (Stop), at
    lengths of their own, so a prefix is identical as far as both went."""
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if at is None and len(a) != len(b) and not stopped:
        at = min(len(a), len(b))
    return at


def comparison_json(result, baseline, measured, greedy: bool, stopped: bool = False, form: str = "") -> dict:
    """A comparison's keys beside RunResult.as_json, the same in the CLI's --json, the page's download
    and the web API: the target alone's text, ids and stats; the speedup (None where too noisy, its
    `speedup_measure` then says why; `measured` a measure.speedup.Speedup or None before one); greedy,
    where the texts first differ (a run stopped, by Stop, Ctrl-C or either side's finish_reason 'stopped': as far
    as both went; the CLI's Ctrl-C said "differs from token 9" of a cut run that was the target alone's prefix);
    `form`: how the target alone ran where slower than plain decoding (session.baseline_form), as baseline.form."""
    stopped = stopped or STOPPED in (result.finish_reason, baseline.finish_reason)
    out = {"baseline": {"text": baseline.text, "token_ids": baseline.token_ids, "stats": baseline.stats,
                        "finish_reason": baseline.finish_reason, "form": form},
           "speedup": measured.speedup if measured else None,
           "speedup_measure": measured.as_dict() if measured else None}
    if greedy:
        at = first_difference(result.token_ids, baseline.token_ids, stopped)
        out |= {"first_difference": at, "identical_to_baseline": at is None}
    return out


def identity_note(spec_ids: list[int], base_ids: list[int] | None, greedy: bool, stopped: bool = False) -> str:
    """What a greedy comparison showed about the text, in words: identical (so far, for stopped runs),
    or from which token it differs. It names the text: beside a speedup, "identical to the target
    alone" read as "no faster"."""
    if base_ids is None or not greedy:
        return "sampled" if base_ids is not None else ""
    if stopped and not (spec_ids and base_ids):  # ("identical as far as both went" of no token said nothing)
        which = "either run" if not (spec_ids or base_ids) else "speculation" if not spec_ids else "the target alone"
        return f"nothing to compare: the run ended (Stop, or a failure) before {which} wrote a token"
    at = first_difference(spec_ids, base_ids, stopped)
    if at is not None:
        return f"its text differs from the target alone's from token {at + 1}"
    return "its text identical to the target alone's" + (" as far as both went (stopped)" if stopped else "")


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def _per_round(total: float, verified: list) -> float | None:
    """A mean over the verified rounds, None where there was none (every token forced: 0.0 read as rounds that
    wrote nothing; a scripting review)."""
    return total / len(verified) if verified else None


def _rate(kept: int, judged: int) -> float | None:
    """A share of guesses, None where there were none to judge."""
    return kept / judged if judged else None


def counted(n: int, noun: str = "token") -> str:
    """'1 token', '2 tokens' (the page and the CLI wrote '1 tokens')."""
    return f"{n} {noun}{'s' * (n != 1)}"


def speedup_verdict(speedup: float | None, low: float, high: float, side: str = "") -> str:
    """A measured speedup in one word or phrase, the same on the card, in tables, charts, CSV and the
    CLI: "faster" or "slower" where its whole 95% interval lies on one side of 1x (told as one number
    or too noisy for one: `speedup` None, its `side` given), "no clear difference" where a told
    interval holds 1x, "cannot tell" else."""
    if speedup is None:
        return side or "cannot tell"
    return "no clear difference" if low <= 1.0 <= high else "faster" if low > 1.0 else "slower"


def speedup_said(speedup: float | None, low: float, high: float, side: str = "") -> str:
    """A speedup (playground.measure.speedup's) in the words every text view uses (the page's card
    lays the same verdict out in parts): "1.32x (1.19-1.43x)"; "no clear difference, 1.04x
    (0.98-1.09x)" where a told interval holds 1x; too noisy for one number, "faster, 1.16-2.79x"
    where all of it lies on one side of 1x (Speedup.side), else "cannot tell"."""
    verdict = speedup_verdict(speedup, low, high, side)
    if speedup is None:
        return verdict if verdict == "cannot tell" else f"{verdict}, {low:.2f}-{high:.2f}x"
    told = f"{speedup:.2f}x ({low:.2f}-{high:.2f}x)"
    return f"{verdict}, {told}" if verdict == "no clear difference" else told
