"""Workspace setup per trial and sandbox start cost: ``python bench/workspaces.py [--runs N] [--files N] [--mb N]``.

Writes a fixture tree under bench/.data/workspaces (kept between runs: by default
7,650 files, about 240 MB, the shape of the issue's repository fixture), then
measures, alternating the commands forward then backward ``--runs`` times:

* **setup**: one trial's workspace filled from the fixture: ``cp -a`` (the
  floor), waza's copy (``trees.copy_tree``, the kernel's copy, reflinks where
  the filesystem has them), ``shutil.copytree`` (what templates used
  before), a per-file copy resolving each path (what suite fixtures used before),
  an empty folder, and, as root, the kernel overlay a sandboxed trial from a template gets
  (``runner.engine.overlays``: one mount) and a sandboxed suite task's ``context.fixture``
  folder gets (the same mount, its files written over it); whether this filesystem reflinks is printed;
* **sandbox start**: ``true`` run directly, through waza's bubblewrap command
  line, and through it with limits (the launcher and its control group);
* **-j 16**: 16 prompts of an agent that sleeps ``--sleep`` seconds, each in a
  fresh workspace from the large fixture against an empty one (waza's Python
  API, ``Workspace(fresh=True, template=...)``), beside 16 ``cp -a`` of the
  fixture at once (what the disk allows for the copies alone); a ticker on the
  run's event loop reports the longest the loop went without running it (the
  stall every other trial's agent, grader and timeout would see).

Prints medians. Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

import waza
from waza.adapters.sandbox.bwrap import Sandbox, wrap_command
from waza.adapters.sandbox.limits import SandboxLimits, describe
from waza.runner.engine.overlays import Seed, mount_overlay, mounted, unmount_overlay
from waza.runner.engine.trees import copy_tree, remove_tree
from waza.runner.suites import resources

DATA = Path(__file__).resolve().parent / ".data" / "workspaces"


def fixture(files: int, mb: int) -> Path:
    """A tree of ``files`` files in 150 folders, about ``mb`` MB in all (sizes from 200 B to 120 kB)."""
    root = DATA / f"fixture-{files}-{mb}"
    if root.is_dir():
        return root
    partial = root.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    rng = random.Random(1)
    sizes = [200, 2000, 8000, 30000, 120000]
    scale = (mb << 20) / (files * sum(sizes) / len(sizes))
    for n in range(files):
        folder = partial / f"pkg{n % 15}" / f"sub{n % 150}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_bytes(os.urandom(int(rng.choice(sizes) * scale)))
    partial.rename(root)
    return root


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(commands: dict[str, Callable[[], object]], runs: int, after: Callable[[], object] = lambda: None) -> dict[str, float]:
    """Median seconds of each command, run alternately forward then backward (``after``, untimed, after each)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    order = list(commands)
    for run in range(runs):
        for name in order if run % 2 == 0 else reversed(order):
            times[name].append(timed(commands[name]))
            after()
    return {name: statistics.median(t) for name, t in times.items()}


