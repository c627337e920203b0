"""The speculative decoding round loop (a generator of events).

Cache invariant, for target and draft alike: between rounds a model's KV cache holds a prefix of the
committed sequence. The target holds all of it but the last token, which is the first input of the
next verify pass: [last, x_1..x_k] -> k+1 rows of logits, one pass. After the verdict both caches are
cropped back to the committed tokens, with nothing recomputed, save in two cases: the fused CUDA
round (fused.py) crops nothing and feeds the draft its last two committed tokens again each round;
a feature draft (feature_runner.py) recomputes the pairs it made from its own guesses once the
target's features for them are known.

With a constraint guide, each round first commits the tokens the grammar forces (no draft, no
verification: the target reads them at the head of its next verify pass), the draft proposes under
the grammar's masks, the verify rows are masked with the states after the preceding drafts, and the
guide is rolled back past rejected drafts.

A token tree (playground.engine.tree) is a proposal of another shape: one verify pass over every
node with tree attention, a walk down the tree (tree_verify), and both caches compacted to the kept
branch before the usual crop.

Target-only decoding is the same loop with a proposer that proposes nothing (every round is one
target pass and one token), so the baseline shares the sampling, EOS and timing code exactly."""
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from playground.config import SpecConfig
from playground.engine.proposers import DraftContext, Proposal
from playground.engine.runner import ModelRunner
from playground.engine.schedule import make_schedule, pass_cost
from playground.engine.sampling import make_generator, mask_logits, warp
from playground.engine.timing import Clock
from playground.engine.tree import TreeProposal, path_tokens, verify_rows
from playground.engine.tree_verify import walk_greedy, walk_sampled
from playground.engine.verdict import Verdict, read_report
from playground.engine.verify import verify_greedy, verify_sampled
from playground.events import ACCEPTED, BONUS, CORRECTED, FORCED, REJECTED, Prefill, Round, TokenEvent


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
    ctx: DraftContext
    clock: Clock
    budget: int  # tokens still allowed
    schedule: object  # next_k() / observe(): the draft-length policy
    rounds: int = 0


def speculate(target: ModelRunner, proposer, prompt: list[int], cfg: SpecConfig,
              eos_ids: set[int], guide=None) -> Iterator[Prefill | Round]:
    """Yield a Prefill event, then one Round per draft-and-verify round until EOS or max tokens.
    `guide` (optional) constrains every token to a grammar; see playground.constraints.guide.
    Tokens are ids: their text is the caller's (playground.detok.with_text)."""
    if not prompt:
        raise ValueError("the prompt must hold at least one token")
    clock = Clock(target.device)
    generator = None if cfg.sampling.greedy else make_generator(cfg.seed, target.device)
    yield _prefill(target, proposer, prompt, clock)
    confidence = cfg.confidence if cfg.policy == "confidence" else None
    ctx = DraftContext(cfg.sampling, generator, guide, confidence)
    run = _Run(list(prompt), ctx, clock, cfg.max_new_tokens, make_schedule(cfg.policy, cfg.depth))
    while True:
        event = _round(target, proposer, run, cfg, eos_ids)
        yield event
        if event.finish_reason is not None:
            return


@torch.inference_mode()
def _round(target: ModelRunner, proposer, run: _Run, cfg: SpecConfig, eos_ids: set[int]) -> Round:
    clock, guide, started = run.clock, run.ctx.guide, time.perf_counter()
    events = _forced(proposer, run) if guide is not None else []
    if run.budget == 0 or (events and events[-1].token_id in eos_ids):
        finish = "eos" if events and events[-1].token_id in eos_ids else "length"
        event = _round_event(run, events, 0, 0, None, 0.0, 0.0, started, finish, 0)
        event.forced_first = len(events)
        return event
    asked = run.schedule.next_k()
    k = min(asked, run.budget - 1)  # never draft past the token budget
    t0 = clock.mark()
    proposal = proposer.propose(k, run.ctx)
    t1 = clock.mark()
    if k == 0:  # the target alone this round: say why
        proposal.stop_reason = "the schedule paused drafting" if asked == 0 else "one token left"
    verdict = _judged(target, proposer, proposal, run, cfg)
    t2 = clock.mark()
    no_choice = [] if guide is None else guide.no_choice() if verdict.path is None else [
        guide.paths_alone[proposal.parents[node] + 1] for node in verdict.path]  # a tree's node: its parent's row
    new, kept, committed, finish = _commit_events(verdict, eos_ids, no_choice)
    _keep(target, proposer, run, verdict, new, kept)
    # a tree: every node was verified, its kept branch ending in EOS too (its kept nodes alone made the run's
    # acceptance look higher); a chain: its drafts after an accepted EOS were never judged
    judged = len(proposal.tokens) if verdict.path is not None else kept if len(new) == kept else len(verdict.drafts)
    draft_s, target_s = clock.seconds(t0, t1), clock.seconds(t1, t2)
    run.schedule.observe(judged, kept, pass_cost(draft_s, proposal.passes, target_s))
    run.budget -= len(new)
    if finish is None and run.budget == 0:
        finish = "length"
    event = _round_event(run, events + committed, judged, kept, proposal, draft_s, target_s, started, finish, k)
    event.forced_drafts, event.forced_first = sum(no_choice[:kept]), len(events)
    event.forced_refused = _forced_refused(guide, proposal, verdict, no_choice, kept, judged)
    if verdict.path is not None:
        event.tree = {"tokens": list(proposal.tokens), "parents": list(proposal.parents), "path": verdict.path[:kept],
                      **verdict.node_probs}
    return event


