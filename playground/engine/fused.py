"""A speculative round as two device programs, each captured once as a CUDA graph and replayed per
round: the draft's k steps, and the target's verify pass with the acceptance rule. The host writes
six numbers, replays the two graphs and reads one report back: one host synchronisation a round,
and no Python per kernel (an eager 0.5B draft step is ~30 ms of launches on the lent H100's host;
replayed, its kernels run back to back).

    meta    [a, b, last, k', draft start, target start]: set by the host before each round
    draft   feeds [a, b] (the last two committed tokens) at `draft start`, then drafts k' tokens,
            each fed back: `drafts` [k], `q` [k, V] (its warped distributions; greedy: its logits)
    verify  feeds [last, x_1..x_k] at `target start` (always k+1 wide) and judges the first k'
            drafts (verify.py's `limit`) -> report [n, next, x, p(x), p(next), q(x), q(next)]
            (greedy: those probabilities from the logits at those entries alone, no whole softmax)

Feeding the last two committed tokens keeps the draft's cache right with no bookkeeping: after any
round that drafts, its cache holds every committed position but the last two, whatever was accepted
(positions past those hold rejected guesses and are overwritten). A round without drafting (k' = 0:
the schedule's pause, see playground.engine.schedule) leaves the draft's cache behind by its token;
the next round that drafts first feeds what it missed in one pass CATCH_UP wide (padded; the pad's
positions are overwritten or past the pointer). Drafts are drawn on the device: greedy by
argmax, sampled by the exponential race with noise drawn from the run's generator before the
replay. The target alone (no draft) is the verify program with k' = 0: the same pass width as
verification, so its greedy tokens are those speculation keeps (a GEMM's rows do not depend on
which row they are; a narrower pass may round differently).

Without CUDA the same programs run directly (playground.engine.graphs.Direct): tests check them on
a CPU."""
import threading
from collections import OrderedDict

import torch

from playground.config import GREEDY, SamplingParams
from playground.engine.graphs import program
from playground.engine.proposers import Proposal
from playground.engine.sampling import exponential_noise_, race_draw, softmax_at, warp
from playground.engine.schedule import MAX_PAUSE
from playground.engine.verdict import Verdict, read_report
from playground.engine.verify import accept_sampled, verify_greedy

META = 6
STORING = threading.Lock()
CATCH_UP = MAX_PAUSE  # the draft's catch-up pass after a pause: one token per paused round
MAX_PROGRAMS = 8  # program sets (k, sampling's shape, caches) kept per pair; each holds graphs and buffers


def sampling_shape(sampling: SamplingParams) -> SamplingParams:
    """What a program's kernels depend on: greedy or not, top-k, whether top-p cuts. The values of
    temperature and top-p live in device buffers (Programs.use), so a new value captures nothing."""
    if sampling.greedy:
        return GREEDY
    return SamplingParams(temperature=1.0, top_p=0.5 if sampling.top_p < 1 else 1.0, top_k=sampling.top_k)


