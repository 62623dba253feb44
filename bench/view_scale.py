"""The analysis side at scale, one table: ``python bench/view_scale.py [--results N] [--gb G] [--idle-files N]``.

Issue 30 item 9's targets, each measured on files written here (bench/.data, kept between runs):

- ``waza view``: the first page of a run of N results (default 100,000), and the whole index,
  timed from the start of the process; a compare of two such runs (the second differs in a
  tenth of its verdicts), timed from the start of a fresh viewer until the page holds the
  statistics;
- ``waza summarize`` in 2 processes (``--workers 2``, its default for such a file on 2 CPUs
  or more) and in one (``--workers 1``), and ``waza compare``, over a file of G
  gigabytes, beside ``jq`` and a bare orjson pass (read each line, decode it, nothing else)
  over the same file, all taking turns in each round (forward, then backward) and each ratio
  taken within a round;
- an idle viewer over F run files (default 10,000): its CPU time (utime + stime from
  /proc/PID/stat) over 20 s once indexing is done.

Each time is the median of ``--runs`` fresh processes; the table ends with the machine's load
average, since a shared machine's load moves every figure. Not a test: nothing asserts, CI does
not run it.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures import record

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
PY = sys.executable
TICK = os.sysconf("SC_CLK_TCK")


def graded(i: int, rng: random.Random, fail: bool) -> dict[str, object]:
    """A ~2 KB CaptureResult (bench/fixtures.py) graded by one grader: passed, or failed when ``fail``."""
    row = record(i, rng)
    status = "failed" if fail else "passed"
    verdict = {"status": status, "pass": not fail, "score": 0.0 if fail else 1.0}
    row.update(status=status, score=verdict, grades=[{"name": "hint", **verdict, "reasoning": "bench"}])
    row["usage"] = {"inputTokens": 100 + i % 50, "outputTokens": 20 + i % 7}
    return row


def write_run(path: Path, *, count: int = 0, gigabytes: float = 0.0, flip: int = 0) -> Path:
    """Graded results, every 7th failed, until ``count`` results or ``gigabytes`` are written; with ``flip``,
    every flip-th verdict turned round (a candidate run that regressed on some prompts and improved on others)."""
    if path.exists():
        return path
    rng = random.Random(7)
    tmp = path.with_suffix(".tmp")
    limit, size, i = gigabytes * 1e9, 0, 0
    with tmp.open("wb") as f:
        while (count and i < count) or (limit and size < limit):
            fail = i % 7 == 0
            if flip and i % flip == 0:
                fail = not fail
            line = orjson.dumps(graded(i, rng, fail), option=orjson.OPT_APPEND_NEWLINE)
            f.write(line)
            size += len(line)
            i += 1
    tmp.rename(path)
    return path


def write_many(folder: Path, count: int) -> Path:
    """``count`` small run files (3 results each) in 100 directories."""
    if (folder / ".done").exists():
        return folder
    rng = random.Random(7)
    for n in range(count):
        sub = folder / f"d{n % 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        rows = [graded(n * 3 + j, rng, j == 0) for j in range(3)]
        (sub / f"run{n:05d}.jsonl").write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))
    (folder / ".done").write_text("")
    return folder


# ---------------------------------------------------------------- measuring


def waza_argv() -> list[str]:
    script = Path(PY).parent / "waza"
    return [str(script)] if script.exists() else [PY, "-m", "waza"]


class Viewer:
    """``waza view ARGS`` on a free loopback port; ``started`` is when the process was started."""

    def __init__(self, *args: str | Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([*waza_argv(), "view", *map(str, args)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode()
        match = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
        if not match:
            raise SystemExit(f"waza view did not start: {line}")
        self.url = match.group(1)
        self.client = httpx.Client(base_url=self.url, timeout=600)

    def since(self) -> float:
        return time.perf_counter() - self.started

    def until(self, test: Callable[[], bool], step: float = 0.02) -> float:
        while not test():
            time.sleep(step)
        return self.since()

    def indexed(self, files: int = 1) -> bool:
        html = self.client.get("/api/runs").json()["html"]
        return html.count("<tr") >= files and "indexing" not in html

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def close(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait()


def first_page_and_index(run: Path) -> tuple[float, float]:
    v = Viewer(run)
    try:
        key = str(run)

        def first_page() -> bool:
            answer = v.client.get("/run", params={"f": key})
            return answer.status_code == 200 and answer.text.count('class="pid"') >= 100

        page = v.until(first_page, 0.05)
        whole = v.until(v.indexed, 0.1)  # asked 10 times a second, so the asking does not slow the indexer much
        return page, whole
    finally:
        v.close()


def compare_time(a: Path, b: Path) -> tuple[float, float]:
    """(from the viewer's start until the compare page holds the statistics, the same page asked once both runs
    are indexed (what a user who opened the viewer and then picked two runs waits))."""
    v = Viewer(a, b)
    try:

        def shown() -> bool:
            answer = v.client.get("/compare", params={"a": str(a), "b": str(b)})
            return "McNemar exact test" in answer.text

        cold = v.until(shown, 0.05)
    finally:
        v.close()
    v = Viewer(a, b)
    try:
        v.until(lambda: v.indexed(2), 0.1)
        started = time.perf_counter()
        assert shown()
        return cold, time.perf_counter() - started
    finally:
        v.close()


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


BARE = """
import sys, orjson
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            orjson.loads(line)
            n += 1
