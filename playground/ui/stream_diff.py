"""The edits Gradio sends for each value a generator yields after its first, made right.

Gradio (6.31) sends a streamed output as the edits from its last value (gradio.utils.diff), and each
client (gradio_client's apply_diff, the page's own) replays them in order; a "delete" at an index of a
list removes that element, shifting those after it. Gradio shifts the index of every delete it finds
under a list, its elements' own included, once more for each delete before it, so where an element's
list shrinks inside a list (the web API's rounds, each with its tokens) the indices went negative or
past the end: gradio_client raised IndexError mid-stream (a CI run) and the values a client rebuilt
were not the ones yielded (a round's tokens [7, 3] for [7, 8]). Here a list's own trailing elements are
deleted from the last back, so no index shifts, and its elements' edits are left as their lists made them."""
from typing import Any


def diff(old: Any, new: Any, path: list | None = None) -> list[list]:
    """The edits that turn `old` into `new`: [action, path, value], action one of replace, append (a
    string grown at its end), add, delete; each applies to what the ones before it left."""
    path = path or []
    if old == new:
        return []
    if type(old) is not type(new):
        return [["replace", path, new]]
    if isinstance(old, str) and new.startswith(old):
        return [["append", path, new[len(old):]]]
    if isinstance(old, list):
        return _list_edits(old, new, path)
    if isinstance(old, dict):
        return _dict_edits(old, new, path)
    return [["replace", path, new]]


def _list_edits(old: list, new: list, path: list) -> list[list]:
    shared = min(len(old), len(new))
    edits = [edit for i in range(shared) for edit in diff(old[i], new[i], path + [i])]
    edits += [["delete", path + [i], None] for i in reversed(range(shared, len(old)))]  # the last first
    edits += [["add", path + [i], new[i]] for i in range(shared, len(new))]
    return edits


def _dict_edits(old: dict, new: dict, path: list) -> list[list]:
    edits = [edit for key in old if key in new for edit in diff(old[key], new[key], path + [key])]
    edits += [["delete", path + [key], None] for key in old if key not in new]
    edits += [["add", path + [key], new[key]] for key in new if key not in old]
    return edits
