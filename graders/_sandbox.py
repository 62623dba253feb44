"""The isolated evaluator of the ``code`` grader's Python assertions.

Run as ``python -I _sandbox.py`` with ``{"assertions", "context", "timeout"}``
on stdin; answers ``{"results": [{"pass", "error"}...]}`` on stdout, or
``{"error": "why"}`` when an assertion ran out of memory: that says nothing
about the agent's output, so the grade is an *error*, not a failed assertion. This file
imports only the standard library so that it can run as a bare script.

Layers, each enough to stop the common escapes on its own:
  1. An AST check (also used by the parent, to reject bad assertions as a
     config error): expressions only, no names or attributes starting with
     ``_`` (``().__class__.__base__.__subclasses__()``), none of the frame /
     generator / code attributes that lead back to real globals
     (``gi_frame``, ``f_back``...), no ``str.format`` (which reads attributes).
  2. A namespace with only the context and a few safe builtins (no ``open``,
     ``__import__``, ``getattr``, ``type``...); ``re`` is a namespace of its
     functions, not the module (whose ``re.enum.sys`` would reach ``os``).
  3. A separate process: resource limits (CPU seconds, 1 GiB of memory, no
     new processes) and an audit hook, installed after setup,
     that refuses every audited operation (open, import, exec of foreign code,
     os.system, subprocess, socket...) except evaluating the assertions.
The parent adds a wall-clock timeout and kills the process group.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import types
from typing import Any

BLOCKED_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_")
BLOCKED_ATTRIBUTES = frozenset({"format", "format_map", "mro"})
MEMORY_LIMIT = 1 << 30

SAFE_BUILTINS: dict[str, Any] = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    for name in (
        "len",
        "any",
        "all",
        "str",
        "int",
        "float",
        "bool",
        "list",
        "dict",
        "set",
        "tuple",
        "min",
        "max",
        "sum",
        "sorted",
        "reversed",
        "enumerate",
        "zip",
        "range",
        "abs",
        "round",
        "map",
        "filter",
        "isinstance",
        "repr",
    )
}
SAFE_RE = types.SimpleNamespace(
    **{
        name: getattr(re, name)
        for name in (
            "compile",
            "search",
            "match",
            "fullmatch",
            "findall",
            "finditer",
            "sub",
            "subn",
            "split",
            "escape",
            "IGNORECASE",
            "I",
            "MULTILINE",
            "M",
            "DOTALL",
            "S",
            "VERBOSE",
            "X",
            "ASCII",
            "A",
        )
    }
)


def problem(expression: str) -> str | None:
    """Why an assertion is not allowed (a syntax error included), or None when it is fine."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        return f"not a Python expression: {exc.msg}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr.startswith(BLOCKED_PREFIXES) or node.attr in BLOCKED_ATTRIBUTES:
                return f"attribute {node.attr!r} is not allowed"
        elif isinstance(node, ast.Name) and node.id.startswith("_"):
            return f"name {node.id!r} is not allowed"
    return None


def _limit(seconds: float) -> None:
    import resource

    cpu = int(seconds) + 1
    for which, value in (
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, MEMORY_LIMIT),
        (resource.RLIMIT_NPROC, 0),
    ):
        _soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, hard))


def _guard(allowed: list[Any]) -> None:
    """Refuse every audited operation except running our own compiled assertions."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "exec" and args and any(args[0] is code for code in allowed):
            return
        raise RuntimeError(f"{event} is not allowed in an assertion")

    sys.addaudithook(hook)


def evaluate(assertions: list[str], context: dict[str, Any], seconds: float) -> list[dict[str, Any]]:
    namespace: dict[str, Any] = {"__builtins__": SAFE_BUILTINS, "re": SAFE_RE, **context}
    compiled: list[Any] = []
    for text in assertions:
        why = problem(text)
        compiled.append(why if why else compile(text, "<assertion>", "eval"))
    _limit(seconds)
    _guard([c for c in compiled if not isinstance(c, str)])
    results = []
    for code in compiled:
        if isinstance(code, str):
            results.append({"pass": False, "error": code})
            continue
        try:
            results.append({"pass": bool(eval(code, namespace)), "error": None})  # eval: the point of this module
        except MemoryError:
            raise
        except BaseException as exc:  # every failure, MemoryError and RecursionError included, is reported
            results.append({"pass": False, "error": f"{type(exc).__name__}: {exc}"[:500]})
    return results


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    try:
        answer: dict[str, Any] = {"results": evaluate(request["assertions"], request["context"], float(request["timeout"]))}
    except MemoryError:
        answer = {"error": f"an assertion ran out of memory (limit {MEMORY_LIMIT >> 20} MiB)"}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
