"""What Gradio keeps of an event once it has ended, bounded.

Gradio puts every message of an event (progress, each snapshot a generator yields, the result) in
its session's queue until that session's stream reads it, and keeps up to 2,000 sessions' queues.
A `/call/<name>` caller who never opens the stream (or opens it late, as the README's curl does)
leaves them all there: `/call/generate` sends the whole value at every snapshot (its "simple
format", no diffs), 21.6 MB for one unread 1,900-token compared run of the demo pair; 2,000 such
sessions would hold 43 GB; one session of 400 unread /export events (the run's inputs with a 250 KB
schema, each answered in both boxes) added 330 MB in 26 s. And each `/call/` call is a session of
its own, whose state Gradio keeps among the newest SESSIONS_KEPT: 128 API calls pushed out every
page visitor's (the calculator's history, a run's race replay). Here:
- a progress or queue-position message replaces its event's one not yet read; a snapshot of a
  simple-format event replaces its snapshots not yet read (each holds the whole value); a result
  replaces its event's snapshots not yet read, in either format (it holds the whole values: the
  page's client and gradio_client take it whole), unless it is an error (its last snapshot stays).
  A late reader sees the newest snapshot, then the result.
- at most UNREAD_KEPT ended events keep their messages unread, whatever their sessions (a
  cancelled one too: Gradio's /cancel queues its result itself), their results UNREAD_BYTES at most
  together; past either, the messages of the longest unread are forgotten, first of sessions with
  no stream open (a page whose connection is slow is behind, not gone).
- a stream asked for an event whose messages are not held (forgotten, read already, never made) is
  answered at once with the reason (Gradio's broke off mid-answer, or waited forever on a read one).
- a session made for one `/call/` event lets go of its state when the event ends, and a session
  whose events are all read or forgotten, of its emptied set of event ids (Gradio kept one for every
  call) and its empty queue.
Installed on Gradio's Queue class (it is made anew by each `demo.queue()`) by
playground.ui.gradio_patches; the request guard (playground.ui.serving) counts the streams open and passes on cancels."""
import collections
import json
import re
import urllib.parse
from contextlib import contextmanager

from gradio import queueing
from gradio.server_messages import (BaseMessage, EstimationMessage, ProcessCompletedMessage, ProcessGeneratingMessage,
                                    ProgressMessage)

UNREAD_KEPT = 64  # ended events whose messages wait for a reader (an unread compared 1,900-token run: ~1 MB)
UNREAD_BYTES = 64 * 2**20  # their results together (a 64-node token tree's round in JSON: ~5 KB; 2,048 rounds: ~11 MB)
STREAM = re.compile(r"/call/(?:v2/)?[^/]+/([^/]+)/?$")  # the route a /call/<name> caller reads its event from
SESSION_STREAM = re.compile(r"/queue/data/?$")  # the route a page (or gradio_client) reads its session from
CANCEL = re.compile(r"/cancel/?$")
_ended_unread: collections.OrderedDict[tuple[str, str], int] = collections.OrderedDict()  # (session hash, event
# id) -> its result's size in bytes, oldest first
_streams_open: collections.Counter[str] = collections.Counter()  # session hash -> its streams open now


def _superseded(message, event) -> type | tuple | None:
    """The kinds of the event's queued messages that `message` makes useless, or None."""
    if isinstance(message, (ProgressMessage, EstimationMessage)):
        return type(message)
    if isinstance(message, ProcessCompletedMessage):
        return ProcessGeneratingMessage if message.success else None
    if isinstance(message, ProcessGeneratingMessage) and getattr(event.data, "simple_format", False):
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
    """Let go of what read events leave, and past UNREAD_KEPT ended events unread or UNREAD_BYTES of their
    results, of the oldest's messages (the oldest of a session no stream reads, where there is one)."""
    for session, event_id in [key for key in _ended_unread if not _unread(queue, *key)]:
        del _ended_unread[session, event_id]
        _let_go_of_ids(queue, session)
    while len(_ended_unread) > UNREAD_KEPT or (len(_ended_unread) > 1 and sum(_ended_unread.values()) > UNREAD_BYTES):
        oldest = next((key for key in _ended_unread if not _streams_open[key[0]]), next(iter(_ended_unread)))
        del _ended_unread[oldest]
        session, event_id = oldest
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


