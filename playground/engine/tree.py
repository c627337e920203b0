"""Token trees: the draft proposes several continuations at once and the target verifies all of
them in one pass, keeping the longest branch it agrees with (SpecInfer, Medusa, EAGLE-2).

A tree of n nodes hangs under the root, the last committed token. `parents[i]` is node i's parent
(-1: the root); nodes are numbered depth first, siblings in the order the draft ranked them, so a
parent comes before its children and each branch's nodes are consecutive: the verify pass's rows
then form one chain-like run per branch (runner.tree_runs), cheap on the batch-invariant paths. A static tree has `branching[d]`
children under every node of depth d (depth 0 is the root): (3, 2, 1) is 3 + 6 + 6 = 15 nodes.

Drafting: one draft pass per depth over that depth's nodes, each row attending to the cache and its
own ancestors (runner.forward_tree). With a constraint, each node's row is masked by the state after
its own path (the guide consumes the path, fills the mask, rolls back), in drafting and in the verify
pass alike. Greedy: a node's children are the draft's top tokens. Sampling:
they are drawn from q without replacement (the exponential race, one noise draw per node).

Verification (playground.engine.tree_verify): one target pass over [pending tokens, every node] with
the same tree attention, then a walk down the tree. Afterwards both caches keep only the accepted
path (runner.keep)."""
from dataclasses import dataclass

import torch

from playground.config import depths
from playground.engine.proposers import DraftModelProposer, Proposal
from playground.engine.runner import ModelRunner
from playground.engine.sampling import exponential_noise_, mask_logits, warp

@dataclass(slots=True)
class TreeProposal:
    tokens: list[int]  # [n] node tokens
    parents: list[int]  # [n], -1 for the root's children
    probs: torch.Tensor  # [r, V] warped draft q at the root and at each node that was given children
    q_row: list[int]  # [n]: the row of `probs` node i was drawn from (its parent's)
    passes: int  # draft passes spent
    stop_reason: str = ""

    def children(self, node: int) -> list[int]:
        """The nodes under `node` (-1: the root), in drawn order."""
        return [i for i, p in enumerate(self.parents) if p == node]


def path_tokens(node: int, tokens: list[int], parents: list[int]) -> list[int]:
    """The tokens from the root's first child down to `node` (-1: the root itself, no tokens)."""
    path = []
    while node >= 0:
        path.append(tokens[node])
        node = parents[node]
    return path[::-1]


def depth_first(parents: list[int]) -> list[int]:
    """The nodes in depth-first order, siblings in their order (parents come before children)."""
    children: dict[int, list[int]] = {}
    for i, p in enumerate(parents):
        children.setdefault(p, []).append(i)
    order, stack = [], children.get(-1, [])[::-1]
    while stack:
        node = stack.pop()
        order.append(node)
        stack += children.get(node, [])[::-1]
    return order


def ancestors(parents: list[int]) -> torch.Tensor:
    """[n, n] bool: row i sees node j when j is i or one of its ancestors."""
    sees = torch.eye(len(parents), dtype=torch.bool)
    for i, p in enumerate(parents):
        if p >= 0:
            sees[i] |= sees[p]  # parents come first: their rows are complete
    return sees


def verify_rows(parents: list[int], pending: int, cached: int):
    """The target's verify pass over `pending` committed tokens (causal; the last is the root) and
    then every node, after `cached` positions. -> (positions [m], visible [m, cached + m])."""
    m = pending + len(parents)
    visible = torch.zeros(m, cached + m, dtype=torch.bool)
    visible[:, :cached] = True
    visible[:pending, cached:cached + pending] = torch.ones(pending, pending, dtype=torch.bool).tril()
    visible[pending:, cached:cached + pending] = True  # every node sees all pending tokens
    visible[pending:, cached + pending:] = ancestors(parents)
    root = cached + pending - 1
    positions = list(range(cached, cached + pending)) + [root + d for d in depths(parents)]
    return torch.tensor(positions), visible


