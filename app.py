"""Speculative decoding & structured output playground: the Spaces entry point. The page itself
(layout, callbacks, web API) lives in playground/ui/; this file starts it."""
import spaces  # noqa: F401  (first: on ZeroGPU it must load before anything touches CUDA)

import logging
import sys

from playground.errors import PlaygroundError

try:  # a host's setting refused (PLAYGROUND_*): one line naming it, not the import's traceback
    import torch
    from playground.engine.attention import folds_on
    from playground.engine.layer_regions import by_layer_on
    from playground.models.fused_projections import fuses_on
    from playground.models.loading import load_pair
    from playground.models.placement import cpu_dtype_asked, on_zero_gpu
    from playground.ui.inputs import DEFAULT
    from playground.ui.page import demo
    from playground.ui.serving import launch_options, queue_options
    from playground.ui.warm_up import wanted, warm_up
    cpu_dtype_asked()
    for reads_its_flag in (folds_on, fuses_on, by_layer_on):  # as a GPU model loads or compiles
        # (PLAYGROUND_FOLD_GQA, _FUSE_PROJECTIONS, _REGIONAL_COMPILE): now
        reads_its_flag(torch.device("cuda"))
    WARM_UP = wanted()
except PlaygroundError as exc:
    sys.exit(f"error: {exc}")

if on_zero_gpu():  # ZeroGPU: weights load at start-up, moved to the GPU per call
    load_pair(DEFAULT.target, DEFAULT.draft)

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
