"""Dynamic token trees (EAGLE-2, Li et al. 2024): the tree's shape follows the draft's confidence.

With `branching` (w_1..w_D) and a node `budget`: at depth d, the w_d likeliest children of every
expanded node become candidates, scored by their path probability (the product of the draft's q
along the path from the root); the w_d best-scored new candidates are expanded at the next depth
(one draft pass over them). At the end the `budget` best-scored candidates are verified. A child's
score is at most its parent's, so the kept nodes always include their ancestors.

Greedy only: the target's walk then keeps the longest branch holding its own argmax, whatever the
tree's shape, so the output is the target's. (Under sampling, pruning siblings by their own q would
bias the recursive rejection sampling of playground.engine.tree_verify.)"""
import torch

from playground.engine.proposers import DraftModelProposer, Proposal
from playground.engine.tree import TreeProposal, TreeProposer, depth_first, draft_q


class DynamicTreeProposer(TreeProposer):
    name = "draft dynamic tree"

    def __init__(self, runner, branching: tuple[int, ...], budget: int):
        super().__init__(runner, branching)
        self.budget = budget

    def propose(self, k: int, ctx) -> TreeProposal | Proposal:
        """No deeper than k, as TreeProposer. ctx: the round's DraftContext (greedy)."""
        if k == 0:
            return DraftModelProposer.propose(self, 0, ctx)
        pending = torch.tensor(self.seq[self.runner.length:], device=self.runner.device)
        logits = self.runner.forward(pending, keep=1)  # [1, V]: the root's next-token logits
        tokens, parents, q_row, score, rows, frontier, self.fed = [], [], [], [], [], [-1], []
        shape = self.branching[:k]
        for depth, width in enumerate(shape):
            q = draft_q(logits, frontier, tokens, parents, ctx)  # [len(frontier), V]
            top = q.topk(min(width, q.shape[-1]), dim=-1)
            first, offset = len(tokens), sum(len(r) for r in rows)
            for i, node in enumerate(frontier):
                base = 1.0 if node < 0 else score[node]
                for p, token in zip(top.values[i].tolist(), top.indices[i].tolist()):
                    if p > 0:
                        tokens.append(token), parents.append(node), q_row.append(offset + i), score.append(base * p)
            rows.append(q)
            new = range(first, len(tokens))
            frontier = sorted(new, key=lambda n: -score[n])[:width]  # the likeliest paths grow
            if depth + 1 == len(shape) or not frontier:
                break
            logits = self._feed(frontier, tokens, parents)
        kept = best_nodes(score, parents, self.budget)
        return self._proposal(kept, tokens, parents, q_row, torch.cat(rows), len(rows))

    def _proposal(self, kept, tokens, parents, q_row, probs, passes) -> TreeProposal:
        """The kept candidates numbered depth first; cached nodes that were pruned keep their cache
        slot (None) so commit() finds the accepted ones."""
        local = {n: i for i, n in enumerate(kept)}
        sub = [local.get(parents[n], -1) for n in kept]  # parents among the kept, -1 the root
        order = depth_first(sub)
        new = {old: j for j, old in enumerate(order)}
        self.fed = [new.get(local[node]) if node in local else None for node in self.fed]
        self.tree = TreeProposal([tokens[kept[i]] for i in order], [new.get(sub[i], -1) for i in order],
                                 probs, [q_row[kept[i]] for i in order], passes)
        return self.tree


def best_nodes(score: list[float], parents: list[int], budget: int) -> list[int]:
    """The `budget` best-scored nodes (ties: the earlier drawn), each kept only with its parent, in
    drawn order (a parent is drawn before its children)."""
    ranked = set(sorted(range(len(score)), key=lambda n: (-score[n], n))[:budget])
    kept: list[int] = []
    for n in sorted(ranked):
        if parents[n] < 0 or parents[n] in kept:
            kept.append(n)
    return kept
