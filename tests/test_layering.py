"""The package's import layering: protocol depends on nothing of ours, adapters and graders on protocol
only, the runner on all of them; and no module imports itself back through others.

Read from the source (the AST), so a lazy import inside a function counts as much as one at the top:
it runs sooner or later. Imports under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: folder -> the package it installs as (pyproject's package-dir mapping).
PACKAGES = {"runner/_waza": "waza", "runner": "waza.runner", "protocol": "waza.protocol", "adapters": "waza.adapters",
            "graders": "waza.graders", "schemas": "waza.schemas"}  # fmt: skip

#: top-level part -> the parts of ours it may import.
ALLOWED = {
    "protocol": {"protocol", "schemas"},
    "schemas": {"schemas"},
    "adapters": {"adapters", "protocol", "schemas"},
    "graders": {"graders", "protocol", "schemas"},
    "runner": {"runner", "adapters", "graders", "protocol", "schemas", "waza"},
    "waza": {"runner", "adapters", "graders", "protocol", "schemas", "waza"},
}


#: Inside the runner, top to bottom: a folder imports only the folders on the levels below its own
#: (docs/manual/contributing/layout.md says the same); the runner's own modules (``wording``,
#: ``install_hints``) are the bottom level.
RUNNER_LEVELS: list[set[str]] = [
    {"cli"},
    {"view"},
    {"model_server"},
    {"suites", "benchmarks"},
    {"ray_cluster"},
    {"engine", "reports", "conformance"},
    {"analysis", "grading"},
    {"local_model"},
    {"wording", "install_hints"},
]


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if folder == "runner" and rel[0] == "_waza":
                continue  # the ``waza`` package itself, mapped on its own
            parts = [p for p in rel if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _part(module: str) -> str:
    """The layer a ``waza...`` module belongs to: protocol, adapters, graders, schemas, runner, or waza."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 and pieces[1] in ALLOWED else "waza"


def _runtime_imports(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            # The longest known module the name starts with: ``from . import x`` may name a module or an attribute.
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {module: _runtime_imports(module, path, known) for module, path in modules.items()}


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if _part(target) not in ALLOWED[_part(module)]
    ]
    assert wrong == []


def _room(module: str) -> str | None:
    """The folder (or top module) of the runner a ``waza.runner.X...`` module is in; None outside the runner."""
    pieces = module.split(".")
    return pieces[2] if len(pieces) > 2 and pieces[1] == "runner" else None


def test_inside_the_runner_each_folder_imports_only_the_levels_below_it() -> None:
    level = {room: i for i, rooms in enumerate(RUNNER_LEVELS) for room in rooms}
    rooms = {_room(m) for m in _graph()} - {None}
    assert rooms <= set(level), f"place these in RUNNER_LEVELS (and in layout.md): {sorted(rooms - set(level))}"
    wrong = []
    for module, targets in _graph().items():
        here = _room(module)
        for target in sorted(targets):
            there = _room(target)
            if here is not None and there is not None and there != here and level[there] <= level[here]:
                wrong.append(f"{module} ({here}) imports {target} ({there})")
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_relative_lazy_and_wrong_imports(tmp_path: Path) -> None:
    """The walk resolves relative and function-local imports (else an empty graph would pass both tests)."""
    module = tmp_path / "records.py"
    module.write_text(
        "from .trajectory import Step\n"
        "def later():\n    from waza.runner.engine import specs\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from waza.adapters import base\n"
    )
    known = {"waza.protocol.trajectory", "waza.runner.engine", "waza.runner.engine.specs", "waza.adapters.base"}
    found = _runtime_imports("waza.protocol.records", module, known)
    assert found == {"waza.protocol.trajectory", "waza.runner.engine", "waza.runner.engine.specs"}
    assert _part("waza.runner.engine.specs") not in ALLOWED["protocol"]
    assert "waza.protocol.records" in _graph()["waza.adapters.base"]
