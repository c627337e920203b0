"""The server's memory over many calls, as a Space serves visitors for days: the app started as a
server (`python app.py`), called through its web API by one client, each call a new session (a new
visitor), the calls varied (plain and constrained runs, a changing regex, a new schema every 20 calls,
Compare on, runs cancelled mid-stream, share links and exports, a small sweep). Prints the server's
resident memory (VmRSS) every `--every` calls: it should level off once Gradio's kept sessions
(PLAYGROUND_SESSIONS_KEPT, 128) and the compiled constraints kept are full, and stay there.

    python scripts/bench_server_memory.py [--calls 600] [--every 50] [--preset demo]
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_page import start_app  # noqa: E402

SCHEMA = '{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}'


def resident_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))


def one_call(client, i: int, preset: str) -> None:
    """Call i of the mix: every tenth call of each kind, in turn."""
    prompt = f"def f_{i}(x{i % 7}):\n"
    k, temperature, kind = random.choice([1, 2, 3, 4, 6, 8]), random.choice([0.0, 0.8]), i % 10
    schema = SCHEMA.replace('"a"', f'"a{i}"') if i % 20 == 9 else SCHEMA if kind in (1, 4, 7) else ""
    regex = f"(yes|no|maybe{i % 50})" if kind == 5 else ""
    run = (prompt, preset, k, temperature, 48, i, schema, regex)
    if kind == 3:  # cancelled mid-stream
        job = client.submit(*run[:4], 128, *run[5:], True, api_name="/generate")
        time.sleep(random.uniform(0.2, 1.0))
        job.cancel()
    elif i % 40 == 0:
        client.predict(axis="k", sweep_values="2,4", prompts="", preset=preset, k=k, temperature=temperature,
                       max_new_tokens=16, prompt=prompt, compare=False, api_name="/sweep")
    elif kind == 8:
        setting = dict(preset=preset, k=k, temperature=temperature, prompt=prompt, max_new_tokens=32)
        client.predict(**setting, api_name="/share_link")
        client.predict(**setting, api_name="/export")
    else:
        client.predict(*run, kind == 6, api_name="/generate")  # Compare on every tenth call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--preset", default="demo")
    args = parser.parse_args()
    random.seed(1)
    proc, client = start_app(args.preset)
    try:
        print(f"calls | server RSS (MB)\n0 | {resident_mb(proc.pid)}", flush=True)
        failed = 0
        for i in range(1, args.calls + 1):
            client.reset_session()  # a new session: a new visitor
            try:
                one_call(client, i, args.preset)
            except Exception as exc:  # counted and said: a memory figure over failed calls means less
                failed += 1
                print(f"call {i} failed: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
            if i % args.every == 0:
                print(f"{i} | {resident_mb(proc.pid)}", flush=True)
        print(f"{failed} of {args.calls} calls failed")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
