"""Every module of the waza package imports cleanly with deprecation warnings as errors.

What the next Python removes is deprecated in this one first (``asyncio.AbstractChildWatcher``:
deprecated in 3.12, gone in 3.14), so importing everything under ``-W error::DeprecationWarning``
on the newest interpreter CI runs is how such a use fails here before it fails for a user. The
walk runs in a fresh interpreter, so nothing this test process already imported hides a warning.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The child: walk every package the distribution installs under ``waza``, import each module in
# sorted order, and print one line per module that failed, naming the waza file the error came from
# (a module that merely imports the offender fails too; the origin says which one to fix).
WALK = textwrap.dedent(
    """
    import importlib, importlib.util, pkgutil, sys, traceback

    ROOTS = ["waza", "waza.runner", "waza.protocol", "waza.adapters", "waza.graders", "waza.schemas"]
    # Third-party modules of the optional extras (pyproject.toml): a waza module that needs one that is not
    # installed is skipped, saying which extra would bring it.
    OPTIONAL = {"uvicorn": "view", "starlette": "view", "pyarrow": "parquet", "ray": "ray", "xllamacpp": "local",
                "playwright": "view tests", "mcp": "mocks"}
    names = set()
    folders = []
    for root in ROOTS:
        package = importlib.import_module(root)
        names.add(root)
        folders += list(package.__path__)
        names.update(info.name for info in pkgutil.walk_packages(package.__path__, root + "."))
    for name in sorted(names):
        if name.rsplit(".", 1)[-1] == "__main__":
            continue  # runs the program: importing it is running waza, checked by the CLI tests
        if name == "waza.runner._waza" or name.startswith("waza.runner._waza."):
            continue  # the folder of the ``waza`` package itself, reached again through runner/: walked as ``waza``
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            if top in OPTIONAL and importlib.util.find_spec(top) is None:
                print(f"SKIP {name}: needs {top} (the {OPTIONAL[top]} extra), not installed")
                continue
            raise
        except BaseException as exc:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(tuple(folders))]
            origin = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
            print(f"FAIL {name}: {type(exc).__name__}: {exc} (raised from {origin})")
        else:
            print(f"OK {name}")
    """
)


def test_every_module_imports_without_deprecation_warnings() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", WALK], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL ")]
    origins = sorted({line.rsplit("(raised from ", 1)[-1].rstrip(")") for line in failed})
    assert not failed, f"on Python {sys.version.split()[0]}, raised from {', '.join(origins)}:\n" + "\n".join(failed)
    imported = [line for line in lines if line.startswith("OK ")]
    # The walk found the package (not an empty path): the public API, the engine, the CLI, every grader.
    for module in ("waza", "waza.runner.engine.capture", "waza.runner.cli.app", "waza.graders", "waza.protocol.records"):
        assert f"OK {module}" in imported
