import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The app under test opens on the fast toy pair; test_default_preset covers the real default.
os.environ.setdefault("PLAYGROUND_PRESET", "demo")
# A constraint compiles in a worker niced by 10 and bounded in wall time: with both cores busy (the other worker,
# Chromium) xgrammar's compile on SmolLM2's vocabulary took 11 s of its 20 (2.2 s idle); the tests that test the
# bound set their own
os.environ.setdefault("PLAYGROUND_COMPILE_SECONDS", "120")

import pytest  # noqa: E402
import torch  # noqa: E402

from tests import tiny  # noqa: E402

# At most two threads a process, shared among pytest-xdist's workers (scripts/test.sh runs one a core):
# on 2 cores, one each
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(max(1, min(2, torch.get_num_threads() // _workers)))


@pytest.fixture(scope="session")
def tokenizer():
    return tiny.byte_bpe_tokenizer()


@pytest.fixture(scope="session")
def target(tokenizer):
    return tiny.tiny_model("qwen2", vocab=len(tokenizer), eos_id=tokenizer.eos_token_id)


@pytest.fixture(scope="session")
def noisy_draft(target):
    return tiny.perturbed_copy(target, noise=0.5)


@pytest.fixture(scope="session")
def saved_pair(tmp_path_factory, tokenizer, target, noisy_draft):
    root = tmp_path_factory.mktemp("pair")
    return tiny.save(target, tokenizer, root / "target"), tiny.save(noisy_draft, tokenizer, root / "draft")


@pytest.fixture(scope="session")
def app_url():
    """The real app on 127.0.0.1 (a free port), stopped after the tests."""
    import socket

    import app
    for attempt in range(5):  # a port found free can be taken before the app binds it (another worker's app): again
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            app.demo.queue(**app.queue_options()).launch(
                server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.launch_options())
            break
        except OSError:  # (Gradio: "Cannot find empty port in range")
            if attempt == 4:
                raise
    yield f"http://127.0.0.1:{port}/"
    app.demo.close()


@pytest.fixture
def costly_part_way(monkeypatch):
    """A constraint past its host's CPU bound after 20 tokens (as a grammar whose parse grows with the output)."""
    from playground.constraints import metered
    real = metered.MeteredMatcher.consume

    def consume(matcher, token):  # the bound met part way (a grammar whose parse grows with the output)
        if matcher.consumed >= 20:
            raise metered.TooCostly("the constraint took 31 s of CPU in this run, more than this host allows (30 s)")
        return real(matcher, token)
    monkeypatch.setattr(metered.MeteredMatcher, "consume", consume)
