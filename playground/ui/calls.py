"""What a call's body may hold, checked before Gradio reads it (playground.ui.serving's guard calls
`refusal` with each request's body).

- Gradio keeps each session's last value of every input it was sent, before the function's own
  checks: one value is at most VALUE_CHARS characters, or what its component was `bound` to (a
  prompt, a schema as typed: past the page's own limit, so the page's message says what is too
  long), checked where a body is longer than that. Three refused 7 MiB values a session, in three
  calls, held 2.6 GiB over 128 sessions (twice what limits.py said).
  A call's fn_index is a whole number (Gradio also reads "43" and 43.0, whose calls were checked
  against no function's bounds: odd_fn_index), and a call past VALUE_CHARS holds in its JSON at most
  MAX_CONTAINERS objects and arrays outside strings (8 MiB of `[{}, {}, ...]` became 600 MB of Python objects in
  Gradio's parses) and MAX_ITEMS values (8 MiB of numbers held the interpreter lock 1.3 s a call).
  A call's session_hash is at most 128 visible ASCII characters (SESSION_HASH; Gradio's page sends
  11, gradio_client a UUID's 36): Gradio keeps it as the key of every session's state, and
  7 MB hashes from one address pinned 2.4 GB that was never given back. A call's own fields hold
  no NaN or infinity (not_finite: Gradio's answer echoed it, FastAPI could not write it, a 500);
  each is a 400 saying what to send.
- A /call/ route naming no endpoint, or a /call/v2/ body naming an input its endpoint lacks, is
  answered 404 or 400 with the names to use (misnamed_input); Gradio answered 500 and logged the
  name whole with a traceback. So is an fn_index naming no function, or one that runs in the page
  alone (unknown_function), and a page's stream of a session not held (playground.ui.leftovers)."""
import json
import math
import re

import anyio

from playground import strict_json

NO_FILES = "no input of this page is a file"
MAX_CONTAINERS = 1000  # JSON objects and arrays in a call, outside its strings (a call of the page: under 10)
MAX_ITEMS = 100_000  # values in a call (its commas and strings, outside strings): 7.7 MiB of [1e308, ...] took 1.3 s of
# the interpreter lock to parse and measure (every thread stalled: a 32-token run took 34 s); 100,000 about 50 ms
STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')  # a JSON string, escapes included (possessive: no backtracking)
SESSION_HASH = re.compile(r"[!-~]{1,128}")  # a session's key: visible ASCII (Gradio's clients send 11 letters and digits,
# or a UUID's 36 characters)
VALUE_CHARS = 16 * 1024  # the most characters one value of a call may carry where its component says no more
_value_chars: dict[int, tuple[int, int, str | None]] = {}  # component id -> (bound, limit, name) (see bound)
CALLED = re.compile(r"/call/(v2/)?([^/]+)/?$")  # Gradio's routes for an endpoint by name (v2: its inputs named)
RUN_BY_NAME = re.compile(r"/run/([^/]+)/?$")  # the route that runs a function by name or, with an fn_index, by it
JSON_ROUTES = re.compile(r"/(queue/join|call/(v2/)?[^/]+|run/[^/]+)/?$")  # routes whose body Gradio reads as JSON
_parsing = anyio.Lock()  # one body parsed at a time: 8 MiB of JSON takes about a second and 250 MB


def bound(component, limit: int, room: float = 1.0, name: str | None = None) -> None:
    """Let `component`'s values carry up to `room` times `limit` characters (past VALUE_CHARS: a
    prompt, a schema as typed): a value past `limit` and within that room reaches the page's own
    check, which says what is too long; a refusal says `limit` and `name` (else the label)."""
    _value_chars[component._id] = int(limit * room), limit, name


async def refusal(body: bytes, blocks, path: str) -> tuple[tuple[int, str] | None, object, str | None]:
    """((status, why) or None to pass it on, the BlockFunction the call runs or None where not known, the
    session_hash it names or None).
    Refused: a JSON body that holds a Gradio file reference anywhere ({"path": ..., "meta": {"_type":
    "gradio.FileData"}}, as gradio_client.utils.is_file_obj_with_meta reads it) or a value past its
    bound (see bound). Read as FastAPI reads it (json.loads: UTF-8, -16 or -32); a body that is not
    JSON is left to Gradio, which refuses it. A short body is parsed here; one where a file's name
    could be (as written, or behind a \\u escape) or longer than VALUE_CHARS, in a worker thread, so
    the server goes on answering meanwhile. (The function tells a run on the device from a quick event:
    a page's first load joins three quick ones at once, and a page with a long prompt sends it with
    each; all counted as runs, the third was refused while the server was slow to answer the first.)
    A body of more than VALUE_CHARS bytes is decoded in the worker too: its text takes up to 4 bytes a
    character (an 8 MiB body with one emoji: 32 MiB), and 128 such bodies decoded while waiting for the
    lock took the server from 0.6 to 5.5 GB (an audit)."""
    if len(body) <= VALUE_CHARS and (text := _decoded(body)) is not None and "FileData" not in text and "\\u" not in text:
        call = parsed(text)
        fn = _function(blocks, _fn_index(call), path)
        if call is None and JSON_ROUTES.search(path):  # (Gradio's own: "There was an error parsing the body")
            return (400, unreadable(text)), fn, None
        return _field_refusal(call, fn, path), fn, _session(call)
    async with _parsing:
        return await anyio.to_thread.run_sync(_refusal_of, body, blocks, path)


