"""waza's performance targets, measured: ``python bench/run.py [--quick] [--runs N]``.

Generates its inputs under bench/.data (gitignored, reused when present), then
runs each target's pair (waza and the bare baseline it is compared with)
alternately, ``--runs`` times, each command as a fresh process whose wall time
and peak RSS come from ``os.wait4``. Prints medians, ratios, peak RSS and
whether each target is met. Every target is a ratio within one run of this
script, so the machine's load mostly cancels; the load is printed too.

Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
PY = sys.executable
WAZA = [PY, "-m", "waza"]

GRADER = """#!{python}
import json
import sys

for line in sys.stdin:  # one-shot: one request; worker: one per line
    request = json.loads(line)
    print(json.dumps({{"pass": bool(request.get("output")), "score": 1.0, "requestId": request.get("requestId")}}), flush=True)
"""
FUNCTION = """def grade(request):
    return {"pass": "alpha" in request["output"], "score": 1.0}
"""
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


@dataclass(frozen=True)
class Sizes:
    results: int  # targets 1 and 2
    records: int  # target 3, ~2 KB each
    small_mb: int  # target 4
    large_mb: int
    prompts: int  # target 5


FULL = Sizes(results=2000, records=100_000, small_mb=100, large_mb=1000, prompts=400)
QUICK = Sizes(results=300, records=20_000, small_mb=10, large_mb=100, prompts=100)


# ---------------------------------------------------------------- inputs


def record(i: int, rng: random.Random) -> dict[str, object]:
    """A plausible ~2 KB CaptureResult: an answer, one trajectory step, metadata, timing."""
    text = " ".join(rng.choice(WORDS) for _ in range(150))
    return {
        "id": f"case-{i}",
        "input": "Summarise the deployment log",
        "output": text[:900],
        "hint": "alpha",
        "trajectory": [{"type": "message", "stepId": "s0", "timestamp": 3, "turn": 0, "role": "agent", "content": text[:700]}],
        "metadata": {"suite": "bench", "n": i},
        "timing": {"start": 1, "end": 2, "total": 1},
        "status": "ungraded",
    }


def write_records(path: Path, count: int | None = None, megabytes: int | None = None) -> None:
    if path.exists():
        return
    rng = random.Random(7)
    limit = (megabytes or 0) * 1_000_000
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        i = size = 0
        while (count is not None and i < count) or (megabytes is not None and size < limit):
            line = orjson.dumps(record(i, rng), option=orjson.OPT_APPEND_NEWLINE)
            f.write(line)
            size += len(line)
            i += 1
    tmp.rename(path)


def generate(sizes: Sizes) -> dict[str, Path]:
    DATA.mkdir(exist_ok=True)
    files = {
        "grader": DATA / "grader.py",
        "function": DATA / "function.py",
        "results": DATA / f"results-{sizes.results}.jsonl",
        "requests": DATA / f"requests-{sizes.results}.jsonl",
        "records": DATA / f"records-{sizes.records}.jsonl",
        "small": DATA / f"records-{sizes.small_mb}MB.jsonl",
        "large": DATA / f"records-{sizes.large_mb}MB.jsonl",
        "prompts": DATA / f"prompts-{sizes.prompts}.jsonl",
    }
    files["grader"].write_text(GRADER.format(python=PY))
    files["grader"].chmod(0o755)
    files["function"].write_text(FUNCTION)
    if not files["results"].exists():
        rows = [{"id": f"r{i}", "input": "What is 2 + 2?", "output": f"4 ({i})", "hint": "4"} for i in range(sizes.results)]
        files["results"].write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))
    if not files["requests"].exists():  # exactly what waza sends the grader for each result
        from waza.protocol.grading import request_for
        from waza.protocol.records import CaptureResult

        lines = files["results"].read_bytes().splitlines()
        files["requests"].write_bytes(
            b"".join(orjson.dumps(request_for(CaptureResult.from_dict(orjson.loads(x)), {}).to_dict()) + b"\n" for x in lines)
        )
    write_records(files["records"], count=sizes.records)
    write_records(files["small"], megabytes=sizes.small_mb)
    write_records(files["large"], megabytes=sizes.large_mb)
    if not files["prompts"].exists():
        rows = [{"id": f"p{i}", "input": f"say {i}", "hint": str(i)} for i in range(sizes.prompts)]
        files["prompts"].write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))
    return files


# ---------------------------------------------------------------- measuring


@dataclass
class Sample:
    seconds: float
    rss_mb: float


@dataclass
class Series:
    label: str
    argv: list[str]
    samples: list[Sample] = field(default_factory=list)

    def measure(self) -> None:
        started = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            proc = subprocess.Popen(self.argv, stdout=sink, stderr=subprocess.PIPE)
            assert proc.stderr is not None
            err = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{self.label} failed ({proc.returncode}): {' '.join(self.argv)}\n{err.decode()[-2000:]}")
        self.samples.append(Sample(seconds, usage.ru_maxrss / 1024))

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def peak_rss(self) -> float:
        return max(s.rss_mb for s in self.samples)


@dataclass
class Target:
    number: int
    title: str
    waza: list[Series]
    base: list[Series]
    verdict: Callable[[Target], tuple[str, bool]]


def alternate(targets: list[Target], runs: int) -> None:
    for run in range(runs):
        for t in targets:
            pairs = [*t.waza, *t.base]
            for series in pairs if run % 2 == 0 else reversed(pairs):
                print(f"  run {run + 1}/{runs}: {series.label}", file=sys.stderr, flush=True)
                series.measure()


def rate(series: Series, n: int) -> float:
    return n / series.median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs and 2 runs (a minute or two)")
    parser.add_argument("--runs", type=int, help="runs of each pair (default 3, --quick 2)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    runs = args.runs or (2 if args.quick else 3)
    print(f"generating inputs in {DATA} ...", file=sys.stderr)
    f = generate(sizes)
    load_before = os.getloadavg()
    null = ["-o", os.devnull]
    grader, n = str(f["grader"]), sizes.results

    spawn = Series("waza grade, spawned grader, -j 2", [*WAZA, "grade", str(f["results"]), "-g", grader, "-j", "2", *null])
    worker = Series("waza grade, worker grader, -j 2", [*WAZA, "grade", str(f["results"]), "-g", f"worker:{grader}", "-j", "2", *null])
    bare_spawn = Series("bare loop spawning the grader, 2 at a time", [PY, str(HERE / "baseline.py"), "spawn", str(f["requests"]), grader, "-j", "2"])
    fn = Series("waza grade, file.py:fn in-process", [*WAZA, "grade", str(f["records"]), "-g", f"{f['function']}:grade", *null])
    regex = Series("waza grade, builtin:regex in-process", [*WAZA, "grade", str(f["records"]), "-g", "builtin:regex", "--grader-config", '{"must_match": ["alpha"]}', *null])
    bare_json = Series("bare orjson read/parse/dump/write loop", [PY, str(HERE / "baseline.py"), "orjson", str(f["records"])])
    small = Series(f"waza grade {sizes.small_mb} MB, builtin:regex", [*WAZA, "grade", str(f["small"]), "-g", "builtin:regex", "--grader-config", '{"must_match": ["alpha"]}', *null])
    large = Series(f"waza grade {sizes.large_mb} MB, builtin:regex", [*WAZA, "grade", str(f["large"]), "-g", "builtin:regex", "--grader-config", '{"must_match": ["alpha"]}', *null])
    capture = Series("waza capture, exec agent cat + grader, -j 2", [*WAZA, "capture", str(f["prompts"]), "-g", grader, "-j", "2", "--adapter", "exec", *null, "--", "cat"])
    bare_capture = Series("bare loop spawning cat + grader, 2 at a time", [PY, str(HERE / "baseline.py"), "capture", str(f["prompts"]), "/bin/cat", grader, "-j", "2"])

    targets = [
        Target(1, "spawned grader: waza >= 90% of a bare spawn loop", [spawn], [bare_spawn],
               lambda t: (f"{bare_spawn.median / spawn.median:.0%} of the bare loop", bare_spawn.median / spawn.median >= 0.9)),
        Target(2, "worker mode >= 20x spawn mode", [worker], [],
               lambda t: (f"{spawn.median / worker.median:.1f}x", spawn.median / worker.median >= 20)),
        Target(3, "in-process graders >= 20,000 results/s on 2 KB records", [fn, regex], [bare_json],
               lambda t: (f"fn {rate(fn, sizes.records):,.0f}/s, regex {rate(regex, sizes.records):,.0f}/s (bare orjson {rate(bare_json, sizes.records):,.0f}/s)",
                          min(rate(fn, sizes.records), rate(regex, sizes.records)) >= 20_000)),
        Target(4, f"peak RSS <= 150 MB at {sizes.large_mb} MB, flat from {sizes.small_mb} MB", [small, large], [],
               lambda t: (f"{small.peak_rss:.0f} MB -> {large.peak_rss:.0f} MB",
                          large.peak_rss <= 150 and large.peak_rss <= small.peak_rss * 1.1 + 5)),
        Target(5, "capture: waza >= 80% of a bare agent + grader loop", [capture], [bare_capture],
               lambda t: (f"{bare_capture.median / capture.median:.0%} of the bare loop", bare_capture.median / capture.median >= 0.8)),
    ]
    print(f"{len(targets)} targets, {runs} runs each, load average before {load_before[0]:.2f} (2 cores)", file=sys.stderr)
    memory = targets[3]
    alternate([t for t in targets if t is not memory], runs)
    alternate([memory], 1)  # one pass is enough for a peak, and the large file takes a while
    load_after = os.getloadavg()

    print(f"\nwaza benchmark ({'quick' if args.quick else 'full'}), {runs} runs; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after, {os.cpu_count()} CPUs\n")
    print(f"{'command':<48} {'median s':>9} {'peak RSS MB':>12}")
    for t in targets:
        for series in [*t.waza, *t.base]:
            print(f"{series.label:<48} {series.median:>9.2f} {series.peak_rss:>12.0f}")
    print()
    met = 0
    for t in targets:
        shown, ok = t.verdict(t)
        met += ok
        print(f"target {t.number}: {t.title:<60} {shown:<60} {'MET' if ok else 'MISSED'}")
    print(f"\n{met}/{len(targets)} targets met")


if __name__ == "__main__":
    main()
