"""Draft-length policies: how many tokens the draft may propose in the next round.

fixed      always k.
schedule   transformers' heuristic: start at k/2, +2 after a fully accepted round, -1 after a
           rejection, within 1..k; and (ours) a guess refused at k=1 pauses drafting: the next
           rounds are the target's alone (k=0), then one guess probes, each refused probe doubling
           the pause up to MAX_PAUSE rounds, a kept one ending it. At acceptance ~0 a round of
           k=1 costs a draft step more than the target alone for the same one token (on an H200,
           Qwen2.5-7B/0.5B shapes: 0.74x the target alone with the schedule; 16 paused rounds a
           probe bound that loss near a draft step in 17 tokens).
confidence k is the ceiling; the draft itself stops early when unsure (see DraftModelProposer),
           the idea of llama.cpp's --draft-p-min and DSpark's confidence-scheduled drafting.
"""


class FixedK:
    def __init__(self, k: int):
        self.k = k

    def next_k(self) -> int:
        return self.k

    def observe(self, proposed: int, accepted: int) -> None:
        pass


MAX_PAUSE = 16  # rounds without drafting between probes, at most


class HeuristicK:
    def __init__(self, k_max: int):
        self.k_max = k_max
        self.k = max(1, k_max // 2)
        self.pause = 0  # the length of the current pause (0: drafting)
        self.left = 0  # paused rounds still to come

    def next_k(self) -> int:
        return 0 if self.left else self.k

    def observe(self, proposed: int, accepted: int) -> None:
        if self.left:  # a paused round
            self.left -= 1
            return
        if proposed == 0:
            return
        if accepted == proposed:
            self.k, self.pause = min(self.k_max, self.k + 2), 0
        elif self.k > 1:
            self.k -= 1
        else:  # the one guess refused: pause, twice as long as the last pause
            self.pause = min(MAX_PAUSE, max(1, 2 * self.pause))
            self.left = self.pause


def make_schedule(policy: str, k: int):
    return HeuristicK(k) if policy == "schedule" else FixedK(k)
