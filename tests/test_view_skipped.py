"""`waza view` names the files and folders it cannot read (stderr), rather than leaving them out unsaid.

As root every file is readable, so the viewer's indexer runs as an unprivileged user (bubblewrap in a user
namespace, with no capabilities): a file with mode 000 and a folder with mode 000 are then unreadable to it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import run_waza, write_jsonl

INDEX = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from waza.runner.view.index import Registry

    registry = Registry(roots=[Path(sys.argv[1])], files=[], inotify=False)
    registry.scan()
    registry.scan()  # a second look says nothing again
    print(sorted(Path(k).name for k in registry.indexes))
    """
)


def test_unreadable_files_and_folders_are_named_once_on_stderr(tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    runs = tmp_path / "runs"
    runs.mkdir()
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    done = run_waza("capture", prompts, "--adapter", "exec", "-o", runs / "good.jsonl", "--", "cat")
    assert done.returncode == 0, done.stderr
    shutil.copy(runs / "good.jsonl", runs / "secret.jsonl")
    (runs / "secret.jsonl").chmod(0)
    locked = runs / "locked"
    locked.mkdir()
    shutil.copy(runs / "good.jsonl", locked / "inside.jsonl")
    locked.chmod(0)
    try:
        as_user = [
            bwrap,
            "--unshare-user",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        probe = subprocess.run([*as_user, "--", "true"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"bubblewrap cannot make a user namespace here: {probe.stderr.decode().strip()}")
        ran = subprocess.run(
            [*as_user, "--", sys.executable, "-c", INDEX, str(runs)], capture_output=True, text=True, timeout=120
        )
    finally:
        locked.chmod(0o755)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "['good.jsonl']"
    told = ran.stderr.splitlines()
    assert told == [
        f"waza view: skipped {locked}: Permission denied",
        f"waza view: skipped {runs / 'secret.jsonl'}: Permission denied",
    ], ran.stderr
