"""The walk down a verified token tree (playground.engine.tree): which branch the target keeps.

Greedy: from the root, move to the child holding the target's argmax while there is one; the
argmax where the walk stops is the next token. The output is the target's greedy output.

Sampling: recursive rejection sampling without replacement (Jeon et al. 2024, "Recursive
Speculative Decoding"; SpecInfer's multi-step rule with children drawn without replacement). At a
node with target p and draft q, whose children c_1..c_m were drawn from q without replacement: accept
c_i with probability min(1, p(c_i) / q(c_i)); after a rejection, p <- normalize(max(0, p - q)) and
q <- q with c_i removed, renormalized; when every child is rejected, draw the next token from the
last p. Each accepted or drawn token then has exactly the target's distribution (m = 1 is the
chain's rule), and the walk goes on below an accepted child."""
from dataclasses import dataclass

import torch

from playground.engine.sampling import exponential_noise_, race_draw
from playground.engine.tree import TreeProposal


@dataclass(slots=True)
class TreeVerdict:
    path: list[int]  # accepted nodes, root to leaf
    next: int  # the target's token after the path (corrected or bonus)
    rejected: list[int]  # children judged and refused at the node where the walk stopped


def walk_greedy(tree: TreeProposal, logits: torch.Tensor) -> TreeVerdict:
    """logits [n + 1, V]: the root's row, then each node's. One host read of the argmaxes."""
    choice = logits.argmax(dim=-1).tolist()  # [n + 1]
    path, node = [], -1
    while True:
        kids = tree.children(node)
        want = choice[node + 1]
        hit = next((c for c in kids if tree.tokens[c] == want), None)
        if hit is None:
            return TreeVerdict(path, want, kids)
        path.append(hit)
        node = hit


def walk_sampled(tree: TreeProposal, p: torch.Tensor, generator: torch.Generator | None) -> TreeVerdict:
    """p [n + 1, V] the target's warped rows (root, then nodes); tree.probs the draft's q rows."""
    path, node = [], -1
    while True:
        kids = tree.children(node)
        target = p[node + 1].clone()
        rejected = []
        if kids:
            q = tree.probs[tree.q_row[kids[0]]].to(target).clone()  # siblings share their parent's q
            for child in kids:
                token = tree.tokens[child]
                if torch.rand((), generator=generator, device=target.device) * q[token] < target[token]:
                    break  # accepted: u < p / q
                rejected.append(child)
                target = _normalized((target - q).clamp_(min=0.0), fallback=target)
                q[token] = 0.0
                q = _normalized(q, fallback=q)
            else:
                child = None
            if child is not None:
                path.append(child)
                node = child
                continue
        race = exponential_noise_(torch.empty_like(target), generator)
        return TreeVerdict(path, int(race_draw(target, race)), rejected)


def _normalized(row: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    total = row.sum()
    return row / total if total > 0 else fallback
