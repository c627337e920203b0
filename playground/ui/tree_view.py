"""The page's tree view: what the draft proposed in each of the last rounds, as a tree. A token
tree's round shows every node under its parent; a chain's round is the one-branch tree of its
drafts. The kept path is green and ends in the target's own token (corrected or bonus, in its colour);
a node the target judged and refused is struck through in red, one it never judged (under a refused
node, or after a chain's first refused guess) struck through lightly; hover a node for the target's and
the draft's probabilities of it. Nested lists with a bounded height: readable at 30+ nodes."""
import html

from playground.events import ACCEPTED, BONUS, CORRECTED, REJECTED, Round
from playground.ui.render import COLOURS, EOS_MARK, UNDERLINES, drawn_controls, unseen_characters

ROUNDS_SHOWN = 6  # the last rounds drawn; older ones are in the stream and the download

CSS = """
.treeview { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; max-height: 460px;
            overflow-y: auto; padding: 6px 10px; border: 1px solid var(--border-color-primary); border-radius: 8px; }
.treeview .tround { margin: 4px 0 10px; }
.treeview .thead { font-size: 12px; color: var(--block-label-text-color); }
.treeview ul { list-style: none; margin: 0; padding-left: 16px; border-left: 1px dotted #9ca3af; }
.treeview.treeview ul ul { font-size: inherit; margin: 0; padding-inline-start: 16px; }  /* (over Gradio's .prose ul ul,
   90%% at each level: depth 9 was 5 px) */
.treeview li { margin: 1px 0; white-space: nowrap; }
.treeview .tnode { border-radius: 3px; padding: 0 3px; }
.treeview .tnode.kept { background: %s26; border-bottom: 3px solid %s; }
.dark .treeview .tnode.kept { border-bottom-color: %s; }
.treeview .tnode.refused { text-decoration: line-through; color: %s; }
.dark .treeview .tnode.refused { color: #f87171; }  /* (opacity 0.75 over the red: 3.5:1 on white, 2.7:1 on dark) */
.treeview .tnode.refused::before { content: "" / "refused: "; }  /* said by a screen reader, not shown */
.treeview .tnode.unjudged { text-decoration: line-through dotted; color: var(--body-text-color-subdued); }
.treeview .tnode.unjudged::before { content: "" / "never judged: "; }
.treeview .tnode.kept::before { content: "" / "kept: "; }
.treeview .tnode.corrected { border-bottom: 3px double %s; }
.treeview .tnode.bonus { border-bottom: 3px dotted %s; }
.treeview .tnode.corrected::before, .treeview .tnode.bonus::before { content: "" / "the target's own: "; }
""" % (COLOURS[ACCEPTED], UNDERLINES[ACCEPTED][0], COLOURS[ACCEPTED], UNDERLINES[REJECTED][0],
       UNDERLINES[CORRECTED][0], UNDERLINES[BONUS][0])


def tree_view(events: list, eos_ids: frozenset = frozenset()) -> str:
    """HTML of the last rounds' drafts as trees (nothing drafted yet: a note); eos_ids: the tokens that end
    the output, drawn as the stream draws them (they have no text)."""
    rounds = [e for e in events if isinstance(e, Round) and (e.tree or e.drafts)]
    if not rounds:
        return '<div class="treeview" id="tree-view"><span class="thead">each round\'s drafts appear here as a tree</span></div>'
    body = "".join(_round_html(r, eos_ids) for r in rounds[-ROUNDS_SHOWN:])
    if len(rounds) > ROUNDS_SHOWN:  # said, so that a view starting at round 8 does not look cut
        body = (f'<div class="thead">the last {ROUNDS_SHOWN} of {len(rounds)} rounds that drafted (all of them are in '
                f'the stream and the download)</div>') + body
    return (f'<div class="treeview" id="tree-view" tabindex="0" role="region" aria-label="each round\'s drafts '
            f'as trees">{body}</div>')  # (focusable: it scrolls)


