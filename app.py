"""Speculative decoding & structured output playground: the Spaces entry point. The page itself
(layout, callbacks, web API) lives in playground/ui/; this file starts it."""
import spaces  # noqa: F401  (first: on ZeroGPU it must load before anything touches CUDA)

import logging
import os

from playground.models.loading import load_pair
from playground.ui.inputs import DEFAULT
from playground.ui.page import demo
from playground.ui.serving import launch_options, queue_options
from playground.ui.warm_up import wanted, warm_up

if os.environ.get("SPACES_ZERO_GPU"):  # ZeroGPU: weights load at start-up, moved to the GPU per call
    load_pair(DEFAULT.target, DEFAULT.draft)

if __name__ == "__main__":
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("playground").setLevel(logging.INFO)  # a user's refused request: one line each
    if wanted():  # the default pair loaded (a GPU: and compiled) before the first visitor
        warm_up(DEFAULT)
    demo.queue(**queue_options()).launch(**launch_options())