def _decoded(body: bytes) -> str | None:
    """A body's text as Starlette's json.loads reads it (UTF-8, -16 or -32; surrogatepass: a lone
    surrogate's bytes skipped every check); None where it is no text (Gradio refuses it)."""
    try:
        return body.decode(json.detect_encoding(body), "surrogatepass")
    except (UnicodeDecodeError, LookupError):
        return None


def _refusal_of(body: bytes, blocks, path: str) -> tuple[tuple[int, str] | None, object, str | None]:
    text = _decoded(body)
    if text is None:
        return (400, unreadable(body)) if JSON_ROUTES.search(path) else None, _function(blocks, None, path), None
    return _refusal(text, blocks, path)


def unreadable(body: str | bytes) -> str:
    """Why a call's body is no JSON, for its caller: the byte that is not UTF-8, the parser's place, a number
    past Python's 4,300 digits, nesting past its recursion (Gradio said "There was an error parsing the body")."""
    if isinstance(body, bytes):
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"the request's body is not UTF-8 text (JSON is): byte {exc.start + 1} is {body[exc.start]:#04x}"
        return "the request's body is not text in UTF-8, -16 or -32"
    try:
        json.loads(body)
    except json.JSONDecodeError as exc:
        return f"the request's body is not JSON: {strict_json.where_wrong(exc)}"
    except RecursionError:
        return "the request's body nests its arrays and objects too deeply to be read"
    except ValueError:  # int() past sys.int_info.default_max_str_digits
        return "the request's body holds a number of more than 4,300 digits"
    return "the request's body could not be read as JSON"


