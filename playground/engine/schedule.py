"""Draft-length policies: how many tokens the draft may propose in the next round.

fixed      always k.
schedule   transformers' heuristic: start at k/2, +2 after a fully accepted round, -1 after a
           rejection, always within 1..k.
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


class HeuristicK:
    def __init__(self, k_max: int):
        self.k_max = k_max
        self.k = max(1, k_max // 2)

    def next_k(self) -> int:
        return self.k

    def observe(self, proposed: int, accepted: int) -> None:
        if proposed == 0:
            return
        self.k = min(self.k_max, self.k + 2) if accepted == proposed else max(1, self.k - 1)


def make_schedule(policy: str, k: int):
    return HeuristicK(k) if policy == "schedule" else FixedK(k)
