"""The server's files per browser session: downloads (a run's JSON, a sweep's CSV), removed after
an hour, and stop flags and run tickets (files, so that a ZeroGPU worker process sees them too).

Downloads are written inside Gradio's own cache folder: Gradio serves a file from there as it is,
where it copies any other file into that folder first (a second copy, bounded by age alone). There
any file is served to whoever names its path, so each name carries 128 random bits (the folder's
name is in every download's address). Gradio removes its files by age (delete_cache in page.py,
which also forgets them); this folder's own pruning comes later, for what Gradio never tracked, and
its byte bound removes the oldest early (each such file stays a line in Gradio's list)."""
import logging
import os
import pathlib
import re
import secrets
import shutil
import tempfile
import time

import gradio as gr
from gradio.utils import get_upload_folder


def own_folder(root: pathlib.Path, prefix: str) -> pathlib.Path:
    """A new folder `<prefix><this pid>-<random>` in root, once the folders of processes that have ended are
    removed: a server stopped by a signal leaves its own (389 of each had built up on one machine). One of this
    process's id is an earlier one's (a container restarted keeps its ids and may keep /tmp): made before this."""
    root.mkdir(parents=True, exist_ok=True)
    for old in root.glob(f"{prefix}*"):
        owner = old.name[len(prefix):].split("-")[0]
        if old.is_dir() and (owner == str(os.getpid()) or not _alive(owner)):
            shutil.rmtree(old, ignore_errors=True)
    return pathlib.Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


def _alive(pid: str) -> bool:
    """Whether the process of this id runs (a name without one, from before ids were written: no)."""
    if not pid.isdigit() or not 0 < int(pid) < 2**22:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's: it runs)
        pass
    return True


DOWNLOADS = own_folder(pathlib.Path(get_upload_folder()), "playground-downloads-")  # run JSON and sweep CSV files
STOPS = own_folder(pathlib.Path(tempfile.gettempdir()), "playground-stops-")  # a file per session whose run must stop
DOWNLOAD_TTL_S = 3600  # Gradio removes older downloads (delete_cache in page.py, every SWEEP_S)
SWEEP_S = 600
DOWNLOADS_MAX_BYTES = 256 * 2**20  # past this the oldest downloads go first (a run's file is at most about 1 MB)
STOPS_MAX_FILES = 4096  # past this the oldest stop flags and tickets go first: a script's made-up sessions
TIDY_EVERY = 64  # flags and tickets written between two tidyings of their folder (each reads the whole folder)
_written = 0  # flags and tickets written since the folder was last tidied
log = logging.getLogger("playground.ui")


def write_download(write, prefix: str, suffix: str) -> str | None:
    """A file in this app's own download folder, named unguessably, where files older than an hour
    are removed, and the oldest past DOWNLOADS_MAX_BYTES in all."""
    _prune(DOWNLOADS, DOWNLOAD_TTL_S + 2 * SWEEP_S)
    _cap(DOWNLOADS, DOWNLOADS_MAX_BYTES)
    prefix, suffix = (re.sub(r"[^A-Za-z0-9_.-]|\.\.", "_", part)[:40] for part in (prefix, suffix))  # (a name, no path)
    path = DOWNLOADS / f"{prefix}{secrets.token_hex(16)}{suffix}"
    try:
        with open(path, "x", encoding="utf-8", errors="backslashreplace") as f:  # a lone surrogate: \udXXX, JSON's own escape
            write(f)
        return str(path)
    except OSError as exc:
        log.warning("could not write a download: %s", exc)
        return None


def _prune(folder: pathlib.Path, age: float) -> None:
    """Remove the folder's files older than `age` seconds."""
    for old in folder.glob("*"):
        try:
            if time.time() - old.stat().st_mtime > age:
                old.unlink()
        except OSError:
            pass


def _cap(folder: pathlib.Path, most: int, count=lambda size: size) -> None:
    """Remove the folder's oldest files until the rest hold at most `most` bytes (or, with
    count=lambda size: 1, files)."""
    found = []
    for path in folder.glob("*"):
        try:
            stat = path.stat()
            found.append((stat.st_mtime, count(stat.st_size), path))
        except OSError:
            pass
    total = sum(size for _, size, _ in found)
    for _, size, path in sorted(found, key=lambda f: f[0]):
        if total <= most:
            break
        path.unlink(missing_ok=True)
        total -= size


def _tidy_stops() -> None:
    """Every TIDY_EVERY-th flag or ticket written: the older than an hour go (a Stop no job read: a
    session that ran nothing), then the oldest past STOPS_MAX_FILES. Any caller can make up sessions
    (8,778 made-up Stops in 10 min made each call 8x slower, when each read the whole folder)."""
    global _written
    _written += 1
    if _written >= TIDY_EVERY:
        _written = 0
        _prune(STOPS, DOWNLOAD_TTL_S)
        _cap(STOPS, STOPS_MAX_FILES, count=lambda size: 1)


def stop_flag(request: gr.Request | None, job: str = "run") -> pathlib.Path | None:
    """The file that asks this browser session's run (job "run") or experiment (its endpoint's name)
    to stop: a file, so that a ZeroGPU worker process sees it too; None for a caller without a
    session. One per job, so that one tab's Stop never ends the other's work."""
    key = getattr(request, "session_hash", None) or ""
    return STOPS / f"{key}.{job}" if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", key) else None


def request_stop(request: gr.Request, job: str = "run") -> None:
    flag = stop_flag(request, job)
    if flag is not None:
        _tidy_stops()
        flag.touch()


def stop_requested(request: gr.Request | None, job: str = "run") -> bool:
    flag = stop_flag(request, job)
    return flag is not None and flag.exists()


def new_ticket(request: gr.Request | None) -> None:
    """Run clicked: this session's runs get a new ticket; a run holding an older one ends as on Stop
    (the page allows the click only while a run measures its speedup again: it keeps its estimate),
    and the new one starts once it has. Written whole or not at all (a full disk: logged, the
    running one goes on to its end)."""
    path = _ticket(request)
    if path is None:
        return
    _tidy_stops()
    part = path.with_name(path.name + ".part")
    try:
        part.write_text(secrets.token_hex(8))
        part.replace(path)
    except OSError as exc:
        log.warning("could not write a run ticket: %s", exc)
        part.unlink(missing_ok=True)


def run_ticket(request: gr.Request | None) -> str | None:
    """The ticket of this session's latest Run click; None before the first (or over the API)."""
    path = _ticket(request)
    try:
        return path.read_text() if path is not None else None
    except OSError:
        return None


def _ticket(request: gr.Request | None) -> pathlib.Path | None:
    flag = stop_flag(request, "run")
    return flag and flag.with_name(flag.name + "-ticket")


def forget_stop(request: gr.Request | None, job: str = "run") -> None:
    """A new run or experiment was asked for: a Stop pressed before it (after the last one ended)
    must not end it. Called when its button is clicked, so a Stop pressed while it waits in the
    queue still counts."""
    flag = stop_flag(request, job)
    if flag is not None:
        flag.unlink(missing_ok=True)
