"""Warming up before the page is served: the default preset's pair is loaded, and on a host that
compiles by default (a GPU, not ZeroGPU) what its default run needs is compiled and captured
(speculation and the target alone beside it), before the first visitor comes, who would otherwise
wait for it: the 7B preset's cold compile took 82 s on an H200 (BENCHMARKS.md); on a CPU,
SmolLM2's target is converted from its GGUF file on a fresh machine, 30 s (1.6 s in a later
process). A GPU's static caches hold GPU_CAPACITY positions whatever the prompt, so later prompts
compile nothing. A failure is logged and the page starts anyway: the run that meets it says why.
The loading goes on an engine thread, where runs go (playground.ui.pacing: a thread that multiplies
keeps a team of OpenMP workers, and a second team slows every run's products).
ZeroGPU loads the default pair's weights on the CPU as app.py is imported instead (its GPU is lent per call:
weights_on_zero_gpu), a failure logged there too."""
import logging
import time

from playground.errors import PlaygroundError
from playground.limits import env_flag
from playground.session.host import on_zero_gpu, weights_at_start
from playground.presets import Settings
from playground.ui.live import prepare
from playground.ui.pacing import on_engine

log = logging.getLogger("playground.warm_up")


def wanted() -> bool:
    """Whether this host warms up: all but ZeroGPU, unless PLAYGROUND_WARM_UP=0."""
    return not on_zero_gpu() and env_flag("PLAYGROUND_WARM_UP", True)


def warm_up(settings: Settings) -> float | None:
    """Load (and compile, where runs compile) what a run of these settings needs -> seconds taken,
    None if it failed."""
    log.info("warming up: %s with %s, before the page is served", settings.target, settings.draft)
    return _timed("warming up", lambda: on_engine(prepare, settings, lambda fraction, message: log.info("warming up: %s", message)))


def weights_on_zero_gpu(settings: Settings) -> float | None:
    """ZeroGPU: the default pair's weights loaded on the CPU as the app starts (each call moves them to its lent GPU)
    -> seconds taken, None if it failed: logged, and the page starts anyway (a model the hub refused stopped app.py
    with a traceback, the Space down for every other preset)."""
    log.info("loading %s with %s on the CPU, before the page is served (ZeroGPU)", settings.target, settings.draft)
    return _timed("loading the default pair", lambda: weights_at_start(settings.target, settings.draft))


def _timed(what: str, work) -> float | None:
    """work() -> seconds it took, or None where it failed: a refusal in one line, said as a run would say it (its
    20-line traceback told nothing more); anything else with its traceback. The page must start either way."""
    started = time.perf_counter()
    try:
        work()
    except PlaygroundError as exc:
        log.warning("%s refused: %s; the page starts anyway", what, exc)
        return None
    except Exception:  # noqa: BLE001 (whatever it is, the page must still start; a run reports it)
        log.exception("%s failed; the page starts anyway and the first run will say why", what)
        return None
    took = time.perf_counter() - started
    log.info("%s took %.0f s", what, took)
    return took
