"""Sizes and times a request can ask for, bounded: a public Space must not be held or exhausted by one
request. A host changes those read through `PLAYGROUND_*` environment variables; the others are fixed
where they guard the server itself (a schema's depth, a regex's length). Bounds of a run's own settings
live beside them: k and trees in config.py, the page's slider ranges in ui/share.py (RANGES)."""
import os

from playground.errors import SATURATED, PlaygroundError, shown
from playground.typed import switch


def env_flag(name: str, default: bool) -> bool:
    """A host's on/off setting: 1, true, yes, on or 0, false, no, off (PLAYGROUND_WARM_UP=false warmed up,
    PLAYGROUND_ALLOW_CUSTOM_MODELS=true was off, without a word)."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    try:
        return switch(raw)
    except ValueError:
        raise PlaygroundError(f"environment variable {name} must be 1 or 0 (or true/false, yes/no, on/off), got {raw[:40]!r}") from None


SWITCHES = frozenset({  # every PLAYGROUND_* variable the code reads (tests/test_readme.py holds it to the code and the README)
    "ALLOW_CUSTOM_MODELS", "CACHE", "COMPILED_PASSES", "COMPILE_MIB", "COMPILE_SECONDS", "CONCURRENCY",
    "CONSTRAINT_RUN_SECONDS", "CONSTRAINT_STEP_MS", "CPU_DTYPE", "DECODE_THREADS", "DEVICE_RUNS_PER_CLIENT",
    "EXPERIMENT_SECONDS", "EXPERIMENT_SHARE_SECONDS", "FOLD_GQA", "FUSED_LAYERS", "FUSE_PROJECTIONS", "GPU_SECONDS",
    "GQA_ATTENTION", "MAX_EXPERIMENT_TOKENS", "MAX_GRAMMAR_CHARS", "MAX_NEW_TOKENS", "MAX_PROMPT_CHARS", "MAX_REPEAT",
    "MAX_REQUEST_MIB", "MAX_SAMPLES", "MAX_SCHEMA_CHARS", "MAX_SWEEP_PROMPTS", "MAX_SWEEP_VALUES", "MAX_SYSTEM_CHARS",
    "OPEN_IN_ALL", "OPEN_PER_CLIENT", "PDL", "PRESET", "PRESETS", "PROXY_HOPS", "QUEUE_SIZE", "QUICK_PER_LANE",
    "REGIONAL_COMPILE", "ROW_KERNEL", "ROW_LAYERS", "RUN_SECONDS", "RUN_SHARE_SECONDS", "SESSIONS_KEPT", "WARM_UP"})


def unknown_switches(environ=os.environ) -> list[str]:
    """A line for each PLAYGROUND_* variable set that no code reads, with the name it is closest to: a misspelt one
    was ignored without a word (CONCURENCY=2, one R short, served one run at a time; a misspelt COMPILED_PASSES=0 would
    let each visitor's run compile for a minute on a CPU Space; a host review)."""
    import difflib
    lines = []
    for name in sorted(n for n in environ if n.startswith("PLAYGROUND_") and n[11:] not in SWITCHES):
        close = difflib.get_close_matches(name[11:], sorted(SWITCHES), n=1)  # (the shared prefix made all names close)
        lines.append(f"environment variable {name[:60]} is no setting of this app, so it is ignored"
                     + (f" (did you mean PLAYGROUND_{close[0]}?)" if close else " (README.md lists them)"))
    return lines


def compile_refused() -> bool:
    """Whether the host turned compiled passes off (PLAYGROUND_COMPILED_PASSES=0): every run is eager, whatever a
    visitor, a link, an API call or the CLI asks. On a public CPU Space a visitor's compile of a new k or
    context size held the device 45-60 s (the demo pair, 2-core CPU) and kept 10-40 MB for the process's life."""
    return not env_flag("PLAYGROUND_COMPILED_PASSES", True)


def env_choice(name: str, default: str, *choices: str) -> str:
    """A host's setting among named choices (an unknown one was the default without a word)."""
    raw = os.environ.get(name, "").strip() or default
    if raw not in choices:
        raise PlaygroundError(f"environment variable {name} must be one of {', '.join(choices)}, got {raw[:40]!r}")
    return raw


def _env_int(name: str, default: int, least: int = 1) -> int:
    """A host's bound: a whole number of `least` or more (-1 made "must be between 1 and -1" of every request)."""
    raw = os.environ.get(name, "")
    try:
        value = int(raw) if raw.strip() else default
    except ValueError:
        raise PlaygroundError(f"environment variable {name} must be an integer, got {raw!r}") from None
    if value < least:
        raise PlaygroundError(f"environment variable {name} must be {least} or more, got {raw!r}")
    return value


def _open_files() -> int:
    """The files this process may open (its soft limit; 8,192 where none is told)."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 8192
    return 8192 if soft == resource.RLIM_INFINITY else soft


CONCURRENCY = _env_int("PLAYGROUND_CONCURRENCY", 1)  # runs sharing the device at once (the app's queue)
MAX_NEW_TOKENS = _env_int("PLAYGROUND_MAX_NEW_TOKENS", 2048)  # per run; also capped by the context length
MAX_PROMPT_CHARS = _env_int("PLAYGROUND_MAX_PROMPT_CHARS", 20_000)
MAX_SYSTEM_CHARS = _env_int("PLAYGROUND_MAX_SYSTEM_CHARS", 4_000)
MAX_NAME_CHARS = 200  # a model id, preset, backend, policy or tree as typed
MAX_SAMPLES = _env_int("PLAYGROUND_MAX_SAMPLES", 64)  # generate --num-samples
MAX_SWEEP_VALUES = _env_int("PLAYGROUND_MAX_SWEEP_VALUES", 16)  # values of one sweep (and bench --k x --temperature)
MAX_SWEEP_PROMPTS = _env_int("PLAYGROUND_MAX_SWEEP_PROMPTS", 32)
MAX_REPEAT = _env_int("PLAYGROUND_MAX_REPEAT", 20)  # bench --repeat
# One experiment of the page (a sweep, Compare drafts): its points x prompts x max new tokens (the tokens it
# asks for; each is written by both sides, up to four measurements, so the time bound holds the rest), and its
# time (it goes on when its caller has gone, holding the device from everyone else).
MAX_EXPERIMENT_TOKENS = _env_int("PLAYGROUND_MAX_EXPERIMENT_TOKENS", 32_768)
EXPERIMENT_SECONDS = _env_int("PLAYGROUND_EXPERIMENT_SECONDS", 900)
# Past this long holding the device, an experiment gives way to a run waiting for it (another
# visitor's, who would otherwise wait up to EXPERIMENT_SECONDS with nothing on the page to say why).
EXPERIMENT_SHARE_SECONDS = _env_int("PLAYGROUND_EXPERIMENT_SHARE_SECONDS", 120, least=0)  # 0: give way at once
# One run (Run on the page, /generate) the same way, its loads counted: its time, and its share
# (a 2,048-token comparison on the CPU Space's default pair held the device 6 minutes, unsaid, from another
# visitor's 8-token run).
RUN_SECONDS = _env_int("PLAYGROUND_RUN_SECONDS", 900)
RUN_SHARE_SECONDS = _env_int("PLAYGROUND_RUN_SHARE_SECONDS", 120, least=0)
GPU_SECONDS = _env_int("PLAYGROUND_GPU_SECONDS", 120)  # ZeroGPU time asked for per run (ui/gpu.py)
# A schema's size bounds only the checks made before compiling (well under a second at the limit);
# the compile itself is bounded in time and memory (COMPILE_SECONDS, COMPILE_BYTES).
MAX_SCHEMA_CHARS = _env_int("PLAYGROUND_MAX_SCHEMA_CHARS", 256_000)  # minified: what the engines read
MAX_SCHEMA_TEXT_CHARS = max(MAX_SCHEMA_CHARS, 2**20)  # as typed (pretty-printing included), before it is parsed
MAX_GRAMMAR_CHARS = _env_int("PLAYGROUND_MAX_GRAMMAR_CHARS", 64_000)
MAX_URL_CHARS = 60_000  # a request's path and query (Gradio reads the page's address with httpx, which stops at 65,536)
MAX_EXPORT_CHARS = 2**20  # the page's Export (its three boxes together): each holds the schema (and the prompt) again,
# JSON-escaped (an emoji is 12 characters): 1 MB sent came back as 17 MB, kept per session and per unread stream
MAX_PROMPTS_FILE_CHARS = 2**24  # a --prompts file (the CLI reads the first --num-prompts of them)
MAX_REGEX_CHARS = 2_000
MAX_SCHEMA_DEPTH = 32  # nesting of JSON objects and arrays in a schema
MAX_SCHEMA_NODES = 2_000  # subschemas in a schema
MAX_PROPERTIES = 256  # properties of one object schema (xgrammar takes 26 s to compile 2,000 optional ones)
MAX_REPEAT_COUNT = 1_000  # n and m of a {n,m} repetition in a regex or schema pattern
MAX_GRAMMAR_SIZE = 100_000  # a grammar with its counted repetitions written out (constraints.grammar_size)
MAX_PATTERN_SIZE = 10_000  # a pattern with its counted repetitions written out, a class by its ranges (7 MB compiled)
COMPILE_SECONDS = _env_int("PLAYGROUND_COMPILE_SECONDS", 20)  # one constraint compile, in a bounded worker
COMPILE_BYTES = _env_int("PLAYGROUND_COMPILE_MIB", 2048) * 2**20  # memory that compile may add
# A constraint's work while writing (masks, consumed tokens, rollbacks), in CPU seconds of the thread
# that does it: an ambiguous grammar's parser can grow its work with every token (xgrammar reached
# 0.15 s a mask after 250 tokens of one, and kept growing), so one call and one run are bounded.
CONSTRAINT_STEP_SECONDS = float(_env_int("PLAYGROUND_CONSTRAINT_STEP_MS", 1000)) / 1000
# A run of 2,048 tokens of 100 JSON records at k=16 spent 1.2 s (llguidance) and 1.7 s (xgrammar) on a
# 2-core Xeon (2026-11-28); an ambiguous grammar held the device (and every visitor behind it) 2 minutes at 120.
# Per generation: a compared run meters its speculation and its target alone apart (about 60 s at most).
CONSTRAINT_RUN_SECONDS = _env_int("PLAYGROUND_CONSTRAINT_RUN_SECONDS", 30)
CHECK_SECONDS = 1.0  # the longest a regex may take to check one output (the `regex` module's timeout)
# The web server: a run's body holds at most a 1 MiB schema as typed plus the prompts (4.9 MB at
# worst when a client escapes every non-ASCII character as \uXXXX; browsers and gradio_client send
# UTF-8). Gradio keeps each session's last value of every input in memory, so only the newest
# SESSIONS_KEPT sessions are kept (not 10,000), and each value is bounded (playground.ui.calls:
# about 4.3 Mi characters for all the inputs of a session, 0.54 GiB over 128 sessions; up to 4 bytes a
# character: 2.2 GiB); at most QUEUED_IN_ALL events wait, each holding its body (512 MiB), and at most 16 bodies
# past 16 KiB are read and checked at once (playground.ui.serving.BodySlot: 128 MiB).
MAX_REQUEST_BYTES = _env_int("PLAYGROUND_MAX_REQUEST_MIB", 8) * 2**20
SESSIONS_KEPT = _env_int("PLAYGROUND_SESSIONS_KEPT", 128)
QUEUE_SIZE = _env_int("PLAYGROUND_QUEUE_SIZE", 32)  # runs waiting for the device, every address together
# Gradio's queue holds as many quick events (a share link, an export, a constraint's check) again beside them:
# it counts both kinds together, and 33 runs from 11 addresses had every visitor's Share link and Export
# refused, "Queue is full" (a Space review); a run past QUEUE_SIZE is refused by the guard instead.
QUEUED_IN_ALL = 2 * QUEUE_SIZE
# Runs on the device (a run, a sweep, Compare drafts, the API's generate) one address may have queued or
# running at once: one caller's 32 calls filled the queue and held everyone else off for 32 runs. A
# page held at most 1 at any join of the browser tests; people behind one shared address (a classroom's
# NAT) share it.
DEVICE_RUNS_PER_CLIENT = _env_int("PLAYGROUND_DEVICE_RUNS_PER_CLIENT", 3)
# Queued events of any kind one address may hold (constraint checks compile for up to COMPILE_SECONDS
# each): a quarter of the queue. The browser tests' pages held at most 2 at once.
QUEUED_PER_CLIENT = max(DEVICE_RUNS_PER_CLIENT, QUEUE_SIZE // 4)
# Quick events one address may hold in one lane (a function's, or the three constraint checks'): a lane serves one
# at a time, and a check or an export may take its 3 s ceiling: 8 from one address held another visitor's check 24 s.
# A page holds at most 3 in one (tests/test_hostile_app counts them: an "always_last" event 2, one running and the
# newest waiting; the export's lane and the thinking budget's take another event each).
QUICK_PER_LANE = _env_int("PLAYGROUND_QUICK_PER_LANE", 3, least=2)  # (1 was taken as 2 without a word; a host review)
# Requests one address may have open at once (a stream lasts as long as its caller keeps it: 20,000
# idle heartbeat streams from one address took every file the server may open; a page holds a few).
OPEN_PER_CLIENT = _env_int("PLAYGROUND_OPEN_PER_CLIENT", 256, least=8)  # (4 was taken as 8 without a word)
# Requests open at once from every address together: an address is the peer's or, behind a proxy of this
# host, the first of X-Forwarded-For, which a caller may forge where the proxy passes on what it was sent
# (a red-team pass: 13,227 idle streams under rotated forged addresses, of a 20,000-file limit, and a
# small run waited 26.8 s). Half the files the process may open, at most 4,096.
OPEN_IN_ALL = max(OPEN_PER_CLIENT, min(_env_int("PLAYGROUND_OPEN_IN_ALL", 4096), _open_files() // 2))
# Proxies in front of this host that append the caller to X-Forwarded-For (nginx's $proxy_add_x_forwarded_for: 1);
# the caller is then that many entries from its end, where a caller cannot write. 0: its first entry, right where
# the front proxy replaces the header with the caller's address, forged where it appends to what the caller sent.
PROXY_HOPS = _env_int("PLAYGROUND_PROXY_HOPS", 0, least=0)


def at_most(value: int, limit: int, what: str, hint: str = "") -> int:
    """Refuse a size over its limit, naming both (a size counted up to SATURATED: past it)."""
    if value > limit:
        said = f"past {SATURATED:,}" if value >= SATURATED else shown(value)
        raise PlaygroundError(f"{what} is {said}, more than this host allows ({limit}){hint}")
    return value


