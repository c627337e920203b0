"""The engine's side of its boundary: it speaks token ids and events (no tokenizer, no text, no
constraint internals), and importing it changes nothing global in torch."""
import ast
import inspect
import json
import pathlib
import subprocess
import sys

from playground.engine import speculative

ENGINE = pathlib.Path(speculative.__file__).parent
TEXT_MODULES = ("tokenizers", "transformers.tokenization", "playground.detok", "playground.constraints")


def imported_modules(path: pathlib.Path) -> set[str]:
    """Every module a file imports, inside functions too; `from a import b` counts as a and a.b (so
    `from playground import session` is seen as playground.session, not playground)."""
    tree = ast.parse(path.read_text())
    relative = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert not relative, f"{path}:{relative}: a relative import would slip past these checks: name the module"
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names | {name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
                    for name in (node.module, *(f"{node.module}.{alias.name}" for alias in node.names))}


def test_the_engine_imports_no_text_and_no_constraint_internals():
    for path in ENGINE.glob("*.py"):
        bad = [m for m in imported_modules(path) if m.startswith(TEXT_MODULES)]
        assert not bad, f"{path.name} imports {bad}"
    assert "tokenizer" not in inspect.signature(speculative.speculate).parameters


def test_the_engine_uses_only_the_guides_methods():
    """A proposer may call the guide, never assign to its fields."""
    for path in ENGINE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
            for target in targets:
                assert not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == "guide"), f"{path.name}:{node.lineno} assigns to the guide"


CONFIG = """
import json, sys, torch, torch._dynamo.config as d, torch._inductor.config as i
def snapshot():
    return json.dumps({"dynamo": {k: repr(v) for k, v in d.get_config_copy().items()},
                       "inductor": {k: repr(v) for k, v in i.get_config_copy().items()}}, sort_keys=True)
before = snapshot()
import pkgutil, importlib, playground.engine
for m in pkgutil.iter_modules(playground.engine.__path__):
    importlib.import_module("playground.engine." + m.name)
import playground.session
print(json.dumps({"same": snapshot() == before}))
"""


def test_importing_the_engine_changes_no_torch_configuration():
    out = subprocess.run([sys.executable, "-c", CONFIG], capture_output=True, text=True, timeout=300,
                         cwd=ENGINE.parent.parent, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {"same": True}


# Rooms from the top down: a room may import rooms below it, never one above (UI -> session ->
# engine -> models); constraints sit beside the engine, which only calls the guide it is given.
ROOMS = ["ui", "measure", "session", "engine", "constraints", "models"]
PACKAGE = ENGINE.parent


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "playground" and parts[1] in ROOMS else None


def test_imports_point_down_between_rooms():
    for path in PACKAGE.rglob("*.py"):
        own = room("playground." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        if own is None:
            continue
        for module in imported_modules(path):
            other = room(module)
            if other and other != own:
                assert ROOMS.index(other) > ROOMS.index(own), f"{path.relative_to(PACKAGE)} imports {module}: up a room"


def test_the_constraints_sit_beside_the_engine_and_above_no_model():
    """DESIGN.md's picture hangs the constraints off the session, beside the engine: ROOMS' one order let the engine
    import them and them import the models (a review); neither does, and neither may."""
    for path in PACKAGE.rglob("*.py"):
        own = room("playground." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        banned = {"engine": ("constraints",), "constraints": ("engine", "models")}.get(own, ())
        bad = sorted(m for m in imported_modules(path) if room(m) in banned)
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_the_page_reaches_the_engine_and_the_models_only_through_the_session():
    """DESIGN.md's picture, UI -> session -> engine -> models: the page (and app.py, which starts it) asked
    models and engine modules for host settings directly; it asks playground.session.host now."""
    for path in [*(PACKAGE / "ui").glob("*.py"), PACKAGE.parent / "app.py"]:
        bad = sorted(m for m in imported_modules(path) if room(m) in ("engine", "models"))
        assert not bad, f"{path.name} imports {bad}"


def test_the_cli_and_the_export_do_not_import_the_page():
    """The CLI is the page's peer, and the export is pure text: what they share lives below the UI."""
    for name in ("cli.py", "cli_args.py", "cli_bench.py", "cli_notes.py", "cli_report.py", "__main__.py", "export.py"):
        bad = [m for m in imported_modules(PACKAGE / name) if room(m) == "ui"]
        assert not bad, f"{name} imports {bad}"


def test_the_shared_modules_import_no_room():
    """playground/*.py beside the rooms (config, events, metrics, limits, typed, ...) are what every
    room shares: none imports a room (presets reads models' names and places, and the CLI is a caller)."""
    callers = {"__init__.py", "__main__.py", "cli.py", "cli_args.py", "cli_bench.py", "presets.py"}
    for path in PACKAGE.glob("*.py"):
        if path.name not in callers:
            bad = sorted(m for m in imported_modules(path) if room(m))
            assert not bad, f"{path.name} imports {bad}"


def test_what_reads_events_never_imports_the_engine():
    """metrics, render and plots read events (DESIGN.md): they import nothing that runs a model; nor do the
    race and tree views, drawn from a run's events."""
    allowed = ("playground.events", "playground.metrics", "playground.config", "playground.ui.render",
               "playground.errors")  # (messages' words: no model, no torch)
    for name in ("metrics.py", "ui/render.py", "ui/plots.py", "ui/race.py", "ui/tree_view.py"):
        bad = [m for m in imported_modules(PACKAGE / name) if m.startswith("playground") and not m.startswith(allowed)]
        assert not bad, f"{name} imports {bad}"


def test_only_the_ui_imports_gradio_and_the_engine_writes_no_html():
    """The engine knows token ids, not Gradio, not HTML (DESIGN.md): below the UI nothing imports Gradio, and the
    engine, models and session import no HTML (the CLI and the export escape text too)."""
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        banned = ("gradio", "gradio_client") + (("html",) if parts[0] in ("engine", "models", "session") else ())
        bad = sorted(m for m in imported_modules(path) if m.split(".")[0] in banned)
        assert "ui" in parts or not bad, f"{path.relative_to(PACKAGE)} imports {bad}"
