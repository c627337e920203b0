"""Proposers guess the next tokens for the target to verify. The interface is three methods:

    start(prompt) -> passes         prefill whatever state the proposer keeps
    propose(k, ctx) -> Proposal     up to k tokens (fewer is fine, zero too)
    commit(n_accepted, new_tokens)  the round's outcome: n of the proposal kept, then new_tokens
                                    (the accepted drafts plus the target's token) are committed

One proposer may also verify (the fused round, fused.py: drafting and the verify pass as programs of its own):

    judge(proposal) -> Verdict      in place of the round loop's verify pass and acceptance rule
    places_caches = True            the loop then crops no cache: its programs place both caches' pointers

Each proposer owns its state (the draft model its KV cache); the engine never reaches into it."""
from dataclasses import dataclass

import torch

from playground.config import SamplingParams
from playground.draft_ids import LOOKUP_NGRAM
from playground.engine.runner import ModelRunner
from playground.engine.sampling import draw, mask_logits, warp
from playground.engine.verify import verify_greedy, verify_sampled


@dataclass(slots=True)
class DraftContext:
    """What a proposer may use to draft: the sampling settings, the run's generator, and the
    constraint guide (None when unconstrained) whose state it must respect."""
    sampling: SamplingParams
    generator: torch.Generator | None
    guide: object | None = None
    min_confidence: float | None = None  # stop drafting before a token the draft is less sure of


@dataclass(slots=True)
class Proposal:
    tokens: torch.Tensor  # [k'] long, on the proposer's device
    probs: torch.Tensor | None  # [k', V] warped draft probabilities (fused greedy: logits); None for deterministic guesses
    passes: int  # draft forward passes spent
    stop_reason: str = ""  # why fewer than k tokens were proposed ('' when k were)
    looked_up: int = 0  # a cascade's: the guesses prompt lookup offered the draft model (checked in one pass)
    lookup_kept: int = 0  # of those, the ones the draft model kept (each one a draft step it did not take)


class DraftModelProposer:
    """A small causal LM drafting autoregressively with its own KV cache."""
    name = "draft model"

    def __init__(self, runner: ModelRunner):
        self.runner = runner
        self.seq: list[int] = []  # committed tokens; the cache holds a prefix of them

    def start(self, prompt: list[int]) -> int:
        self.runner.reset()
        self.seq = list(prompt)
        if len(prompt) < 2:
            return 0
        self.runner.prefill(self._ids(prompt[:-1]))
        return 1

    def propose(self, k: int, ctx: DraftContext) -> Proposal:
        pending = self._ids(self.seq[self.runner.length:])  # committed tokens not yet cached (1 or more)
        tokens, probs, passes, stop = self.draft_loop(pending, k, ctx)
        if not tokens:
            return Proposal(self._ids([]), None, passes, stop)  # k = 0: the round loop says why
        return Proposal(torch.cat(tokens), torch.cat(probs), passes, stop)

    def draft_loop(self, pending: torch.Tensor, k: int, ctx: DraftContext):
        """Draft up to k tokens after feeding `pending` -> (tokens, probs, passes, stop reason)."""
        tokens, probs, guide, passes = [], [], ctx.guide, 0
        for _ in range(k):
            row = guide.next_mask() if guide is not None else None
            if row is not None and not row.any():  # a guess led where the constraint allows nothing: the
                guide.unuse_mask()  # target alone never goes there, its verify pass rejects the guess
                return tokens, probs, passes, "the constraint allows nothing after these drafts"
            logits = self.runner.forward(pending, keep=1)  # [1, V]
            passes += 1
            if row is not None:
                logits = mask_logits(logits, row[None])
            p = warp(logits, ctx.sampling)  # [1, V]
            if ctx.min_confidence is not None and (top := p.max().item()) < ctx.min_confidence:
                if guide is not None:
                    guide.unuse_mask()
                return tokens, probs, passes, f"draft unsure (p={top:.2f} < {ctx.min_confidence})"
            token = draw(p, logits, ctx.sampling, ctx.generator)  # [1]
            tokens.append(token)
            probs.append(p)
            pending = token
            if guide is not None:  # the constraint needs the token on the host anyway
                guide.consume_draft(int(token))
                if guide.draft_stopped():
                    return tokens, probs, passes, "draft wrote EOS"
        return tokens, probs, passes, ""

    def commit(self, n_accepted: int, new_tokens: list[int]) -> None:
        # The cache holds seq + the drafts fed back (k-1, or all t after an early stop); the first
        # n_accepted of them are now committed.
        self.runner.crop(min(self.runner.length, len(self.seq) + n_accepted))
        self.seq.extend(new_tokens)
        self.runner.follow_target()

    def _ids(self, ids: list[int]) -> torch.Tensor:
        return torch.tensor(ids, dtype=torch.long, device=self.runner.device)


