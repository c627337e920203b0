"""The speculative decoding round loop (a generator of events).

Cache invariant, for target and draft alike: between rounds a model's KV cache holds a prefix of the
committed sequence. The target holds all of it but the last token, which is the first input of the
next verify pass: [last, x_1..x_k] -> k+1 rows of logits, one pass. After the verdict both caches are
cropped back to the committed tokens; nothing is ever recomputed.

Target-only decoding is the same loop with a proposer that proposes nothing (every round is one
target pass and one token), so the baseline shares the sampling, EOS and timing code exactly."""
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from playground.config import SpecConfig
from playground.engine.detok import Detokenizer
from playground.engine.proposers import DraftContext, Proposal
from playground.engine.runner import ModelRunner
from playground.engine.sampling import make_generator, warp
from playground.engine.timing import Clock
from playground.engine.verify import verify_greedy, verify_sampled
from playground.events import ACCEPTED, BONUS, CORRECTED, REJECTED, Prefill, Round, TokenEvent


class NoProposer:
    """Proposes nothing: turns the round loop into plain target-only decoding."""
    name = "target only"

    def start(self, prompt):
        return 0

    def propose(self, k, ctx):
        return Proposal(torch.empty(0, dtype=torch.long), None, 0, "target only")

    def commit(self, n_accepted, new_tokens):
        pass


@dataclass(slots=True)
class _Run:
    """Mutable state of one generation."""
    seq: list[int]  # prompt + committed tokens
    detok: Detokenizer
    ctx: DraftContext
    clock: Clock
    generated: int = 0
    rounds: int = 0


def speculate(target: ModelRunner, proposer, prompt: list[int], cfg: SpecConfig, tokenizer,
              eos_ids: set[int]) -> Iterator[Prefill | Round]:
    """Yield a Prefill event, then one Round per draft-and-verify round until EOS or max tokens."""
    if not prompt:
        raise ValueError("the prompt must hold at least one token")
    clock = Clock(target.device)
    generator = None if cfg.sampling.greedy else make_generator(cfg.seed, target.device)
    yield _prefill(target, proposer, prompt, clock)
    run = _Run(list(prompt), Detokenizer(tokenizer, prompt), DraftContext(cfg.sampling, generator), clock)
    while True:
        event = _round(target, proposer, run, cfg, eos_ids)
        yield event
        if event.finish_reason is not None:
            return


@torch.inference_mode()
def _round(target: ModelRunner, proposer, run: _Run, cfg: SpecConfig, eos_ids: set[int]) -> Round:
    k = min(cfg.k, cfg.max_new_tokens - run.generated - 1)  # never draft past the token budget
    clock, started = run.clock, time.perf_counter()
    t0 = clock.mark()
    proposal = proposer.propose(k, run.ctx)
    t1 = clock.mark()
    ids = torch.cat([torch.tensor([run.seq[-1]], device=target.device), proposal.tokens.to(target.device)])
    logits = target.forward(ids)  # [k'+1, V]: one verify pass
    verdict = _judge(logits, proposal, cfg, run.ctx.generator)  # the round's one host sync
    t2 = clock.mark()
    new, kept, events, finish = _commit_events(verdict, run.detok, eos_ids)
    run.seq.extend(new)
    target.crop(len(run.seq) - 1)
    proposer.commit(kept, new)
    run.generated += len(new)
    run.rounds += 1
    if finish is None and run.generated >= cfg.max_new_tokens:
        finish = "length"
    return Round(index=run.rounds, tokens=events, proposed=len(verdict.drafts), accepted=kept,
                 target_passes=1, draft_passes=proposal.passes, draft_s=clock.seconds(t0, t1),
                 target_s=clock.seconds(t1, t2), wall_s=time.perf_counter() - started,
                 finish_reason=finish, k=k, stop_reason=proposal.stop_reason)


@torch.inference_mode()
def _prefill(target: ModelRunner, proposer, prompt: list[int], clock: Clock) -> Prefill:
    """Cache all prompt tokens but the last in both models (the last opens the first verify pass)."""
    target.reset()
    t0 = clock.mark()
    target_passes = 0
    if len(prompt) > 1:
        target.forward(torch.tensor(prompt[:-1], device=target.device), last_only=True)
        target_passes = 1
    t1 = clock.mark()
    draft_passes = proposer.start(prompt)
    t2 = clock.mark()
    if target.device.type == "cuda":
        torch.cuda.synchronize()
    return Prefill(len(prompt), target_passes, draft_passes, clock.seconds(t0, t1), clock.seconds(t1, t2))


@dataclass(slots=True)
class Verdict:
    """Host-side outcome of one verify pass: n drafts accepted, the target's token, and the
    probabilities shown, per draft position and then for the target's token."""
    n: int
    next: int
    drafts: list[int]
    p_target: list[float]
    p_draft: list[float | None]


def _judge(logits: torch.Tensor, proposal: Proposal, cfg: SpecConfig, generator) -> Verdict:
    """Apply the acceptance rule on the device, then read everything back in one transfer."""
    x, q = proposal.tokens.to(logits.device), proposal.probs
    p = warp(logits, cfg.sampling)  # [k'+1, V]
    if cfg.sampling.greedy:
        n, nxt = verify_greedy(logits, x)
    else:
        n, nxt = verify_sampled(p, q.to(p.device) if q is not None else None, x, generator)
    k = x.shape[0]
    rows = torch.arange(k, device=p.device)
    parts = [n.view(1).float(), nxt.view(1).float(), x.float(), p[rows, x], p[n, nxt].view(1)]
    if q is not None:
        q = q.to(p.device)
        parts += [q[rows, x], q[n.clamp(max=k - 1), nxt].view(1)]
    host = torch.cat(parts).tolist()
    n_, nxt_ = int(host[0]), int(host[1])
    drafts = [int(t) for t in host[2:2 + k]]
    p_target = host[2 + k:3 + 2 * k]
    p_draft = host[3 + 2 * k:] if q is not None else [None] * (k + 1)
    if n_ == k:  # a bonus token has no draft probability
        p_draft = p_draft[:k] + [None]
    return Verdict(n_, nxt_, drafts, p_target, p_draft)


def _commit_events(v: Verdict, detok: Detokenizer, eos_ids: set[int]):
    """-> (committed ids, how many of them are drafts, events in display order, finish reason or
    None). Stops right after an EOS: nothing behind it is emitted."""
    new, events = [], []
    for i in range(v.n):
        token = v.drafts[i]
        new.append(token)
        events.append(TokenEvent(ACCEPTED, token, detok.push(token), v.p_target[i], v.p_draft[i]))
        if token in eos_ids:
            return new, len(new), events, "eos"
    for i in range(v.n, len(v.drafts)):
        token = v.drafts[i]
        events.append(TokenEvent(REJECTED, token, detok.peek(token), v.p_target[i], v.p_draft[i]))
    kind = BONUS if v.n == len(v.drafts) else CORRECTED
    new.append(v.next)
    events.append(TokenEvent(kind, v.next, detok.push(v.next), v.p_target[-1], v.p_draft[-1]))
    return new, v.n, events, "eos" if v.next in eos_ids else None