class Programs:
    """The buffers and programs of one (target pass, draft pass or None, k, sampling's shape)."""

    def __init__(self, target_pass, draft_pass, k: int, sampling, capture: bool):
        self.target, self.draft, self.k, self.capture = target_pass, draft_pass, k, capture
        self.sampling = sampling_shape(sampling)
        device, vocab = target_pass.device, target_pass.vocab
        with torch.inference_mode():
            self.temperature = torch.ones((), device=device)  # [] the run's values (use), read at each replay
            self.top_p = torch.ones((), device=device)  # []
            self.meta = torch.zeros(META, dtype=torch.long, device=device)
            self.meta_host = torch.zeros(META, dtype=torch.long, pin_memory=capture)
            self.drafts = torch.zeros(k, dtype=torch.long, device=device)  # [k]
            self.q = torch.zeros(k, vocab, device=device)  # [k, V] the drafts' warped distributions (greedy: logits)
            self.draft_race = torch.ones(k, vocab, device=device)  # [k, V] Exp(1) noise for the drafts' draws
            self.u = torch.zeros(k, device=device)  # [k] uniform noise of the acceptance test
            self.race = torch.ones(vocab, device=device)  # [V] noise of the target's own draw
        self.meta_view = self.meta_host.numpy()
        self._drafting: dict[int, object] = {}
        self._verifying = None
        self.use(sampling)

    def use(self, sampling: SamplingParams) -> None:
        """This run's temperature and top-p (of this program set's shape)."""
        with torch.inference_mode():
            self.temperature.fill_(sampling.temperature or 1.0)
            self.top_p.fill_(sampling.top_p)

    def _draft_widths(self) -> range:
        """The k' of every drafting program (none without a draft)."""
        return range(1, self.k + 1) if self.draft is not None else range(0)

    def pending(self) -> int:
        """How many programs capture_all would make."""
        return sum(kp not in self._drafting for kp in self._draft_widths()) + (self._verifying is None)

    def capture_all(self) -> int:
        """Make every program not made yet (each k' <= k), with the caches' pointers at 0; -> how many."""
        new = self.pending()
        if new:
            self.set_meta(0, 0, 0, 0, 0, 0)
            for kp in self._draft_widths():
                self.drafting(kp)
            self.verifying()
        return new

    def set_meta(self, *values: int) -> None:
        self.meta_view[:] = values
        with torch.inference_mode():
            self.meta.copy_(self.meta_host, non_blocking=True)

    def draw_noise(self, generator: torch.Generator) -> None:
        with torch.inference_mode():
            exponential_noise_(self.draft_race, generator)
            self.u.uniform_(generator=generator)
            exponential_noise_(self.race, generator)

    def drafting(self, kp: int):
        if kp not in self._drafting:
            with torch.inference_mode():
                self._drafting[kp] = program(lambda: self._draft(kp), self.capture)
        return self._drafting[kp]

    def verifying(self):
        if self._verifying is None:
            with torch.inference_mode():
                self._verifying = program(self._verify, self.capture)
        return self._verifying

    def _draft(self, kp: int) -> torch.Tensor:
        d, greedy = self.draft, self.sampling.greedy
        d.cache.pointer.copy_(self.meta[4])
        logits = d(self.meta[0:2], keep=1)  # [1, V]
        for i in range(kp):
            if greedy:  # q keeps the logits: verify takes the two probabilities shown from them
                token, row = logits.argmax(dim=-1), logits  # [1], [1, V]
            else:
                row = warp(logits, self.sampling, self.temperature, self.top_p)  # [1, V]
                token = race_draw(row, self.draft_race[i:i + 1])  # [1]
            self.drafts[i:i + 1].copy_(token)
            self.q[i:i + 1].copy_(row)
            if i + 1 < kp:
                logits = d(self.drafts[i:i + 1], keep=1)
        return self.drafts

    def _verify(self) -> torch.Tensor:
        """-> report [3k + 4] float32 (token ids are exact in float32 below 2^24)."""
        t, k, x, limit = self.target, self.k, self.drafts, self.meta[3]
        t.cache.pointer.copy_(self.meta[5])
        logits = t(torch.cat([self.meta[2:3], x]), keep=k + 1)  # [k+1, V]: one pass
        greedy = self.sampling.greedy
        if greedy:
            n, nxt = verify_greedy(logits, x, limit)
        else:
            p = warp(logits, self.sampling, self.temperature, self.top_p)  # [k+1, V]
            n, nxt = accept_sampled(p, self.q, x, self.u, self.race, limit)
        rows = torch.cat([torch.arange(k, device=x.device), n.view(1)])  # [k+1]: x_1..x_k's rows, then next's
        tokens = torch.cat([x, nxt.view(1)])  # [k+1]
        parts = [n.view(1).float(), nxt.view(1).float(), x.float(),
                 softmax_at(logits, rows, tokens) if greedy else p[rows, tokens]]
        if self.draft is not None:  # q's rows (next's row past the last draft: the last draft's)
            q_rows = rows.clamp(max=k - 1)
            parts.append(softmax_at(self.q, q_rows, tokens) if greedy else self.q[q_rows, tokens])
        return torch.cat(parts)


