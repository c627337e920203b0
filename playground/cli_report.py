"""What `generate` prints besides its text: the report under it on stderr (its figures, the constraint's verdict,
the speedup), the line naming what ran, the outputs that missed their constraint, and load progress at a terminal."""
import sys

from playground.config import BUDGET_RAN_OUT, THINK_END, tree_text
from playground.draft_ids import NGRAM
from playground.events import OPEN_END, STOPPED
from playground.metrics import counted, identity_note, lookup_level, speedup_said


def invalid_outputs(out: dict) -> str:
    """'' when every output meets its constraint (or there is none); else which did not, and why."""
    samples = out.get("samples") or [{"seed": None, **out}]
    broken = [s for s in samples if s["valid"] is False]
    if not broken:
        return ""
    seeds = [str(s["seed"]) for s in broken]
    which = ("the output does" if len(samples) == 1 else f"the sample with seed {seeds[0]} does" if len(seeds) == 1
             else f"the samples with seeds {', '.join(seeds[:-1])} and {seeds[-1]} do")
    return f"{which} not meet the constraint (" + broken[0]["validation_error"] + ")"


def ran_with(target: str, draft: str, cfg, prompt: str | None, prompt_ids: list[int]) -> str:
    """The line that says what produced the text above it (the text alone began mid-code, from nowhere);
    prompt None: given as token ids."""
    t = cfg.sampling.temperature
    sampling = "greedy" if t == 0 else f"temperature {t:g}, seed {cfg.seed}"
    shown = "given as token ids" if prompt is None else repr(prompt if len(prompt) <= 60 else prompt[:59] + "…")
    return (f"-- {target} with {draft}, {_drafting(cfg, draft)}, {sampling}, at most {counted(cfg.max_new_tokens, 'new token')}; "
            f"prompt {shown} ({counted(len(prompt_ids))})")


def _drafting(cfg, draft: str = "") -> str:
    """'token tree 2,2,2/5+3' (its k unused), or 'k 4' and a policy other than fixed (not the confidence
    policy under prompt lookup, which drafts as under fixed: cli_notes said so before the run)."""
    if cfg.tree:
        return f"token tree {tree_text(cfg)}"
    if cfg.policy == "fixed" or (cfg.policy == "confidence" and draft == NGRAM):
        return f"k {cfg.k}"
    return f"k {cfg.k}, {cfg.policy} policy" + (f" at {cfg.confidence:g}" if cfg.policy == "confidence" else "")