class TreeProposer(DraftModelProposer):
    """A draft model drafting a static token tree (`branching` children per node at each depth);
    its prefill is the chain's (DraftModelProposer.start)."""
    name = "draft tree"
    drafts_trees = True  # (its last rounds may draft nothing, a chain's empty proposal: the run's Prefill says so)

    def __init__(self, runner: ModelRunner, branching: tuple[int, ...]):
        super().__init__(runner)
        self.branching = tuple(branching)
        self.tree: TreeProposal | None = None
        self.fed: list[int] = []  # the nodes cached this round, in cache order (after the committed tokens)

    def propose(self, k: int, ctx) -> TreeProposal | Proposal:
        """The tree `branching`, no deeper than k (the token budget's last rounds); k = 0: no
        drafts (a chain's empty proposal). ctx: the round's DraftContext."""
        if k == 0:
            return super().propose(0, ctx)
        pending = torch.tensor(self.seq[self.runner.length:], device=self.runner.device)
        logits = self.runner.forward(pending, keep=1)  # [1, V]: the root's next-token logits
        tokens, parents, q_row, rows, frontier, self.fed = [], [], [], [], [-1], []
        shape = self.branching[:k]
        for depth, width in enumerate(shape):
            q = draft_q(logits, frontier, tokens, parents, ctx)  # [len(frontier), V]
            first = len(tokens)
            for i, node in enumerate(frontier):
                for token in draw_children(q[i], width, ctx):
                    tokens.append(token)
                    parents.append(node)
                    q_row.append(sum(len(r) for r in rows) + i)
            rows.append(q)
            frontier = list(range(first, len(tokens)))
            if depth + 1 == len(shape) or not frontier:
                break
            logits = self._feed(frontier, tokens, parents)
        probs = torch.cat(rows)  # [r, V]
        order = depth_first(parents)
        number = {node: i for i, node in enumerate(order)}  # drafted depth by depth -> depth first
        self.fed = [number[node] for node in self.fed]
        self.tree = TreeProposal([tokens[i] for i in order], [number.get(parents[i], -1) for i in order],
                                 probs, [q_row[i] for i in order], len(rows))
        return self.tree

    def _feed(self, frontier: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
        """One draft pass over a depth's nodes, each seeing the committed tokens, its cached
        ancestors and itself. -> logits [len(frontier), V]."""
        committed, device = len(self.seq), self.runner.device
        sees = ancestors(parents)  # [n, n]
        cached_nodes = sees[frontier][:, self.fed]  # [f, fed]: ancestors among the nodes cached so far
        visible = torch.cat([torch.ones(len(frontier), committed, dtype=torch.bool), cached_nodes,
                             torch.eye(len(frontier), dtype=torch.bool)], dim=1)
        depth = depths(parents)
        positions = torch.tensor([committed - 1 + depth[i] for i in frontier])
        logits = self.runner.forward_tree(torch.tensor([tokens[i] for i in frontier], device=device),
                                          positions.to(device), visible.to(device), nodes=frontier,
                                          parents=[parents[i] for i in frontier])
        self.fed += frontier
        return logits

    def commit(self, n_accepted: int, new_tokens: list[int]) -> None:
        """Keep the accepted path's cached nodes in the draft's cache (they follow the committed
        tokens), forget the other branches."""
        start = len(self.seq)  # the committed tokens were all cached by propose()
        if self.tree is not None and self.runner.length > start:
            path = follow(self.tree, new_tokens[:n_accepted])
            cached = [start + self.fed.index(node) for node in path if node in self.fed]
            self.runner.keep(start, cached)
        self.seq.extend(new_tokens)
        self.runner.crop(min(self.runner.length, len(self.seq) - 1))
        self.tree = None


def draft_q(logits: torch.Tensor, frontier: list[int], tokens: list[int], parents: list[int], ctx) -> torch.Tensor:
    """The frontier's warped draft probabilities [f, V], each node's row masked by its own path's
    constraint state when there is a constraint."""
    if ctx.guide is not None:
        logits = mask_logits(logits, ctx.guide.path_masks([path_tokens(n, tokens, parents) for n in frontier]))
    return warp(logits, ctx.sampling)


def draw_children(q: torch.Tensor, width: int, ctx) -> list[int]:
    """A node's children: the draft's top `width` tokens (greedy), or `width` drawn from q without
    replacement: the largest q_j / E_j with E_j ~ Exp(1) independent, in order (only q > 0)."""
    width = min(width, int((q > 0).sum()))
    if ctx.sampling.greedy:
        return q.topk(width).indices.tolist()
    race = exponential_noise_(torch.empty_like(q), ctx.generator)
    return (q / race).topk(width).indices.tolist()


def follow(tree: TreeProposal, tokens: list[int]) -> list[int]:
    """The nodes spelling `tokens` from the root (siblings hold distinct tokens)."""
    path, node = [], -1
    for token in tokens:
        node = next(c for c in tree.children(node) if tree.tokens[c] == token)
        path.append(node)
    return path