def programs_for(store: OrderedDict, target_pass, draft_pass, k: int, sampling, capture: bool) -> Programs:
    """The program set for these passes, k and sampling's shape, from `store` (kept per pair) or made
    now, set to this sampling's values."""
    key = (id(target_pass.cache), id(draft_pass.cache) if draft_pass else None, k, sampling_shape(sampling),
           target_pass.vocab)
    with STORING:  # runs beside each other (PLAYGROUND_CONCURRENCY > 1) share the pair's store
        found = store.get(key)
        if found is None:
            found = store[key] = Programs(target_pass, draft_pass, k, sampling, capture)
            while len(store) > MAX_PROGRAMS:
                store.popitem(last=False)
        store.move_to_end(key)
    found.use(sampling)  # the run holds these caches: no other run uses this set meanwhile
    return found


class FusedProposer:
    """Drafts and verifies in one go through a Programs set (see the module's docstring); the round
    loop calls `propose`, then `judge` instead of its own target pass. Without a draft it proposes
    nothing and `verify` is the target alone at verification's width."""
    fuses_rounds = True  # (the run's Prefill says so)

    def __init__(self, programs: Programs, target_runner, draft_runner=None):
        self.programs, self.target, self.draft = programs, target_runner, draft_runner
        self.name = "draft model" if draft_runner is not None else "target only"
        self.seq: list[int] = []
        self.k_used = 0
        self.fed = 0  # positions of seq the draft's cache holds

    def start(self, prompt: list[int]) -> int:
        """Prefill the draft with all prompt tokens but the last (the target's prefill is the loop's)."""
        self.seq = list(prompt)
        if self.draft is None:
            return 0
        self.draft.prefill(torch.tensor(prompt[:-1], device=self.draft.device))
        self.fed = len(prompt) - 1
        return 1

    def propose(self, k: int, ctx) -> Proposal:
        pr, seq = self.programs, self.seq
        kp = min(k, pr.k) if self.draft is not None else 0
        caught = self._catch_up() if kp else 0
        pr.set_meta(seq[-2], seq[-1], seq[-1], kp, len(seq) - 2, len(seq) - 1)
        if not pr.sampling.greedy:
            pr.draw_noise(ctx.generator)
        if kp:
            with torch.inference_mode(), self.draft.decode_threads():
                pr.drafting(kp)()
        self.k_used = kp
        return Proposal(pr.drafts[:kp], pr.q[:kp] if self.draft is not None else None, kp + caught, "")

    def _catch_up(self) -> int:
        """Feed the draft the tokens that rounds without drafting committed (all but the last two,
        which the drafting program feeds), CATCH_UP at a time, padded to CATCH_UP where it fits;
        -> the passes it took."""
        passes = 0
        while self.fed < len(self.seq) - 2:
            chunk = self.seq[self.fed:min(len(self.seq) - 2, self.fed + CATCH_UP)]
            width = CATCH_UP if self.fed + CATCH_UP <= self.draft.capacity else len(chunk)
            self.draft.seek(self.fed)
            with torch.inference_mode(), self.draft.decode_threads():
                self.draft.forward(torch.tensor(chunk + chunk[-1:] * (width - len(chunk)), device=self.draft.device),
                                   keep=1)
            self.fed += len(chunk)
            passes += 1
        return passes

    places_caches = True  # the round loop crops no cache after it: its programs place both caches' pointers

    def judge(self, proposal: Proposal) -> Verdict:
        """In place of the round loop's verify pass: replay the verify program (the acceptance rule inside)
        and read its report, the round's one host sync."""
        with torch.inference_mode(), self.target.decode_threads():
            report = self.programs.verifying()().tolist()
        return read_report(report, len(proposal.tokens), self.programs.k, proposal.probs is not None)

    def commit(self, n_accepted: int, new_tokens: list[int]) -> None:
        self.seq.extend(new_tokens)
        if self.k_used:  # a round that drafted: the draft's cache holds all but the last two
            self.fed = len(self.seq) - 2