def format_text(out: dict) -> str:
    """The report generate writes on stderr after the text: its figures, the constraint's verdict, the speedup."""
    s = out["stats"]
    acceptance = f"{s['acceptance_rate']:.2f}" if s["proposed"] else "n/a (nothing was drafted)"
    if s["proposed"] and s["theory_tokens_per_round"] is None:  # (a tree's rounds: every node counts)
        acceptance += " of the tree's nodes"
    elif s["proposed"] and s["token_acceptance"] is not None:  # the calculator's α beside it (a maths review: 0.38 read as α)
        acceptance += f" (per-token α {s['token_acceptance']:.2f}: of the guesses judged, the share kept)"
    lines = [f"-- {counted(s['generated_tokens'])} in {s['wall_s']:.2f} s ({s['tokens_per_s']:.1f} tok/s; the prompt pass "
             f"{s['prompt_s']:.2f} s of it, then {s['decode_tokens_per_s']:.1f} tok/s), "
             f"acceptance {acceptance}, {s['tokens_per_target_pass']:.2f} tokens per target pass"]
    if s.get("looked_up"):  # a cascade
        lines.append(f"-- {lookup_level(s)}")
    if "compile_s" in out:
        lines.append(f"-- compiled passes: {out['compile_s']:.1f} s compiling before the run (not in its time)"
                     + (f"; {out['compile_note']}" if out.get("compile_note") else ""))
    still = out.get("reasoning_tokens") == s["generated_tokens"] and THINK_END not in out["text"]  # (cut while thinking)
    if out.get("reasoning_tokens") is not None and out["valid"] is not None and not still:
        lines.append(f"-- thought for {counted(out['reasoning_tokens'])}{_budget_spent(out)}; the answer after </think> is what the "
                     f"constraint judged: {out['answer']}")
    elif out.get("reasoning_tokens") is not None:  # (no constraint: the answer is the text's end, above; or none yet, said
        lines.append(f"-- thought for {counted(out['reasoning_tokens'])}" + (  # so: it read as thinking ended, with an
            "" if not still else f": still thinking when it ended, no {THINK_END} yet"  # empty answer; a review)
            + " (raise max new tokens)" * (out["finish_reason"] == "length")))
    if out["valid"] is not None:
        samples = out.get("samples", [])  # (several: each verdict names its seed, the first's too)
        lines.append(validity(out) if len(samples) < 2 else f"-- sample with seed {samples[0]['seed']}: {validity(out).removeprefix('-- ')}")
        lines += [f"-- note: {note}" for note in out.get("constraint_notes", [])]
    if "speedup_measure" in out:
        greedy = "identical_to_baseline" in out  # (a sampled run's text is not compared)
        cut = STOPPED in (out["finish_reason"], out["baseline"]["finish_reason"])  # (a prefix: the same so far)
        same = identity_note(out["token_ids"], out["baseline"]["token_ids"], greedy, cut) if greedy else ""
        m = out["speedup_measure"]
        told = "" if m["speedup"] is None else (f" over the target alone ({m['interval']}; {m['blocks']} interleaved "
                                                f"measurement{'s' * (m['blocks'] > 1)})")
        lines.append(f"-- speedup: {speedup_said(m['speedup'], m['low'], m['high'], m['side'])}{told}" + (f"; {same}" if same else ""))
        if m["spec_tokens_per_s"] and m["base_tokens_per_s"]:  # (the ratio's own rates: the first line's is the run's alone)
            over = "over the interleaved measurements" if m["blocks"] > 1 else "side by side"
            lines.append(f"-- speculation {m['spec_tokens_per_s']:.1f} tok/s against the target alone's "
                         f"{m['base_tokens_per_s']:.1f} {over}" + (f"; {m['other_lengths']}" if m["other_lengths"] else ""))
        if m["caveat"]:
            lines.append(f"-- note: the speedup is {m['caveat']}")
        if m["speedup"] is None:  # why, on a line of its own (in brackets inside the verdict's it read as a riddle)
            about = f"; about {m['estimate']:.2f}x" if m["estimate"] > 0 else ""  # (a Stop before a token: "0.00x")
            lines.append(f"-- no single number: {m['reason']}{about}")
        if out["baseline"].get("form"):  # (slower than plain decoding, so that its tokens are speculation's)
            lines.append(f"-- baseline: {out['baseline']['form']}")
    for sample in out.get("samples", [])[1:]:  # (the first is the run above, its verdict the report's own)
        if sample["valid"] is not None:
            lines.append(f"-- sample with seed {sample['seed']}: {validity(sample).removeprefix('-- ')}")
    return "\n".join(lines)


def written(out: dict) -> str:
    """What generate writes on stdout: the text; with --num-samples, each sample's after a line naming its seed."""
    samples = out.get("samples", [])
    if len(samples) < 2:
        return out["text"]
    return "\n\n".join(f"-- sample with seed {sample['seed']}:\n{sample['text']}" for sample in samples)


def _budget_spent(out: dict) -> str:
    """' (the thinking budget ran out: </think> forced)' where it did, else '' (a review: a thinking run cut by
    its budget read as one that ended by itself; read from the marker's kind, forced, it missed a marker
    on the target's own row, that round's bonus)."""
    return f" ({BUDGET_RAN_OUT})" if out.get("thinking_cut") else ""


def validity(out: dict) -> str:
    return (f"-- valid as far as it goes: {OPEN_END}" if out["valid"] and out["open_end"] else "-- valid" if out["valid"]
            else f"-- INVALID: {out['validation_error']}")


def progress_printer():
    """Loading progress on stderr for people at a terminal; silent for scripts (stderr holds errors, notes and the report)."""
    if not sys.stderr.isatty():
        return None
    return lambda fraction, message: print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)