def _judged(target: ModelRunner, proposer, proposal, run: _Run, cfg: SpecConfig):
    """The target's verdict on the round's drafts: the proposer's own verify pass and rule where it has one
    (fused.py), a token tree's, or a chain's."""
    if (judge := getattr(proposer, "judge", None)) is not None:
        return judge(proposal)
    if isinstance(proposal, TreeProposal):
        return _verify_tree(target, proposal, run, cfg)
    return _verify(target, proposal, run, cfg)


def _keep(target: ModelRunner, proposer, run: _Run, verdict, new: list[int], kept: int) -> None:
    """The round's tokens committed everywhere: the sequence, the target's cache (a tree's accepted branch
    only), the proposer, and the guide (a chain's drafts were consumed and are settled; a tree's were not)."""
    guide = run.ctx.guide
    if verdict.path is not None:
        target.keep(len(run.seq), [len(run.seq) + node for node in verdict.path[:kept]])
    run.seq.extend(new)
    if not getattr(proposer, "places_caches", False):  # (the fused programs place both caches' pointers themselves)
        target.crop(len(run.seq) - 1)
    proposer.commit(kept, new)
    if guide is not None and verdict.path is not None:
        guide.commit_path(new, kept)  # its kept branch and the target's token
    elif guide is not None:
        guide.settle(kept, new[-1] if len(new) > kept else None)


def _forced(proposer, run: _Run) -> list[TokenEvent]:
    """Commit the tokens the grammar forces, without drafting (the target reads them in its next pass)."""
    forced = run.ctx.guide.forced(run.budget)
    if forced:
        run.seq.extend(forced)
        proposer.commit(0, forced)
        run.budget -= len(forced)
    return [TokenEvent(FORCED, t, "", 1.0, None) for t in forced]


def _round_event(run: _Run, events, proposed, kept, proposal, draft_s, target_s, started, finish, k) -> Round:
    run.rounds += 1
    return Round(index=run.rounds, tokens=events, proposed=proposed, accepted=kept,
                 target_passes=1 if proposal is not None else 0,
                 draft_passes=proposal.passes if proposal is not None else 0, draft_s=draft_s,
                 target_s=target_s, wall_s=time.perf_counter() - started, finish_reason=finish, k=k,
                 stop_reason=proposal.stop_reason if proposal is not None else "forced",
                 looked_up=getattr(proposal, "looked_up", 0), lookup_kept=getattr(proposal, "lookup_kept", 0))


@torch.inference_mode()
def _prefill(target: ModelRunner, proposer, prompt: list[int], clock: Clock) -> Prefill:
    """Cache all prompt tokens but the last in both models (the last opens the first verify pass)."""
    target.reset()
    t0 = clock.mark()
    target_passes = 0
    if len(prompt) > 1:
        target.prefill(torch.tensor(prompt[:-1], device=target.device))
        target_passes = 1
    t1 = clock.mark()
    draft_passes = proposer.start(prompt)
    t2 = clock.mark()
    if target.device.type == "cuda":
        torch.cuda.synchronize()
    return Prefill(target_passes, draft_passes, clock.seconds(t0, t1), clock.seconds(t1, t2),
                   tree=getattr(proposer, "drafts_trees", False), fused=getattr(proposer, "fuses_rounds", False))


def _verify(target: ModelRunner, proposal: Proposal, run: _Run, cfg: SpecConfig) -> Verdict:
    """The target's pass over [pending, drafts], masked by the guide, then the acceptance rule."""
    drafts = proposal.tokens.to(target.device)
    pending = torch.tensor(run.seq[target.length:], device=target.device)  # last token (+ forced ones)
    logits = target.forward(torch.cat([pending, drafts]), keep=len(drafts) + 1)  # [k'+1, V]: one pass
    if run.ctx.guide is not None:
        logits = mask_logits(logits, run.ctx.guide.verify_masks())
    return _judge(logits, proposal, cfg, run.ctx.generator)  # the round's one host sync


