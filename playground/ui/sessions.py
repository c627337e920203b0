"""Which session Gradio forgets first once it holds SESSIONS_KEPT: the oldest of the address that
holds the most, not the oldest of all.

Gradio keeps each session's state (a run's race replay, the calculator's history of runs, the last K
sweep) and, past its capacity, forgot the least recently used. Any request naming a new
session_hash makes a session (a component's server route answering 404 included): 130 such
requests from one address, in 1.7 s, pushed out every visitor reading their results (a red-team
pass). The guard (playground.ui.serving) tells this module which address first named each session;
a flood from one address now pushes out its own sessions. (Addresses as the guard keys them: an IPv6
caller by its /64.)"""
import collections
import threading

from gradio.state_holder import StateHolder

from playground.limits import SESSIONS_KEPT

OWNERS_KEPT = 4 * SESSIONS_KEPT  # sessions whose address is remembered (those past it count as one unknown address)
_owners: collections.OrderedDict[str, str] = collections.OrderedDict()  # session hash -> the address that named it first
_lock = threading.Lock()


def opened_by(session_hash: str, address: str) -> None:
    """Remember the address that first named this session (the guard calls it for each call)."""
    with _lock:
        if session_hash in _owners:
            return
        _owners[session_hash] = address
        while len(_owners) > OWNERS_KEPT:
            _owners.popitem(last=False)


def owner(session_hash: str) -> str:
    return _owners.get(session_hash, "")


class FairStateHolder(StateHolder):
    """Gradio's StateHolder, past its capacity forgetting the oldest session of the address that
    holds the most (the session being used now is never the one forgotten)."""

    def update(self, session_id: str) -> None:
        with self.lock:
            if session_id in self.session_data:
                self.session_data.move_to_end(session_id)
            while len(self.session_data) > self.capacity:
                forgotten = first_to_forget(list(self.session_data), keep=session_id)
                del self.session_data[forgotten]
                self.time_last_used.pop(forgotten, None)
                with _lock:
                    _owners.pop(forgotten, None)


def first_to_forget(held: list[str], keep: str) -> str:
    """Of the sessions held (oldest first), the oldest of the address holding the most, `keep` aside."""
    counts = collections.Counter(owner(s) for s in held)
    return max((s for s in held if s != keep), key=lambda s: counts[owner(s)], default=keep)  # (max: the first, the oldest)

