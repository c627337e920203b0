"""What Gradio keeps of an event once it has ended, bounded.

Gradio puts every message of an event (progress, each snapshot a generator yields, the result) in
its session's queue until that session's stream reads it, and keeps up to 2,000 sessions' queues.
A `/call/<name>` caller who never opens the stream (or opens it late, as the README's curl does)
leaves them all there: `/call/generate` sends the whole value at every snapshot (its "simple
format", no diffs), 21.6 MB for one unread 1,900-token compared run of the demo pair; 2,000 such
sessions would hold 43 GB; one session of 400 unread /export events (the run's inputs with a 250 KB
schema, each answered in both boxes) added 330 MB in 26 s. And each `/call/` call is a session of its own, whose state Gradio keeps
among the newest SESSIONS_KEPT: 128 API calls pushed out every page visitor's (the calculator's
history, a run's race replay). Here:
- a progress or queue-position message replaces its event's one not yet read, and a snapshot or the result of
  a simple-format event replaces its snapshots not yet read (each holds the whole value; a late
  reader sees the newest, then the result). The page's stream sends diffs, each needed: kept.
- at most UNREAD_KEPT ended events keep their messages unread, whatever their sessions; past that,
  the messages of the longest unread are forgotten.
- a stream asked for an event whose messages are not held (forgotten, read already, never made) is
  answered at once with the reason (Gradio's broke off mid-answer, or waited forever on a read one).
- a session made for one `/call/` event lets go of its state when the event ends, and a session
  whose events are all read or forgotten, of its emptied set of event ids (Gradio kept one for every
  call) and its empty queue.
Installed on Gradio's Queue class (it is made anew by each `demo.queue()`) at import."""
import collections
import re

from gradio import queueing
from gradio.server_messages import (BaseMessage, EstimationMessage, ProcessCompletedMessage, ProcessGeneratingMessage,
                                    ProgressMessage)

UNREAD_KEPT = 64  # ended events whose messages wait for a reader (an unread compared 1,900-token run: ~1 MB)
STREAM = re.compile(r"/call/(?:v2/)?[^/]+/([^/]+)/?$")  # the route a /call/<name> caller reads its event from
_ended_unread: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()  # (session hash, event
# id), oldest first


def _superseded(message, event) -> type | tuple | None:
    """The kinds of the event's queued messages that `message` makes useless, or None."""
    if isinstance(message, (ProgressMessage, EstimationMessage)):
        return type(message)
    simple = getattr(event.data, "simple_format", False)
    if simple and isinstance(message, (ProcessGeneratingMessage, ProcessCompletedMessage)):
        return ProcessGeneratingMessage
    return None


def _drop(messages, kinds, event_id: str) -> None:
    """Remove the queued messages of `kinds` for `event_id` from an asyncio.Queue (its deque, in place:
    nothing waits on a queue that holds messages)."""
    held = messages._queue
    kept = [m for m in held if not (isinstance(m, kinds) and m.event_id == event_id)]
    if len(kept) < len(held):
        held.clear()
        held.extend(kept)


def _unread(queue, session: str, event_id: str) -> bool:
    messages = queue.pending_messages_per_session.get(session)
    return messages is not None and any(m.event_id == event_id for m in messages._queue)


def _forget_unread(queue) -> None:
    """Let go of what read events leave, and past UNREAD_KEPT ended events unread, of the oldest's messages."""
    for session, event_id in [key for key in _ended_unread if not _unread(queue, *key)]:
        del _ended_unread[session, event_id]
        _let_go_of_ids(queue, session)
    while len(_ended_unread) > UNREAD_KEPT:
        (session, event_id), _ = _ended_unread.popitem(last=False)
        _drop(queue.pending_messages_per_session[session], BaseMessage, event_id)
        queue.pending_event_ids_session.get(session, set()).discard(event_id)
        _let_go_of_ids(queue, session)


def _let_go_of_ids(queue, session: str) -> None:
    """A session whose events have all been read or forgotten: its emptied set of event ids (Gradio
    kept one for every /call/ call), and with nothing queued, its queue (a stream then finds none)."""
    if queue.pending_event_ids_session.get(session, True):
        return
    del queue.pending_event_ids_session[session]
    if (messages := queue.pending_messages_per_session.get(session)) is not None and messages.empty():
        queue.pending_messages_per_session.pop(session, None)


def _let_go_of_state(state_holder, session: str) -> None:
    """Drop a session's state from Gradio's StateHolder (under its lock, as Gradio's own eviction)."""
    with state_holder.lock:
        state_holder.session_data.pop(session, None)
        state_holder.time_last_used.pop(session, None)


_gradios_send = queueing.Queue.send_message


def send_message(self, event, message) -> None:
    """Gradio's Queue.send_message, keeping only what a late reader needs (see the module)."""
    messages = self.pending_messages_per_session.get(event.session_hash)
    if event.alive and messages is not None and (kinds := _superseded(message, event)):
        _drop(messages, kinds, event._id)
    _gradios_send(self, event, message)
    if isinstance(message, ProcessCompletedMessage):
        if event.session_hash == event._id:  # a session made for this one event (a /call/ caller sends none)
            _let_go_of_state(self.blocks.state_holder, event.session_hash)
        _ended_unread[event.session_hash, event._id] = None
        _forget_unread(self)


queueing.Queue.send_message = send_message


def not_held(queue, path: str) -> str:
    """Why the event whose stream `path` asks for has nothing to read, or "" (held, or not such a path)."""
    asked = STREAM.search(path)
    if not asked or queue is None:
        return ""
    event_id = asked.group(1)
    if event_id in queue.event_ids_to_events or any(event_id in ids for ids in queue.pending_event_ids_session.values()):
        return ""
    return (f"nothing of event {event_id[:40]} is held here: a result is kept until it is read once, and only the "
            f"newest {UNREAD_KEPT} results nobody has read")
