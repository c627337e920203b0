"""Prompt-lookup branches on a draft's token tree: what followed the latest earlier occurrence of
the current suffix (PromptLookupProposer) is grafted onto the drafted tree, as a path from the root.
Where the draft already drafted the same tokens the graft follows its nodes; from the first token it
did not draft on, the guess hangs as one more branch. The target then verifies both in one pass.

Greedy only: the walk keeps the longest branch holding the target's argmax, whatever proposed it, so
the output is the target's. (Under sampling a looked-up token is not drawn from the draft's q, and
recursive rejection sampling of the siblings would need its own proposal law.) A lookup node was
never run through the draft: it has no cache slot there and no draft probability (q_row -1)."""
from playground.engine.proposers import PromptLookupProposer, Proposal
from playground.engine.tree import TreeProposal, TreeProposer, depth_first


class LookupTreeProposer:
    """A TreeProposer (static or dynamic) whose trees carry up to `length` looked-up tokens."""
    drafts_trees = True

    def __init__(self, tree: TreeProposer, length: int, lookup: PromptLookupProposer | None = None):
        self.tree, self.length = tree, length
        self.lookup = lookup or PromptLookupProposer(tree.runner.device)
        self.name = f"{tree.name} + prompt lookup"

    @property
    def runner(self):
        return self.tree.runner

    def start(self, prompt: list[int]) -> int:
        self.lookup.start(prompt)
        return self.tree.start(prompt)

    def propose(self, k: int, ctx) -> TreeProposal | Proposal:
        """The drafted tree with a looked-up branch, both no deeper than k."""
        drafted = self.tree.propose(k, ctx)
        if not isinstance(drafted, TreeProposal):  # k = 0: no drafts
            return drafted
        guess = self.lookup.guess(min(self.length, k))
        if ctx.guide is not None:
            guess = ctx.guide.allowed_path(guess)
        if not guess:
            return drafted
        self.tree.tree, renumber = graft(drafted, guess)
        self.tree.fed = [None if node is None else renumber[node] for node in self.tree.fed]
        return self.tree.tree

    def commit(self, n_accepted: int, new_tokens: list[int]) -> None:
        self.lookup.commit(n_accepted, new_tokens)
        self.tree.commit(n_accepted, new_tokens)


def graft(tree: TreeProposal, guess: list[int]) -> tuple[TreeProposal, dict[int, int]]:
    """The tree with the path `guess` from the root (existing nodes followed, the rest appended),
    numbered depth first again. -> (the new tree, old node number -> new)."""
    tokens, parents, q_row = list(tree.tokens), list(tree.parents), list(tree.q_row)
    node = -1
    for token in guess:
        match = next((c for c in tree.children(node) if tokens[c] == token), None) if node < len(tree.tokens) else None
        if match is None:
            tokens.append(token), parents.append(node), q_row.append(-1)
            match = len(tokens) - 1
        node = match
    order = depth_first(parents)
    new = {old: i for i, old in enumerate(order)}
    grafted = TreeProposal([tokens[i] for i in order], [new.get(parents[i], -1) for i in order], tree.probs,
                           [q_row[i] for i in order], tree.passes, tree.stop_reason)
    return grafted, {old: new[old] for old in range(len(tree.tokens))}