def _verify_tree(target: ModelRunner, tree: TreeProposal, run: _Run, cfg: SpecConfig) -> Verdict:
    """The target's one pass over [pending, every node] with tree attention, then the walk
    (playground.engine.tree_verify); the probabilities shown are read in one transfer."""
    cached = target.length
    pending = run.seq[cached:]  # last token (+ forced ones): the last is the tree's root
    positions, visible = verify_rows(tree.parents, len(pending), cached)
    ids = torch.tensor(pending + tree.tokens, device=target.device)
    logits = target.forward_tree(ids, positions.to(target.device), visible.to(target.device))[len(pending) - 1:]
    if run.ctx.guide is not None:  # the root's row and each node's, masked by the state after its path
        paths = [path_tokens(node, tree.tokens, tree.parents) for node in range(-1, len(tree.tokens))]
        logits = mask_logits(logits, run.ctx.guide.path_masks(paths))
    p = warp(logits, cfg.sampling)  # [n + 1, V]: the root's row, then each node's
    walk = walk_greedy(tree, logits) if cfg.sampling.greedy else walk_sampled(tree, p, run.ctx.generator)
    shown = walk.path + walk.rejected
    rows = [tree.parents[node] + 1 for node in shown] + [(walk.path[-1] + 1) if walk.path else 0]
    tokens = [tree.tokens[node] for node in shown] + [walk.next]
    parents = [parent + 1 for parent in tree.parents]  # each node's row in p: its parent's
    host = torch.cat([p[rows, tokens], p[parents, tree.tokens],  # one transfer: shown tokens, then every node
                      tree.probs.to(p)[tree.q_row, tree.tokens]]).tolist()
    shown_p, n = host[:len(tokens)], len(tree.tokens)
    drafted = [q if row >= 0 else None for q, row in zip(host[len(tokens) + n:], tree.q_row)]  # looked-up nodes: no q
    nodes = {"p_target": host[len(tokens):len(tokens) + n], "p_draft": drafted}
    p_draft = [nodes["p_draft"][node] for node in shown] + [None]
    return Verdict(len(walk.path), walk.next, tokens[:-1], shown_p, p_draft, walk.path, nodes)


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
    parts = [n.view(1).float(), nxt.view(1).float(), x.float(), p[rows, x], p[n.view(1), nxt.view(1)]]
    if q is not None:
        q = q.to(p.device)
        parts += [q[rows, x], q[n.clamp(max=k - 1).view(1), nxt.view(1)]]
    return read_report(torch.cat(parts).tolist(), k, k, q is not None)


def _forced_refused(guide, proposal, verdict: Verdict, no_choice: list[bool], kept: int, judged: int) -> int:
    """Drafts judged but not kept that the constraint allowed alone: no guesses either (a forced </think> drafted
    after a refused draft counted as one: 17 of 138 drafts over 18 thinking runs, a review). A chain's: after its
    kept ones; a tree's: its nodes off the kept branch (each node's row: its parent's path mask)."""
    if guide is None or judged <= kept:
        return 0
    if verdict.path is None:
        return sum(no_choice[kept:judged])
    branch = set(verdict.path[:kept])
    return sum(guide.paths_alone[proposal.parents[node] + 1] for node in range(len(proposal.tokens)) if node not in branch)


def _commit_events(v: Verdict, eos_ids: set[int], no_choice: list[bool]):
    """-> (committed ids, how many of them are drafts, events in display order, finish reason or
    None). Stops right after an EOS: nothing behind it is emitted. A kept draft whose mask allowed
    it alone (no_choice, per draft position) is forced: the draft guessed nothing there."""
    new, events = [], []
    for i in range(v.n):
        token = v.drafts[i]
        new.append(token)
        kind = FORCED if i < len(no_choice) and no_choice[i] else ACCEPTED
        events.append(TokenEvent(kind, token, "", v.p_target[i], v.p_draft[i]))
        if token in eos_ids:
            return new, len(new), events, "eos"
    for i in range(v.n, len(v.drafts)):  # a chain's first refused draft; those after it were never judged, their
        token = v.drafts[i]  # p_target read after a guess the text never had (None). A tree's: siblings, each judged
        judged = i == v.n or v.path is not None
        events.append(TokenEvent(REJECTED, token, "", v.p_target[i] if judged else None, v.p_draft[i]))
    kind = BONUS if v.n == len(v.drafts) else CORRECTED
    new.append(v.next)
    events.append(TokenEvent(kind, v.next, "", v.p_target[-1], v.p_draft[-1]))
    return new, v.n, events, "eos" if v.next in eos_ids else None
