"""Draft-length policies: how many tokens the draft may propose in the next round.

fixed      always k.
schedule   transformers' heuristic: start at k/2, +2 after a fully accepted round, -1 after a
           rejection, within 1..k; and (ours) a guess refused at k=1 where one guess does not pay
           pauses drafting: the next rounds are the target's alone (k=0), then one guess probes,
           each refused probe doubling the pause up to MAX_PAUSE rounds, a kept one ending it.
           A round of k=1 makes 1 + a tokens for 1 + c target passes' time (a: the chance the
           guess is kept, c: a draft pass's time over the target pass's), so it pays only while
           a > c: the running acceptance rate against the running measured c. On an H200 with
           Qwen2.5-7B/0.5B shapes (c = 0.28) the schedule at acceptance ~0 ran at 0.74x the target
           alone without the pause, 0.82x with it (0.85x with joined projections, c = 0.27);
           16 paused rounds a probe bound that loss near one draft pass in 17 tokens, while
           a cheap draft (SmolLM2's feature draft on a CPU) keeps drafting through refusals.
confidence k is the ceiling; the draft itself stops early when unsure (see DraftModelProposer),
           the idea of llama.cpp's --draft-p-min and DSpark's confidence-scheduled drafting.
"""


class FixedK:
    def __init__(self, k: int):
        self.k = k

    def next_k(self) -> int:
        return self.k

    def observe(self, proposed: int, accepted: int, cost: float | None = None) -> None:
        pass


MAX_PAUSE = 16  # rounds without drafting between probes, at most
SMOOTHING = 0.3  # weight of the newest round in the running acceptance rate and cost


def pass_cost(draft_s: float, draft_passes: int, target_s: float) -> float | None:
    """A draft pass's time over the round's target pass's (c above); None when not measured."""
    return draft_s / draft_passes / target_s if draft_passes and target_s > 0 else None


class HeuristicK:
    def __init__(self, k_max: int):
        self.k_max = k_max
        self.k = max(1, k_max // 2)
        self.pause = 0  # the length of the current pause (0: drafting)
        self.left = 0  # paused rounds still to come
        self.rate = 1.0  # running share of judged guesses kept (a), optimistic until seen
        self.cost: float | None = None  # running c, None until a round is timed

    def next_k(self) -> int:
        return 0 if self.left else self.k

    def observe(self, proposed: int, accepted: int, cost: float | None = None) -> None:
        if self.left:  # a paused round
            self.left -= 1
            return
        if proposed == 0:
            return
        judged = accepted + (accepted < proposed)  # the guesses after a refused one were never judged
        self.rate += SMOOTHING * (accepted / judged - self.rate)
        if cost is not None:
            self.cost = cost if self.cost is None else self.cost + SMOOTHING * (cost - self.cost)
        if accepted == proposed:
            self.k, self.pause = min(self.k_max, self.k + 2), 0
        elif self.k > 1:
            self.k -= 1
        elif self.cost is not None and self.rate < self.cost:  # one guess does not pay: pause, twice as
            self.pause = min(MAX_PAUSE, max(1, 2 * self.pause))  # long as the last pause
            self.left = self.pause


def make_schedule(policy: str, k: int):
    return HeuristicK(k) if policy == "schedule" else FixedK(k)
