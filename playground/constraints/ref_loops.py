"""A reference that leads back to the same value without entering a property or an item.

allOf, anyOf, oneOf, not, if/then/else, dependentSchemas and the references themselves apply a
subschema to the value in hand ("in place"); properties, items and the rest apply one to a part of
it. A loop of in-place steps ({"anyOf": [{"$ref": "#"}, {"type": "null"}]}, {"not": {"$ref":
"#/not"}}) checks the same value against the same schema again: JSON Schema leaves its meaning
undefined (2020-12 core, 9.4.1), and a checker that follows it never returns. Both constraint
engines compiled such schemas and every output was reported "could not be checked: nested too
deeply for the checker". They are refused in words, naming the loop. Read on the engines' form
(draft 2020-12 words, where drafts 4-7 have already lost the siblings of $ref that they ignore)."""
from playground.constraints.safety import REF_KEYWORDS, reachable, referenced, resolve
from playground.constraints.schema_keywords import with_pointers
from playground.errors import PlaygroundError

IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
IN_PLACE = ("not", "if")  # (then and else where an if is beside them: alone they are never applied)


def check_no_ref_loop(schema) -> None:
    """Refuse a loop of in-place steps that a reference closes; name its places, first to last."""
    if not isinstance(schema, dict):
        return
    loop = _first_loop(schema)
    if loop:
        names = _names(schema)
        path = " -> ".join(names[id(node)] for node in loop)
        raise PlaygroundError(f"the schema refers back to itself without entering a property or an item ({path}): "
                              "checking a value against it can go round this loop forever, and JSON Schema leaves "
                              "its meaning undefined; drop the reference, or move it under properties or items")


def _first_loop(schema: dict) -> list[dict]:
    """Depth-first over in-place steps from every node the schema reaches: the nodes of the first
    loop found, its start repeated at its end; [] if none. A node left with no loop found below it
    is not walked again: O(nodes + steps) in all."""
    done: set[int] = set()
    targets: dict[tuple[str, str], object] = {}  # (keyword, reference) -> its node: each resolved once
    for start in reachable(schema):
        if id(start) in done:
            continue
        path, on_path, stack = [start], {id(start)}, [iter(_in_place(start, schema, targets))]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                done.add(id(path[-1]))
                on_path.discard(id(path.pop()))
            elif id(step) in on_path:  # (found by identity: an equal node elsewhere is another place)
                return path[[id(node) for node in path].index(id(step)):] + [step]
            elif id(step) not in done:
                stack.append(iter(_in_place(step, schema, targets)))
                path.append(step)
                on_path.add(id(step))
    return []


def _in_place(node: dict, root: dict, targets: dict) -> list[dict]:
    """The subschemas applied to the value `node` is applied to (dicts only: a boolean ends a walk)."""
    steps = [node.get(key) for key in IN_PLACE] + ([node.get("then"), node.get("else")] if "if" in node else [])
    steps += [sub for key in IN_PLACE_LISTS if isinstance(node.get(key), list) for sub in node[key]]
    if isinstance(node.get("dependentSchemas"), dict):
        steps += list(node["dependentSchemas"].values())
    for key in REF_KEYWORDS:
        if isinstance(node.get(key), str):
            if (key, node[key]) not in targets:
                targets[(key, node[key])] = resolve(node[key], root, key)
            steps.append(targets[(key, node[key])])
    return [step for step in steps if isinstance(step, dict)]


def _names(schema: dict) -> dict[int, str]:
    """id(node) -> its place: a JSON pointer, or after the reference that reaches it (`#/port`, a
    node under a plain key, which no keyword walk meets)."""
    names = {id(node): f"#{pointer}" for pointer, node in with_pointers(schema)}
    for ref, target in referenced(schema):
        if id(target) not in names:  # (a node with a place walks no further: its subtree has places too)
            for pointer, node in with_pointers(target):
                names.setdefault(id(node), f"{ref}{pointer}")
    return names