print(n)
"""


def idle_cpu(folder: Path, files: int, seconds: float) -> tuple[float, float]:
    """(seconds to index everything, CPU seconds used over ``seconds`` of idling afterwards)."""
    v = Viewer(folder)
    try:
        ready = v.until(lambda: v.indexed(files), 0.5)
        time.sleep(2)
        before = v.cpu()
        time.sleep(seconds)
        return ready, v.cpu() - before
    finally:
        v.close()


def idle_fallback(folder: Path, files: int, seconds: float) -> float:
    """CPU seconds of the indexer's stat-based fallback over ``seconds`` once it has read everything (in-process)."""
    from waza.runner.view.index import Registry

    try:
        registry = Registry(roots=[folder], files=[], inotify=False)
    except TypeError:  # a waza before inotify: polling is all it does
        registry = Registry(roots=[folder], files=[])
    registry.start()
    try:
        while len(registry.listing()) < files or not all(i.scanned >= i.size for i in registry.listing()):
            time.sleep(0.5)
        time.sleep(2)
        before = time.process_time()
        time.sleep(seconds)
        return time.process_time() - before
    finally:
        registry.stop()


def median(f: Callable[[], float], runs: int) -> float:
    return statistics.median(f() for _ in range(runs))


def cli_rows(gb: float, runs: int) -> list[tuple[str, str, str]]:
    """waza summarize and compare over ``gb`` GB beside the bare orjson pass and jq, as fresh processes taking
    turns (forward, then backward, so drifting load falls on all of them); ratios are taken within a round."""
    big = write_run(DATA / f"cli-{gb:g}GB-a.jsonl", gigabytes=gb)
    big_b = write_run(DATA / f"cli-{gb:g}GB-b.jsonl", gigabytes=gb, flip=10)
    commands = {
        "bare": [PY, "-c", BARE, str(big)],
        "summarize": [*waza_argv(), "summarize", str(big), "-o", os.devnull, "--workers", "2"],
        "summarize1": [*waza_argv(), "summarize", str(big), "-o", os.devnull, "--workers", "1"],
        "compare": [*waza_argv(), "compare", str(big), str(big_b), "-o", os.devnull],
    }
    if shutil.which("jq"):
        commands["jq"] = ["jq", "-c", "{id, status}", str(big)]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for turn in range(runs):
        for name in commands if turn % 2 == 0 else reversed(commands):
            times[name].append(timed(commands[name]))
    bare = statistics.median(times["bare"])
    lines = sum(1 for _ in big.open("rb"))

    def ratio(name: str, passes: int = 1) -> float:
        return statistics.median(t / (passes * b) for t, b in zip(times[name], times["bare"], strict=True))

    rows = [(f"bare orjson pass over {gb:g} GB ({lines:,} results)", f"{bare:.2f} s", "")]
    if "jq" in times:
        rows.append(
            (f"jq -c '{{id, status}}' over {gb:g} GB", f"{statistics.median(times['jq']):.2f} s ({ratio('jq'):.2f}x)", "")
        )
    summ = statistics.median(times["summarize"])
    rows.append((f"waza summarize over {gb:g} GB (--workers 2)", f"{summ:.2f} s ({ratio('summarize'):.2f}x)", "<= 1.5x"))
    one = statistics.median(times["summarize1"])
    rows.append(("  the same in one process (--workers 1)", f"{one:.2f} s ({ratio('summarize1'):.2f}x)", ""))
    comp = statistics.median(times["compare"])
    rows.append((f"waza compare of two {gb:g} GB runs", f"{comp:.2f} s ({ratio('compare', 2):.2f}x of two passes)", "<= 1.5x"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--idle-files", type=int, default=10_000)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=["view", "cli", "idle"], action="append")
    args = parser.parse_args()
    only = set(args.only or ["view", "cli", "idle"])
    DATA.mkdir(exist_ok=True)
    load = os.getloadavg()[0]
    rows: list[tuple[str, str, str]] = []
    if "view" in only:
        a = write_run(DATA / f"view-{args.results}-a.jsonl", count=args.results)
        b = write_run(DATA / f"view-{args.results}-b.jsonl", count=args.results, flip=10)
        size = a.stat().st_size / 1e6
        pages = [first_page_and_index(a) for _ in range(args.runs)]
        page = statistics.median(p for p, _ in pages)
        whole = statistics.median(w for _, w in pages)
        rows.append((f"view: first page of {args.results:,} results ({size:.0f} MB)", f"{page:.2f} s", "<= 2 s"))
        rows.append((f"view: whole index of {args.results:,} results", f"{whole:.2f} s", "<= 2 s"))
        times = [compare_time(a, b) for _ in range(args.runs)]
        cold = statistics.median(c for c, _ in times)
        warm = statistics.median(w for _, w in times)
        rows.append((f"view: compare of two {args.results:,}-result runs, from start", f"{cold:.2f} s", "<= 5 s"))
        rows.append(("view: the same compare, both runs already indexed", f"{warm:.2f} s", "<= 5 s"))
        bare = median(lambda: timed([PY, "-c", BARE, str(a)]), args.runs)
        rows.append(("  bare orjson pass over one run", f"{bare:.2f} s", ""))
    if "cli" in only:
        rows += cli_rows(args.gb, args.runs)
    if "idle" in only:
        folder = write_many(DATA / f"idle-{args.idle_files}", args.idle_files)
        ready, cpu = idle_cpu(folder, args.idle_files, args.idle_seconds)
        rows.append((f"view: index {args.idle_files:,} run files", f"{ready:.1f} s", ""))
        share = cpu / args.idle_seconds
        rows.append(
            (
                f"view: idle CPU over {args.idle_seconds:g} s with {args.idle_files:,} files",
                f"{cpu:.2f} s ({share:.1%} of a core)",
                "near 0",
            )
        )
        cpu = idle_fallback(folder, args.idle_files, args.idle_seconds)
        rows.append(
            (
                "  the same without inotify (lstat, backing off)",
                f"{cpu:.2f} s ({cpu / args.idle_seconds:.1%} of a core)",
                "near 0",
            )
        )
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'median':<32}  target")
    for name, value, target in rows:
        print(f"{name.ljust(width)}  {value:<32}  {target}")
    print(f"load average (1 min): {load:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