def parsed(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _fn_index(call) -> int | None:
    """A call's fn_index where it is a whole number (Gradio reads "43" and 43.0 as 43 too: not known here)."""
    fn_index = call.get("fn_index") if isinstance(call, dict) else None
    return fn_index if type(fn_index) is int else None


class _FileFound(Exception):
    pass


def _refusal(text: str, blocks, path: str) -> tuple[tuple[int, str] | None, object, str | None]:
    def hook(value: dict) -> dict:  # each object as it is read, innermost first: stops at the first file
        meta = value.get("meta")
        if isinstance(meta, dict) and meta.get("_type") == "gradio.FileData":
            raise _FileFound
        return value
    named = _function(blocks, None, path)
    containers, items = _outside_strings(text, MAX_CONTAINERS, MAX_ITEMS) if len(text) > VALUE_CHARS else (0, 0)
    if containers > MAX_CONTAINERS:  # (Python objects from 8 MiB of [{}, {}, ...]: 600 MB over Gradio's parses of it)
        return (413, f"a call holds over {MAX_CONTAINERS} JSON objects and arrays, more than this host reads"), named, None
    if items > MAX_ITEMS:
        return (413, f"a call holds over {MAX_ITEMS} values, more than this host reads"), named, None
    try:
        call = json.loads(text, object_hook=hook)
    except _FileFound:
        return (403, f"a file in a call's data is not taken: {NO_FILES}"), named, None
    except (ValueError, RecursionError):
        return (400, unreadable(text)) if JSON_ROUTES.search(path) else None, named, None
    if odd := odd_fn_index(call, path):
        return odd, named, None
    fn = _function(blocks, _fn_index(call), path)
    return overlong_value(call, fn) or _field_refusal(call, fn, path), fn, _session(call)


def _session(call) -> str | None:
    session = call.get("session_hash") if isinstance(call, dict) else None
    return session if isinstance(session, str) else None


def _field_refusal(call, fn, path: str) -> tuple[int, str] | None:
    """The checks of a parsed call, short or long, past its values' bounds."""
    return (odd_fn_index(call, path) or odd_session(call) or not_finite(call, path) or private_by_name(call, fn, path)
            or misnamed_input(call, fn, path) or unknown_function(call, fn, path) or miscounted_values(call, fn, path))


def odd_fn_index(call, path: str) -> tuple[int, str] | None:
    """(400, why) for an fn_index that is no JSON integer where Gradio reads it (the queue's join, /run/):
    it reads "94" and 94.0 as 94 too, past every check here, which knows the function by a whole number
    alone ("1000" was a 500 and a traceback, "94" Gradio's own error listing its components' reprs; an API review)."""
    fn_index = call.get("fn_index") if isinstance(call, dict) else None
    if fn_index is None or type(fn_index) is int or CALLED.search(path) or isinstance(fn_index, float) and not math.isfinite(
            fn_index):  # (NaN and 1e400: not_finite's, which says why)
        return None
    return 400, "fn_index must be a whole number (a JSON integer); /gradio_api/info lists the endpoints"


def private_by_name(call, fn, path: str) -> tuple[int, str] | None:
    """(404, why) for a function of the page alone (api_visibility "private": not in the API's listing)
    called by its name on /run/<name> (on /call/, misnamed_input): Gradio's routes ran it all the same
    (an audit ran the page's constraint check, calculator and run history by /call/<name>). The page
    calls its functions by fn_index (the queue's join, /run/predict)."""
    named = RUN_BY_NAME.search(path) if _fn_index(call) is None else None
    if named is None or fn is None or fn.api_visibility != "private":
        return None
    return _no_endpoint(named.group(1))


def _no_endpoint(name: str) -> tuple[int, str]:
    return 404, f"no endpoint {ascii(name[:40])} here; /gradio_api/info lists them"


def odd_session(call) -> tuple[int, str] | None:
    """(400, why) for a session_hash that is not SESSION_HASH's (None, or none given: Gradio's own)."""
    session = call.get("session_hash") if isinstance(call, dict) else None
    if session is None or isinstance(session, str) and SESSION_HASH.fullmatch(session):
        return None
    return 400, "session_hash must be 1 to 128 visible ASCII characters (letters, digits, punctuation)"


def not_finite(call, path: str) -> tuple[int, str] | None:
    """(400, why) for NaN or an infinity (NaN, Infinity, 1e400: Python's JSON reads them) in a call's
    own fields: Gradio's answer to a field it cannot read echoes the value, which FastAPI cannot write
    as JSON: a 500 and a traceback. The inputs (a list in "data", /call/v2/'s named ones) are the
    functions' own to check, and each says what it takes. A body that is no object (`NaN`, `[NaN]`)
    is read whole: Gradio refuses it, echoing it."""
    if not isinstance(call, dict):
        todo = [call]
    elif (called := CALLED.search(path)) and called.group(1):
        return None
    else:
        todo = [value for key, value in call.items() if key != "data" or not isinstance(value, list)]
    while todo:  # (a short body, or one within MAX_CONTAINERS and MAX_ITEMS)
        value = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return 400, f"a call's fields hold {value}, which JSON has no number for"
        todo += value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return None


def _outside_strings(text: str, most_containers: int, most_items: int) -> tuple[int, int]:
    """(objects and arrays, values: commas and strings) in a JSON text, those inside its strings left
    out, counted until either passes its most: one pass, left to right, to an unterminated string (the
    rest is inside it). STRING.sub tried a match at every quote: quadratic in an unterminated string
    of escaped quotes (32 K characters took 2.9 s); 7.6 MiB of empty strings took 2.8 s counted whole."""
    containers, items, pos = 0, 0, 0
    while containers <= most_containers and items <= most_items:
        quote = text.find('"', pos)
        outside = text[pos:] if quote < 0 else text[pos:quote]
        containers += outside.count("{") + outside.count("[")
        items += outside.count(",")
        if quote < 0 or (string := STRING.match(text, quote)) is None:
            break
        items += 1
        pos = string.end()
    return containers, items


def overlong_value(call, fn) -> tuple[int, str] | None:
    """(413, why) for the first value of a call, for the function `fn` it runs, longer than its
    component's bound (VALUE_CHARS where the call names no function of the page); None when all fit.
    Its values: its "data" in the inputs' order, or (/call/v2/<name>, which the README shows) its
    inputs by parameter name, each unknown name's value bounded by VALUE_CHARS."""
    if not isinstance(call, dict):
        return None
    data = call.get("data")
    by_name = dict(zip(fn.input_parameter_names, fn.inputs)) if fn else {}
    if isinstance(data, list):
        values = zip(fn.input_parameter_names if fn else [None] * len(data), fn.inputs if fn else [None] * len(data), data)
    elif data is None:  # the inputs by name: no bound applied to them before
        values = ((name, by_name.get(name), value) for name, value in call.items())
    else:
        return None
    for parameter, component, value in values:
        size = len(value) if isinstance(value, str) else len(json.dumps(value))
        bounded = getattr(component, "_id", None) in _value_chars
        most, limit, name = _value_chars.get(getattr(component, "_id", None), (VALUE_CHARS, VALUE_CHARS, None))
        if size > most:  # (an input not bound has a shorter limit of its own, the function's to say)
            said = "allows" if bounded else "reads in one value"
            return 413, f"{name or _input_name(parameter, component)} is {size} characters, more than this host {said} ({limit})"
    return None


def _input_name(parameter: str | None, component) -> str:
    """An input as a caller names it: its parameter's name (the label was cut mid-phrase: "Schema, pattern
    or grammar (Tab writes spaces here; Esc, the is ..."; an API review), else its label's first words."""
    if component is not None and parameter:
        return ascii(parameter[:40])
    label = getattr(component, "label", None)
    return label.split(" (")[0][:60] if label else "a value"


def misnamed_input(call, fn, path: str) -> tuple[int, str] | None:
    """(404, why) for a /call/ route naming no public endpoint; (400, why) for a /call/<name> body holding
    other than its function's number of values, and for
    a /call/v2/<name> body (inputs by name) naming an input its function lacks (every public one has a
    default for each). Gradio answered each "Internal Server Error" (500) and logged a traceback, the
    name whole (a 7 MB name: 62 MiB of log a second)."""
    called = CALLED.search(path)
    if called is None:
        return None
    by_name = called.group(1) is not None
    if fn is None or fn.api_visibility == "private":  # (/call/<name> ran a private one: an audit)
        return _no_endpoint(called.group(2))
    if not isinstance(call, dict):
        return None
    if not by_name:  # (9 values: Gradio's answer listed its components' reprs; 14: the last dropped unsaid)
        return _miscounted(call, fn, f"/{fn.api_name}", ", in the order /gradio_api/info lists them",
                           f" (or give them by name, each optional: /gradio_api/call/v2/{fn.api_name})")
    names = list(fn.input_parameter_names)
    wrong = next((name for name in call if name not in names and name != "oauth_token"), None)
    return None if wrong is None else (400, f"{ascii(wrong[:40])} is not an input of /{fn.api_name}; its inputs: "
                                            f"{', '.join(names)}")


def miscounted_values(call, fn, path: str) -> tuple[int, str] | None:
    """(400, why) for a call by fn_index (the queue's join; /run/predict, of a function not queued) or by
    name on /run/ holding other than its function's number of values (on /call/, misnamed_input):
    Gradio's join ended in its own error, its components' reprs listed, and logged a traceback; one
    value too many was dropped unsaid (an API review)."""
    if fn is None or fn.fn is None or CALLED.search(path) or not isinstance(call, dict):
        return None
    if fn.queue and not path.rstrip("/").endswith("/queue/join"):  # (Gradio's own word, join the queue, says more)
        return None
    index, public = _fn_index(call), fn.api_visibility != "private" and fn.api_name
    named = f" (/{fn.api_name})" if public else ""
    return _miscounted(call, fn, f"function {index}{named}" if index is not None else f"/{fn.api_name}",
                       ", in the order /gradio_api/info lists them" if public else "", "")


def _miscounted(call: dict, fn, what: str, order: str, hint: str) -> tuple[int, str] | None:
    data = call.get("data")
    if isinstance(data, list) and len(data) != len(fn.inputs):
        return 400, f"{what} takes {len(fn.inputs)} values{order}, not {len(data)}{hint}"
    return None


def unknown_function(call, fn, path: str) -> tuple[int, str] | None:
    """(404, why) for a call by fn_index (the queue's join, /run/predict) naming no function of the
    page, or one that runs in the page alone (no Python function): Gradio answered each 500 and
    printed a traceback (a red-team pass: tiny calls logged 1 MiB a second)."""
    fn_index = _fn_index(call)
    if fn_index is None or CALLED.search(path):
        return None
    if fn is None:
        return 404, f"no function {fn_index} here; /gradio_api/info lists the endpoints"
    return (404, f"function {fn_index} runs in the page alone, not here") if fn.fn is None else None


def _function(blocks, fn_index: int | None, path: str):
    """The BlockFunction a call runs, as Gradio picks it: the name in a /call/ route (its body's
    fn_index is not read there: a forged one had the guard count a /call/generate as a quick event),
    else its fn_index (the queue's join, /run/), else the name in a /run/ route; None for none."""
    called = CALLED.search(path)
    run = None if called or fn_index is not None else RUN_BY_NAME.search(path)
    if called or run:
        name = called.group(2) if called else run.group(1)
        return next((fn for fn in blocks.fns.values() if fn.api_name == name), None)
    return blocks.fns.get(fn_index) if fn_index is not None else None
