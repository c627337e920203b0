"""Speculative decoding & structured output playground: the Spaces entry point. The page itself
(layout, callbacks, web API) lives in playground/ui/; this file starts it."""
import spaces  # noqa: F401  (first: on ZeroGPU it must load before anything touches CUDA)

import logging
import sys

from playground.errors import PlaygroundError

try:  # a host's setting refused (PLAYGROUND_*): one line naming it, not the import's traceback
    from playground.session import host
    from playground.ui.inputs import DEFAULT
    from playground.ui.page import demo
    from playground.ui.serving import launch_options, queue_options
    from playground.ui.warm_up import wanted, warm_up, weights_on_zero_gpu
    host.check_settings()
    WARM_UP = wanted()
except PlaygroundError as exc:
    sys.exit(f"error: {exc}")
for unknown in host.unknown_switches():  # (a misspelt name was ignored without a word)
    print(f"warning: {unknown}", file=sys.stderr)

if host.on_zero_gpu():  # ZeroGPU: weights load at start-up, moved to the GPU per call (a failure logged: the page starts)
    weights_on_zero_gpu(DEFAULT)

if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(f"{__doc__}\n\nUsage: python app.py (no options): serves the page on http://127.0.0.1:7860. Its settings are "
              "environment variables (GRADIO_SERVER_PORT, PLAYGROUND_PRESET, ...: README.md, 'Hosting on Hugging "
              "Face Spaces'). The command line: python -m playground --help")
        sys.exit(0)
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("playground").setLevel(logging.INFO)  # a user's refused request: one line each
    if WARM_UP:  # the default pair loaded (a GPU: and compiled) before the first visitor
        warm_up(DEFAULT)
    demo.queue(**queue_options()).launch(**launch_options())
