"""What the README tells a reader to type works as written: every `python -m playground` command
parses with today's CLI (a renamed flag fails here, not in a reader's shell), and the Python API
snippet runs as it stands."""
import pathlib
import re
import shlex

import pytest

from playground.cli_args import build_parser

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def commands() -> list[str]:
    """Every `python -m playground ...` line of the README's shell blocks, continuations joined."""
    lines = "\n".join(fenced("bash")).replace("\\\n", " ").splitlines()
    return [line for line in lines if line.startswith("python -m playground ")]


def test_the_readme_shows_the_cli():
    assert len(commands()) >= 10  # the Command line section, found


@pytest.mark.parametrize("command", commands())
def test_each_readme_command_parses(command):
    argv = shlex.split(command, comments=True)[3:]  # after "python -m playground"
    args = build_parser().parse_args(argv)  # a wrong flag or value: SystemExit(2)
    assert args.command == argv[0]


def test_the_readme_python_snippet_runs():
    snippet = next(block for block in fenced("python") if "from playground import session" in block)
    printed = []
    exec(compile(snippet, "README.md", "exec"), {"print": lambda *a: printed.append(a)})
    text, acceptance = printed[0]
    assert isinstance(text, str) and text and 0 <= acceptance <= 1