class PromptLookupProposer:
    """Prompt lookup decoding: find the latest earlier occurrence of the last n tokens (n = max_ngram
    down to 1) in the prompt and output so far, and propose what followed it. No model, no passes."""
    name = "prompt lookup"

    def __init__(self, device: torch.device | str = "cpu", max_ngram: int = LOOKUP_NGRAM):
        self.device = torch.device(device)
        self.max_ngram = max_ngram
        self.seq: list[int] = []
        self.index: dict[tuple, int] = {}  # n-gram -> end position of its latest occurrence
        self.indexed_to = 0  # n-grams ending before this position are in the index

    def start(self, prompt: list[int]) -> int:
        self.seq, self.index, self.indexed_to = list(prompt), {}, 0
        return 0

    def propose(self, k: int, ctx: DraftContext) -> Proposal:
        guess = self.guess(k)
        if ctx.guide is not None:
            guess = ctx.guide.allowed_prefix(guess)
        stop = "" if len(guess) == k else "no match" if not guess else "match ended"
        return Proposal(torch.tensor(guess, dtype=torch.long, device=self.device), None, 0, stop)

    def commit(self, n_accepted: int, new_tokens: list[int]) -> None:
        self.seq.extend(new_tokens)

    def guess(self, k: int) -> list[int]:
        """Up to k tokens that followed the latest earlier occurrence of the current suffix."""
        self._index_new_ngrams()
        return self._lookup(k)

    def _index_new_ngrams(self) -> None:
        """Register every n-gram that has a continuation, i.e. ends before the last position."""
        for end in range(max(self.indexed_to, 1), len(self.seq)):
            for n in range(1, min(self.max_ngram, end) + 1):
                self.index[tuple(self.seq[end - n:end])] = end
        self.indexed_to = max(self.indexed_to, len(self.seq))

    def _lookup(self, k: int) -> list[int]:
        for n in range(min(self.max_ngram, len(self.seq)), 0, -1):
            end = self.index.get(tuple(self.seq[-n:]))
            if end is not None:
                return self.seq[end:end + k]
        return []


class CascadeProposer:
    """Prompt lookup drafts for the draft model, which drafts for the target. The draft model checks
    the looked-up guess in one pass with the same acceptance rule (keeping exactly what it would
    have written itself), then drafts the rest alone. Its proposals keep the draft model's
    distribution, so the target's check stays exact. Under a constraint it drafts alone."""
    name = "cascade"

    def __init__(self, draft: DraftModelProposer, lookup: PromptLookupProposer):
        self.draft, self.lookup = draft, lookup

    def start(self, prompt: list[int]) -> int:
        self.lookup.start(prompt)
        return self.draft.start(prompt)

    def commit(self, n_accepted: int, new_tokens: list[int]) -> None:
        self.lookup.commit(n_accepted, new_tokens)
        self.draft.commit(n_accepted, new_tokens)

    def propose(self, k: int, ctx: DraftContext) -> Proposal:
        guess = self.lookup.guess(k - 1) if ctx.guide is None and k > 1 else []  # + the draft's own token <= k
        if not guess:
            return self.draft.propose(k, ctx)
        runner, g = self.draft.runner, self.draft._ids(guess)
        pending = self.draft._ids(self.draft.seq[runner.length:])
        logits = runner.forward(torch.cat([pending, g]), keep=len(guess) + 1)  # [m+1, V]: one pass
        p = warp(logits, ctx.sampling)
        n, nxt = verify_greedy(logits, g) if ctx.sampling.greedy else verify_sampled(p, None, g, ctx.generator)
        n = int(n)
        if (unsure := _first_unsure(p[: n + 1], ctx.min_confidence)) is not None:  # the confidence stop, as drafting
            runner.crop(runner.length - (len(guess) - unsure))  # alone: before the first token it is unsure of
            top = p[unsure].max().item()
            return Proposal(g[:unsure], p[:unsure] if unsure else None, 1, f"draft unsure (p={top:.2f} < {ctx.min_confidence})",
                            looked_up=len(guess), lookup_kept=unsure)
        runner.crop(runner.length - (len(guess) - n))  # keep the guesses the draft agreed with
        tokens, probs = [g[:n], nxt.view(1)], [p[: n + 1]]
        more, more_probs, passes, stop = self.draft.draft_loop(nxt.view(1), k - n - 1, ctx)
        return Proposal(torch.cat(tokens + more), torch.cat(probs + more_probs), 1 + passes, stop, looked_up=len(guess),
                        lookup_kept=n)


def _first_unsure(p: torch.Tensor, least: float | None) -> int | None:
    """The first row of p [m, V] whose most likely token is below `least` (the confidence policy's
    stop), None where none is or there is no such policy. (Whether to stop does not depend on the
    token drawn, so the proposals keep the draft's distribution.)"""
    if least is None:
        return None
    unsure = (p.max(dim=-1).values < least).nonzero()
    return int(unsure[0]) if len(unsure) else None