def round_tree(r: Round) -> dict:
    """A round's drafts as {tokens, parents, path, text, p_target, p_draft, unjudged}: its token tree, or the
    chain of its drafted tokens (parent: the one before; unjudged: those after the first refused one)."""
    if r.tree:
        n, path = len(r.tree["tokens"]), set(r.tree["path"])
        unjudged = {node for node, parent in enumerate(r.tree["parents"]) if parent >= 0 and parent not in path}
        return {"text": [str(t) for t in r.tree["tokens"]], "p_target": [None] * n, "p_draft": [None] * n,
                "unjudged": unjudged, **r.tree}  # (unjudged: under a node the target refused, its walk ended there)
    drafts = r.drafts
    refused = next((i for i, t in enumerate(drafts) if t.kind == REJECTED), len(drafts))
    return {"tokens": [t.token_id for t in drafts], "parents": list(range(-1, len(drafts) - 1)),
            "path": [i for i, t in enumerate(drafts) if t.kind != REJECTED], "text": [t.text for t in drafts],
            "p_target": [t.p_target for t in drafts], "p_draft": [t.p_draft for t in drafts],
            "unjudged": set(range(refused + 1, len(drafts)))}


def _round_html(r: Round, eos_ids: frozenset) -> str:
    tree = round_tree(r)
    children: dict[int, list[int]] = {}
    for node, parent in enumerate(tree["parents"]):
        children.setdefault(parent, []).append(node)
    head = (f'round {r.index}: {len(tree["tokens"])} node{"s" * (len(tree["tokens"]) != 1)} verified in one pass, '
            f'{len(tree["path"])} kept')
    own = next((t for t in r.tokens if t.kind in (CORRECTED, BONUS)), None)  # the target's token after the kept path
    end = (tree["path"][-1] if tree["path"] else -1, own)
    tree["eos"] = eos_ids
    return f'<div class="tround"><div class="thead">{head}</div>{_list(-1, children, tree, set(tree["path"]), end)}</div>'


def _list(parent: int, children: dict, tree: dict, kept: set, end: tuple) -> str:
    items = "".join(f"<li>{_node(n, tree, kept)}{_list(n, children, tree, kept, end)}</li>" for n in children.get(parent, []))
    if parent == end[0] and end[1] is not None:
        items += f"<li>{_own(end[1], tree['eos'])}</li>"
    return f"<ul>{items}</ul>" if items else ""


def _own(t, eos_ids: frozenset) -> str:
    """The target's own token where the kept path ends: corrected (it refused the drafts there) or bonus."""
    title = (f"the target's own token ({t.kind})" + (f" · p_target {t.p_target:.3f}" if t.p_target is not None else ""))
    eos = t.token_id in eos_ids and not t.text
    title += " · end of sequence" if eos else ""
    title += unseen_characters(t.text)
    text = EOS_MARK if eos else drawn_controls(t.text or "◦").replace("\n", "↵")
    return f'<span class="tnode {t.kind}" title="{html.escape(title)}">{html.escape(text)}</span>'


def _node(n: int, tree: dict, kept: set) -> str:
    title = " · ".join(f"{name} {tree[name][n]:.3f}" for name in ("p_target", "p_draft") if tree[name][n] is not None)
    if tree["p_draft"][n] is None and tree["p_target"][n] is not None:
        title += " · prompt lookup (not drafted)"
    if n in tree["unjudged"]:
        title += " · never judged: it came after a refused guess"  # (its p_target assumes that guess)
    eos = tree["tokens"][n] in tree["eos"] and not tree["text"][n]  # (drawn as the stream draws it)
    if eos:
        title += " · end of sequence"
    elif not tree["text"][n]:
        title += " · no text of its own: part of a character a later token completes"
    title += unseen_characters(tree["text"][n])
    text = EOS_MARK if eos else drawn_controls(tree["text"][n] or "◦").replace("\n", "↵")
    css = "kept" if n in kept else "unjudged" if n in tree["unjudged"] else "refused"
    return f'<span class="tnode {css}" title="{html.escape(title)}">{html.escape(text)}</span>'
