"""Every change this app makes to Gradio itself, made in one place when the page is built (each
patch's own module says why):
- Queue.send_message (playground.ui.leftovers): what Gradio keeps of an ended event, bounded;
- StateHolder (playground.ui.sessions): the sessions of the address holding most forgotten first;
- the traceback module of Gradio's routes and queue, and a filter on uvicorn's error log
  (playground.ui.serving.QUIET_TRACEBACKS): at most 20 tracebacks a minute in the log;
- gradio.utils.diff (playground.ui.stream_diff): the edits a streamed output is sent as, replayed right;
- Blocks.process_api (playground.ui.box_refusals): the request known while the components read a call's inputs;
- the preprocess of sliders, lists, numbers and text boxes (playground.ui.box_refusals): refusals in the box's words.
Importing those modules changes nothing; install() does, and doing it again changes nothing more."""
import logging

import gradio.blocks
import gradio.queueing
import gradio.route_utils
import gradio.routes
import gradio.utils

from playground.ui import box_refusals, leftovers, serving, sessions, stream_diff


def install() -> None:
    gradio.queueing.Queue.send_message = leftovers.send_message
    gradio.routes.StateHolder = sessions.FairStateHolder  # (the App that launch makes holds its sessions in one)
    gradio.routes.traceback = gradio.queueing.traceback = gradio.route_utils.traceback = serving.QUIET_TRACEBACKS
    logging.getLogger("uvicorn.error").addFilter(serving.QUIET_TRACEBACKS)  # (a filter already there is not added again)
    gradio.utils.diff = stream_diff.diff  # (Blocks calls it as utils.diff)
    if not getattr(gradio.blocks.Blocks.process_api, "knows_its_request", False):
        gradio.blocks.Blocks.process_api = box_refusals.process_api_knowing_its_request(gradio.blocks.Blocks.process_api)
    box_refusals.install()
