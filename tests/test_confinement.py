"""``code`` grader confinement end to end: escapes tried through ``waza grade --grader builtin:code``.

``tests/test_graders_code.py`` tries the escapes against the grader itself; here
each kind (file open, import, subprocess, a loop that never ends, dunder
attributes) goes through the CLI a user runs, and every attempt aims at a marker
file, so "it failed" is proven by the file not existing, not only by a message.
Escapes the AST check catches stop the run before anything runs (exit 2);
the rest run in the isolated evaluator and must fail (or, for a loop, error).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from waza.protocol.records import CaptureResult
from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza

RESULT = orjson.dumps(CaptureResult(id="r", input="do it", output="done").to_dict()) + b"\n"


def grade(*args: str) -> Any:
    return run_waza("grade", "-", *args, input=RESULT, timeout=60)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "escaped"


def runtime_escapes(marker: Path) -> dict[str, dict[str, Any]]:
    """Named code graders whose assertions pass the AST check and must still fail in the evaluator."""
    escapes = {
        "py-open": {"assertions": [f"str(open({str(marker)!r}, 'w'))"]},
        "py-import": {"assertions": ["output.encode('idna')"]},  # a codec lookup imports a module
        "py-loop": {"assertions": ["any(x < 0 for x in range(10 ** 15))"], "timeout": 1},
    }
    if shutil.which("node"):
        escapes |= {
            "js-spawn": {"language": "javascript", "assertions": [f"require('child_process').execSync('touch {marker}')"]},
            "js-process": {
                "language": "javascript",
                "assertions": [
                    "this.constructor.constructor('return process')()"
                    f".mainModule.require('child_process').execSync('touch {marker}')",
                ],
            },
            "js-fs": {
                "language": "javascript",
                "assertions": [
                    f"Object.getPrototypeOf(output).constructor.constructor(\"require('fs').writeFileSync('{marker}', 'x')\")()",
                ],
            },
            "js-loop": {"language": "javascript", "assertions": ["(() => { while (true) {} })()"], "timeout": 1},
            # A Promise is truthy: it must not count as a passed assertion.
            "js-dynamic-import": {
                "language": "javascript",
                "assertions": [
                    f"import('child_process').then((cp) => cp.execSync('touch {marker}'))",
                ],
            },
        }
    return escapes


def test_escapes_that_reach_the_evaluator_fail_and_do_nothing(marker: Path) -> None:
    escapes = runtime_escapes(marker)
    args = []
    for name, config in escapes.items():
        args += ["--grader", f"{name}=builtin:code", "--grader-config", f"{name}={orjson.dumps(config).decode()}"]
    proc = grade(*args)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    [row] = read_jsonl(proc.stdout)
    assert errors("CaptureResult", row) == []
    grades = {g["name"]: g for g in row["grades"]}
    assert set(grades) == set(escapes)
    for name, g in grades.items():
        assert g["pass"] is not True, f"{name} escaped: {g}"
    assert "NameError: name 'open' is not defined" in grades["py-open"]["reasoning"]
    assert "import is not allowed" in grades["py-import"]["reasoning"]
    assert grades["py-loop"]["status"] == "error" and "did not finish within 1s" in grades["py-loop"]["error"]
    if "js-spawn" in grades:
        assert "require is not defined" in grades["js-spawn"]["reasoning"]
        assert "Code generation from strings disallowed" in grades["js-process"]["reasoning"]
        assert "Code generation from strings disallowed" in grades["js-fs"]["reasoning"]
        assert grades["js-loop"]["status"] in ("failed", "error")
        assert "returned a Promise" in grades["js-dynamic-import"]["reasoning"]
    assert not marker.exists()


REFUSED = {
    # kind: (assertion with {m} for the marker path, what the refusal names)
    "subprocess-import": ("__import__('subprocess').run(['touch', {m!r}])", "name '__import__'"),
    "subprocess-os": ("__import__('os').system('touch ' + {m!r})", "name '__import__'"),
    "subprocess-subclasses": (
        "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0](['touch', {m!r}])",
        "'__subclasses__'",
    ),
    "builtins-dict": ("__builtins__['open']({m!r}, 'w')", "name '__builtins__'"),
    "frame-globals": (
        "(x for x in []).gi_frame.f_back.f_globals['__builtins__']",
        "'f_globals'",
    ),  # the outermost attribute is named
    "format-reads-attributes": ("'{{0.__class__.__init__.__globals__}}'.format(output)", "'format'"),
    "look-alike-letters": ("'{{0.__class__}}'.\uff46\uff4f\uff52\uff4d\uff41\uff54(output)", "'format'"),  # fullwidth "format"
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_escapes_the_ast_check_sees_stop_the_run_before_anything_runs(marker: Path, kind: str) -> None:
    template, named = REFUSED[kind]
    assertion = template.format(m=str(marker))
    proc = grade("--grader", "builtin:code", "--grader-config", orjson.dumps({"assertions": [assertion]}).decode())
    assert proc.returncode == 2 and proc.stdout == b""
    message = proc.stderr.decode().strip().splitlines()
    assert len(message) == 1 and "assertions[0]" in message[0] and named in message[0] and "not allowed" in message[0]
    assert not marker.exists()