def _ended(queue, session: str, event_id: str) -> None:
    """An event's result queued: what it holds unread (its size as sent) counted within the bounds above; a
    session whose stream is open reads it at once (a page's run: not serialized again here, on the event loop)."""
    messages = None if being_read(session) else queue.pending_messages_per_session.get(session)
    held = [m for m in messages._queue if m.event_id == event_id] if messages is not None else []
    _ended_unread[session, event_id] = sum(len(m.model_dump_json()) for m in held)
    _forget_unread(queue)


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
        _ended(self, event.session_hash, event._id)


def not_held(queue, path: str, query: bytes = b"") -> str:
    """Why the event whose stream `path` asks for (or the session, `query` naming it) has nothing to
    read, or "" (held, or not such a path). (Gradio's own answer for a session it does not hold
    began a stream, then ended it with an error, logged with a traceback: 5.9 KB of log a request.) An
    event whose reader left keeps its id in Gradio's set, its messages gone: the id is let go of here."""
    if queue is not None and SESSION_STREAM.search(path):
        session = _session_asked(query)
        return "" if session in queue.pending_messages_per_session else f"no session {session[:40]!r} is held here"
    asked = STREAM.search(path)
    if not asked or queue is None:
        return ""
    event_id = asked.group(1)
    session = _session_of(queue, event_id)
    if session is not None and (event_id in queue.event_ids_to_events or session in queue.pending_messages_per_session):
        return ""
    if session is not None:  # its reader left: Gradio let go of its messages, not of its id (a stream opened
        queue.pending_event_ids_session[session].discard(event_id)  # again began, then failed: a traceback each)
        _let_go_of_ids(queue, session)
        return (f"nothing of event {event_id[:40]} is held here: its stream was closed before its result (a run "
                "whose reader leaves stops there; its last snapshot read holds its text so far)")
    return (f"nothing of event {event_id[:40]} is held here: a result is kept until it is read once, and only the "
            f"newest {UNREAD_KEPT} results nobody has read, {UNREAD_BYTES // 2**20} MB of them at most")


@contextmanager
def stream_open(queue, scope: dict):
    """Around a request: where it is a stream of a session's messages, that session counted as read
    by an open stream meanwhile."""
    session = _streamed_session(queue, scope)
    if session is None:
        yield
        return
    _streams_open[session] += 1
    try:
        yield
    finally:
        _streams_open[session] -= 1
        if not _streams_open[session]:
            del _streams_open[session]


def being_read(session: str | None) -> bool:
    """Whether a stream of this session's messages is open now."""
    return bool(session) and _streams_open[session] > 0


def _streamed_session(queue, scope: dict) -> str | None:
    path = scope.get("path", "")
    if queue is not None and SESSION_STREAM.search(path):
        return _session_asked(scope.get("query_string", b"")) or None
    if queue is not None and (asked := STREAM.search(path)):
        return _session_of(queue, asked.group(1)) or asked.group(1)
    return None


def _session_asked(query: bytes) -> str:
    """The session a stream's query names, as Starlette reads it (the last `session_hash`: the first
    passed a session held by the guard, and Gradio streamed another)."""
    return urllib.parse.parse_qs(query.decode("latin-1")).get("session_hash", [""])[-1]


def _session_of(queue, event_id: str) -> str | None:
    """The session of an event queued, running, or ended with its messages held; None for none."""
    if event := queue.event_ids_to_events.get(event_id):
        return event.session_hash
    return next((s for s, ids in queue.pending_event_ids_session.items() if event_id in ids), None)


def on_cancel(queue, path: str, body: bytes, send):
    """The ASGI `send` of a request, which where it is Gradio's /cancel (it queues the event's result
    itself, not through send_message) counts the event as ended before the answer's end goes out."""
    if queue is None or not CANCEL.search(path):
        return send

    async def sending(message: dict) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body"):
            _cancelled(queue, body)
        await send(message)
    return sending


def _cancelled(queue, body: bytes) -> None:
    try:
        call = json.loads(body)
        session, event_id = call["session_hash"], call["event_id"]
    except (ValueError, KeyError, TypeError):
        return
    if isinstance(session, str) and isinstance(event_id, str) and _unread(queue, session, event_id):
        _ended(queue, session, event_id)