def reflinks_here(folder: Path) -> bool:
    """Whether the filesystem of ``folder`` shares blocks (``cp --reflink=always`` succeeds)."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        (Path(tmp) / "a").write_bytes(b"x" * 4096)
        done = subprocess.run(["cp", "--reflink=always", f"{tmp}/a", f"{tmp}/b"], capture_output=True, check=False)
        return done.returncode == 0


def overlay_here() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "no bubblewrap"
    text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False).stdout
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    bwrap_says = "has --overlay-src" if "--overlay-src" in text else "no --overlay-src"
    kernel = "waza mounts a kernel overlay (root)" if os.geteuid() == 0 else "not root: sandboxed trials copy"
    return f"{version}: {bwrap_says}; {kernel}"


def setup_rows(source: Path, runs: int) -> dict[str, float]:
    scratch = DATA / "scratch"
    remove_tree(scratch)
    scratch.mkdir(parents=True)
    counter = iter(range(1 << 30))

    def fresh() -> Path:
        return scratch / f"w{next(counter)}"

    def clear() -> None:  # each copy is removed before the next (untimed): a small filesystem holds the bench
        for entry in list(scratch.iterdir()):
            if mounted(entry):
                unmount_overlay(entry, keep=False)
            if entry.name.startswith("."):  # an overlay's layers, removed with it
                continue
            remove_tree(entry)
        os.sync()

    def cp_a() -> None:
        subprocess.run(["cp", "-a", f"{source}/.", str(fresh())], check=True)

    def waza_copy() -> None:
        target = fresh()
        target.mkdir()
        copy_tree(source, target)

    def copytree() -> None:
        shutil.copytree(source, fresh(), symlinks=True)

    def per_file() -> None:  # the suites' copy before: a walk, then every file's path resolved and checked
        target = fresh()
        root = source.resolve()
        for top, _, names in os.walk(source):
            for name in names:
                relative = Path(top, name).relative_to(root)
                src = (root / relative).resolve()
                dst = (target / relative).resolve()
                if not (src.is_relative_to(root) and dst.is_relative_to(target.resolve() if target.exists() else target)):
                    raise RuntimeError(f"{relative} escapes")
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)

    def empty() -> None:
        fresh().mkdir()

    def overlay() -> None:  # what a sandboxed trial from a template gets as root: one mount, no copy
        target = fresh()
        target.mkdir()
        if not mount_overlay(source, target):
            raise RuntimeError("no overlay here (see the line above)")

    def suite_overlay() -> None:  # a sandboxed suite task from a context.fixture folder: one mount, its files over it
        seed = resources.prepare(lambda ws: (ws / "added.txt").write_text("added\n"), (source.parent, source.name), [])
        target = fresh()
        target.mkdir()
        if not (isinstance(seed, Seed) and seed.then is not None and mount_overlay(seed.source, target)):
            raise RuntimeError("no overlay here (see the line above)")
        seed.then(target)

    try:
        return measure(
            {
                "cp -a": cp_a,
                "waza copy": waza_copy,
                "shutil.copytree": copytree,
                "per-file copy (suites before)": per_file,
                "empty": empty,
                **({"overlay (sandboxed trials, root)": overlay} if os.geteuid() == 0 else {}),
                **({"suite fixture folder, overlaid (root)": suite_overlay} if os.geteuid() == 0 else {}),
            },
            runs,
            clear,
        )
    finally:
        remove_tree(scratch)


def start_rows(runs: int) -> dict[str, float]:
    if shutil.which("bwrap") is None:
        return {}
    workspace = Path(tempfile.mkdtemp(prefix="waza-bench-"))
    plain = ["true"]
    sandboxed = wrap_command(plain, Sandbox(), workspace)
    limited = wrap_command(plain, Sandbox(limits=SandboxLimits(memory_mb=512, pids=256, cpu_seconds=60, disk_mb=1024)), workspace)
    try:
        return measure(
            {
                "true": lambda: subprocess.run(plain, check=True),
                "bwrap true": lambda: subprocess.run(sandboxed, check=True, cwd=workspace),
                "bwrap true + limits": lambda: subprocess.run(limited, check=True, cwd=workspace),
            },
            runs * 5,
        )
    finally:
        remove_tree(workspace)


def parallel_rows(source: Path, runs: int, sleep: float) -> tuple[dict[str, float], dict[str, float]]:
    """Wall time of each run, and the longest the event loop went without running a 10 ms ticker beside it."""
    empty = DATA / "empty-fixture"
    empty.mkdir(parents=True, exist_ok=True)
    agent = DATA / "sleepy-agent.sh"
    agent.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {sleep}\necho done\n")
    agent.chmod(0o755)
    prompts = [{"id": f"p{i}", "input": "x"} for i in range(16)]
    spec = waza.ExecAgent(command=(str(agent),))
    stalls: dict[str, list[float]] = {}

    def run(name: str, template: Path) -> None:
        async def main() -> None:
            worst = 0.0
            stop = anyio.Event()

            async def ticker() -> None:
                nonlocal worst
                last = time.perf_counter()
                while not stop.is_set():
                    await anyio.sleep(0.01)
                    now = time.perf_counter()
                    worst = max(worst, now - last - 0.01)
                    last = now

            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                workspace = waza.Workspace(fresh=True, template=template)
                results = [r async for r in waza.acapture(prompts, spec, concurrency=16, workspace=workspace)]
                stop.set()
            assert all(r.output == "done" for r in results), [r.errors for r in results if r.output != "done"]
            stalls.setdefault(name, []).append(worst)

        anyio.run(main)

    def parallel_cp() -> None:
        scratch = DATA / "scratch-cp"
        remove_tree(scratch)
        scratch.mkdir(parents=True)
        children = [subprocess.Popen(["cp", "-a", f"{source}/.", str(scratch / str(n))]) for n in range(16)]
        for child in children:
            child.wait()
        remove_tree(scratch)

    walls = measure(
        {
            "-j 16, empty fixture": lambda: run("-j 16, empty fixture", empty),
            "-j 16, large fixture": lambda: run("-j 16, large fixture", source),
            "16 × cp -a at once (floor of the copies alone)": parallel_cp,
        },
        runs,
        os.sync,
    )
    return walls, {name: max(values) for name, values in stalls.items()}


def main() -> None:
    global DATA
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=7650)
    parser.add_argument("--mb", type=int, default=240)
    parser.add_argument("--sleep", type=float, default=5.0, help="seconds each agent of the -j 16 rows sleeps")
    parser.add_argument("--dir", type=Path, default=None, help="where the fixture and the copies go (default: bench/.data)")
    parser.add_argument("--only-setup", action="store_true", help="only the workspace setup rows")
    args = parser.parse_args()
    if args.dir is not None:  # another filesystem to measure (one with reflinks, say)
        DATA = args.dir.resolve() / "waza-bench-workspaces"
    source = fixture(args.files, args.mb)
    size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    print(f"fixture: {args.files} files, {size / (1 << 20):.0f} MB in {source}; Python {sys.version.split()[0]}")
    print(f"reflinks on this filesystem: {'yes' if reflinks_here(DATA) else 'no'}; overlay: {overlay_here()}")
    print(describe())
    setup = setup_rows(source, args.runs)
    print("\n| workspace setup, one trial | median s | × cp -a |\n|---|---|---|")
    for name, value in setup.items():
        print(f"| {name} | {value:.3f} | {value / setup['cp -a']:.2f} |")
    if args.only_setup:
        return
    start = start_rows(args.runs)
    print("\n| sandbox start | median ms |\n|---|---|")
    for name, value in start.items():
        print(f"| {name} | {value * 1000:.1f} |")
    walls, stalls = parallel_rows(source, args.runs, args.sleep)
    print(f"\n| 16 prompts, -j 16, agents sleep {args.sleep:g} s | median s | longest event-loop stall |\n|---|---|---|")
    for name, value in walls.items():
        stall = f"{stalls[name] * 1000:.0f} ms" if name in stalls else "—"
        print(f"| {name} | {value:.2f} | {stall} |")


if __name__ == "__main__":
    main()
