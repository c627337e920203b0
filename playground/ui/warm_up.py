"""Warming up before the page is served: on a host that compiles by default (a GPU, not ZeroGPU),
the default preset's pair is loaded and what its default run needs is compiled and captured
(speculation and the target alone beside it) before the first visitor comes, who would otherwise
wait for it: the 7B preset's cold compile took about 2 minutes on an H200 (BENCHMARKS.md). A GPU's
static caches hold GPU_CAPACITY positions whatever the prompt, so later prompts compile nothing.
A failure is logged and the page starts anyway: the run that meets it says why."""
import logging
import os
import time

from playground.models.placement import compiles_by_default
from playground.presets import Settings
from playground.ui.live import prepare

log = logging.getLogger("playground.warm_up")


def wanted() -> bool:
    """Whether this host warms up: where runs compile by default, unless PLAYGROUND_WARM_UP=0."""
    return compiles_by_default() and os.environ.get("PLAYGROUND_WARM_UP", "1") != "0"


def warm_up(settings: Settings) -> float | None:
    """Load and compile what a run of these settings needs -> seconds taken, None if it failed."""
    started = time.perf_counter()
    log.info("warming up: %s with %s, before the page is served", settings.target, settings.draft)
    try:
        prepare(settings, progress=lambda fraction, message: log.info("warming up: %s", message))
    except Exception:  # noqa: BLE001 (whatever it is, the page must still start; a run reports it)
        log.exception("warming up failed; the page starts anyway and the first run will say why")
        return None
    took = time.perf_counter() - started
    log.info("warmed up in %.0f s", took)
    return took
