"""waza beside the peer harness and the floor, one table: ``python bench/run.py [--runs N] [--prompts N] [--quick]``.

The capture workloads also run ``floor.py --anyio`` (the same runner on anyio's
processes, a task per slot): what the process library itself allows, reported
under the main table.

Uses the peer (``@plaited/agent-eval-harness`` 0.12 and Bun) that .ci/run
installs for the tests (~/.cache/waza-tests/acp-harness-0.12.2), else installs
it from npm into bench/.data/peer once, skipping it with a note where npm or the
registry cannot be reached; writes the inputs (``fixtures.py``); then runs every workload's
commands (waza, the peer, the floor in ``floor.py``) alternately, forward then
backward, ``--runs`` times, each as a fresh process. Wall time is measured
around the process; its own CPU (all threads, not its children) is read from
/proc while it is a zombie, and the CPU of everything it ran comes from
``wait4``. Prints medians, ratios, the targets (README, Performance) and whether each is met,
and the machine's load while it ran (others' CPU shows as busy time the
benchmark's own processes did not use).

Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures import generate

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
PEER_DIR = DATA / "peer"
PEER_PACKAGES = ["@plaited/agent-eval-harness@0.12", "bun@1"]
#: Where .ci/run installs the same packages for the tests: used when present, so nothing is fetched twice.
CI_PEER_DIR = Path(os.environ.get("WAZA_TEST_CACHE", Path.home() / ".cache" / "waza-tests")) / "acp-harness-0.12.2"
PY = sys.executable
TICK = os.sysconf("SC_CLK_TCK")


def waza_argv() -> list[str]:
    """The installed ``waza`` console script (what users run), else ``python -m waza``."""
    script = Path(PY).parent / "waza"
    return [str(script)] if script.exists() else [PY, "-m", "waza"]


def waza_sources() -> list[str]:
    """The directories waza's packages are loaded from (an editable install maps several)."""
    import importlib.util

    names = ["waza", "waza.runner", "waza.protocol", "waza.adapters", "waza.graders"]
    specs = [importlib.util.find_spec(n) for n in names]
    return sorted({d for s in specs if s and s.submodule_search_locations for d in s.submodule_search_locations})


def install_peer() -> tuple[list[str] | None, str]:
    """The peer's argv (its CLI under the Bun from npm), or None and why it is skipped."""
    home = CI_PEER_DIR if (CI_PEER_DIR / "node_modules" / ".bin" / "bun").exists() else PEER_DIR
    cli = home / "node_modules" / ".bin" / "agent-eval-harness"
    bun = home / "node_modules" / ".bin" / "bun"
    if not (cli.exists() and bun.exists()):
        npm = shutil.which("npm")
        if npm is None:
            return None, "peer skipped: npm is not installed"
        PEER_DIR.mkdir(parents=True, exist_ok=True)
        (PEER_DIR / "package.json").write_text('{"private": true}\n')
        print(f"installing {' '.join(PEER_PACKAGES)} into {PEER_DIR} ...", file=sys.stderr)
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", *PEER_PACKAGES],
                cwd=PEER_DIR,
                capture_output=True,
                timeout=600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, "peer skipped: npm install took over 10 minutes (registry unreachable?)"
        if done.returncode != 0 or not (cli.exists() and bun.exists()):
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            return None, f"peer skipped: npm install failed ({tail[0]})"
    version = subprocess.run([str(bun), "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return [str(bun), str(cli.resolve())], f"peer: @plaited/agent-eval-harness 0.12 under Bun {version}"


# ---------------------------------------------------------------- measuring


@dataclass
class Sample:
    wall: float  # seconds
    own_cpu: float  # the process itself, all its threads
    total_cpu: float  # the process and everything it waited for
    rss_mb: float


@dataclass
class Command:
    label: str
    argv: list[str]
    samples: list[Sample] = field(default_factory=list)

    def measure(self, env: dict[str, str]) -> Sample:
        started = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            proc = subprocess.Popen(self.argv, stdout=sink, stderr=subprocess.PIPE, env=env)
            assert proc.stderr is not None
            err = proc.stderr.read()
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: /proc still has its times
            wall = time.perf_counter() - started
            with open(f"/proc/{proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            own = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(
                f"{self.label} failed ({proc.returncode}): {' '.join(self.argv)}\n{err.decode(errors='replace')[-2000:]}"
            )
        sample = Sample(wall, own, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
        self.samples.append(sample)
        return sample

    def median(self, what: str = "wall") -> float:
        return statistics.median(getattr(s, what) for s in self.samples)

    @property
    def peak_rss(self) -> float:
        return max(s.rss_mb for s in self.samples)


@dataclass
class Workload:
    title: str
    unit: str  # "s" (wall, lower is better), "/s" (records per second), "MB" (peak RSS)
    waza: Command
    peer: Command | None
    floor: Command | None
    count: int = 1  # records, for "/s"
    peer_note: str = "—"
    once: bool = False  # peak RSS: one run is enough (and grading 1 GB takes a while)
    reference: Command | None = None  # run alongside, reported under the table (not a competitor)
    anyio: Command | None = None  # the floor on anyio's processes (capture workloads), reported under the table

    def commands(self) -> list[Command]:
        return [c for c in (self.waza, self.peer, self.floor, self.reference, self.anyio) if c is not None]

    def figure(self, c: Command | None, note: str = "—") -> str:
        if c is None or not c.samples:
            return note
        if self.unit == "/s":
            return f"{self.count / c.median():,.0f}/s"
        if self.unit == "MB":
            return f"{c.peak_rss:.0f} MB"
        return f"{c.median():.3f} s" if c.median() < 1 else f"{c.median():.2f} s"

    def ratio(self, c: Command | None) -> float | None:
        """c's time over waza's: above 1, waza is faster than c (throughput ratio waza/c)."""
        if c is None or not c.samples or self.unit == "MB":
            return None
        return c.median() / self.waza.median()


def cpu_busy() -> tuple[float, float]:
    """Machine-wide (busy, total) CPU seconds since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values) - idle) / TICK, sum(values) / TICK


def run_all(workloads: list[Workload], runs: int, env: dict[str, str]) -> None:
    for run in range(runs):
        for w in workloads:
            if w.once and run:
                continue
            commands = w.commands()
            for c in commands if run % 2 == 0 else reversed(commands):
                print(f"  run {run + 1}/{runs}: {c.label}", file=sys.stderr, flush=True)
                c.measure(env)


# ---------------------------------------------------------------- the table


def ratio_text(r: float | None) -> str:
    return "—" if r is None else f"{r:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of every command, alternating (default 5)")
    parser.add_argument(
        "--prompts", type=int, default=2000, help="prompts in the throughput workloads: steady state, not start-up (default 2000)"
    )
    parser.add_argument("--quick", action="store_true", help="check the harness: 20 prompts, 10/20 MB records, 1 run")
    parser.add_argument("--no-peer", action="store_true", help="leave the peer out")
    args = parser.parse_args()
    prompts, runs, sizes = args.prompts, args.runs, (100.0, 1000.0)
    if args.quick:
        prompts, runs, sizes = 20, 1, (10.0, 20.0)
    peer, peer_note = (None, "peer left out (--no-peer)") if args.no_peer else install_peer()
    print(f"writing inputs under {DATA} ...", file=sys.stderr)
    f = generate(DATA, prompts, sizes)
    # Measured as installed: bytecode compiled and cached (pip does this at install; an
    # editable install writes it on first use, unless PYTHONDONTWRITEBYTECODE forbids it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([PY, "-m", "compileall", "-q", *waza_sources()], check=False, stdout=subprocess.DEVNULL)
    waza = waza_argv()
    floor = [PY, str(HERE / "floor.py")]
    null = ["-o", os.devnull]
    with open(f["small"], "rb") as lines:
        small_records = sum(1 for _ in lines)

    def capture(
        title: str,
        prompts_file: Path,
        lang: str,
        jobs: int,
        worker: bool = False,
        *,
        reference: Command | None = None,
        with_anyio: bool = True,
    ) -> Workload:
        agent, schema = f[f"agent.{lang}"], f[f"schema-agent.{lang}"]
        grader = f["worker.py"] if worker else f[f"grader.{lang}"]
        j = ["-j", str(jobs)]
        w = Command(
            "waza",
            [
                *waza,
                "capture",
                str(prompts_file),
                "--adapter",
                "headless",
                "--schema",
                str(schema),
                "-g",
                f"worker:{grader}" if worker else str(grader),
                *j,
                *null,
            ],
        )
        p = (
            None
            if peer is None or worker
            else Command("peer", [*peer, "capture", str(prompts_file), "-s", str(schema), "-g", str(grader), *j, *null])
        )
        fl = Command(
            "floor", [*floor, "capture", str(prompts_file), str(agent), str(grader), *j, *(["--worker"] if worker else [])]
        )
        anyio_floor = Command("anyio floor", [*fl.argv, "--anyio"]) if with_anyio else None
        peer_note = "no worker mode" if worker else "—"
        return Workload(title, "s", w, p, fl, peer_note=peer_note, reference=reference, anyio=anyio_floor)

    py1 = capture(f"Python agent + Python grader, one-shot, `-j 2`, {prompts} prompts", f["prompts"], "py", 2)
    pyw = capture(f"same, grader in worker mode, {prompts} prompts", f["prompts"], "py", 2, worker=True)
    sh4 = capture(f"sh agent + sh grader, `-j 4`, {prompts} prompts", f["prompts"], "sh", 4)
    # What a capture imports before any of waza's code runs: the reference of target 1 (a one-prompt capture
    # at most 1.5 times the import of these base libraries alone), on this machine, in this run.
    libraries = Command(
        "libraries alone",
        [PY, "-c", "import asyncio, anyio, anyio._backends._asyncio, orjson, typer, typer.main"],
    )
    one = capture("one prompt, sh agent + sh grader", f["prompt-1"], "sh", 1, reference=libraries, with_anyio=False)
    hlp = Workload(
        "`waza --help` (floor: `python -c pass`)",
        "s",
        Command("waza", [*waza, "--help"]),
        None if peer is None else Command("peer", [*peer, "--help"]),
        Command("floor", [PY, "-c", "pass"]),
    )
    fn = Workload(
        f"in-process grader (`file.py:grade`), {small_records:,} 2 KB records",
        "/s",
        Command("waza", [*waza, "grade", str(f["small"]), "-g", f"{f['function.py']}:grade", *null]),
        None,
        Command("floor", [*floor, "parse", str(f["small"])]),
        count=small_records,
        peer_note="no in-process Python graders",
    )
    regex = ["-g", "builtin:regex", "--grader-config", '{"must_match": ["alpha"]}', *null]
    rss_small = Command(f"waza {sizes[0]:g} MB", [*waza, "grade", str(f["small"]), *regex])
    rss = Workload(
        f"peak RSS grading {sizes[1]:g} MB (`builtin:regex`)",
        "MB",
        Command("waza", [*waza, "grade", str(f["large"]), *regex]),
        None,
        None,
        peer_note="—",
        once=True,
    )
    workloads = [one, hlp, sh4, py1, pyw, fn, rss]

    load_before = os.getloadavg()
    busy0, total0 = cpu_busy()
    run_all(workloads, runs, env)
    rss_small.measure(env)
    busy1, total1 = cpu_busy()
    load_after = os.getloadavg()
    ours = sum(s.total_cpu for w in workloads for c in w.commands() for s in c.samples) + sum(
        s.total_cpu for s in rss_small.samples
    )
    machine = busy1 - busy0
    capacity = total1 - total0

    # waza's own CPU per record on the sh workload, beyond its fixed cost (the one-prompt run's own CPU)
    own_per_record = (sh4.waza.median("own_cpu") - one.waza.median("own_cpu")) / max(prompts - 1, 1) * 1000
    total_own_per_record = sh4.waza.median("own_cpu") / prompts * 1000
    floor_per_record = sh4.floor.median("own_cpu") / prompts * 1000 if sh4.floor else 0.0

    print(
        f"\n## waza vs peer vs floor ({runs} runs each, alternating; medians; {os.cpu_count()} CPUs; Python {sys.version.split()[0]})\n"
    )
    print(f"{peer_note}\n")
    print("| workload | waza | peer | floor | peer / waza | floor / waza |")
    print("|---|---|---|---|---|---|")
    for w in workloads:
        print(
            f"| {w.title} | {w.figure(w.waza)} | {w.figure(w.peer, w.peer_note)} | {w.figure(w.floor)} | {ratio_text(w.ratio(w.peer))} | {ratio_text(w.ratio(w.floor))} |"
        )
    print(f"| peak RSS grading {sizes[0]:g} MB | {rss_small.peak_rss:.0f} MB | — | — | — | — |")
    print(
        f"| waza's own CPU per record, sh workload (beyond its fixed cost; with it) | {own_per_record:.2f} ms ({total_own_per_record:.2f} ms) | — | {floor_per_record:.2f} ms | — | — |"
    )
    print("\n(ratios are time over waza's time: above 1 means waza is faster, i.e. waza's throughput against it)\n")
    print("The floor on anyio's processes (`floor.py --anyio`), beside the floor and waza:\n")
    print("| workload | anyio floor | anyio floor / floor | anyio floor / waza |")
    print("|---|---|---|---|")
    for w in (sh4, py1, pyw):
        assert w.anyio is not None and w.floor is not None
        print(f"| {w.title} | {w.figure(w.anyio)} | {w.floor.median() / w.anyio.median():.2f} | {ratio_text(w.ratio(w.anyio))} |")
    print()

    def met(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    peer_sh = sh4.ratio(sh4.peer)
    one_ratio = one.waza.median() / libraries.median()
    help_ratio = hlp.waza.median() / hlp.floor.median() if hlp.floor else float("inf")
    per_second = small_records / fn.waza.median()
    targets = [
        (
            "1",
            "one-prompt capture ≤ 1.5× the base libraries' import; `waza --help` ≤ 1.3× `python -c pass`",
            f"{one_ratio:.2f}× ({one.waza.median():.3f} s against {libraries.median():.3f} s); "
            f"{help_ratio:.2f}× ({hlp.waza.median():.3f} s against {hlp.floor.median() if hlp.floor else 0:.3f} s)",
            one_ratio <= 1.5 and help_ratio <= 1.3,
        ),
        (
            "2",
            "sh agent + sh grader `-j 4` ≥ 0.80 of the floor and ≥ 1.3× the peer",
            f"{sh4.ratio(sh4.floor):.2f} of the floor, {ratio_text(peer_sh)}× the peer",
            sh4.ratio(sh4.floor) >= 0.80 and (peer_sh is None or peer_sh >= 1.3),
        ),
        (
            "3",
            "Python agent + grader `-j 2`, one-shot ≥ 0.90 of the floor",
            f"{py1.ratio(py1.floor):.2f}",
            py1.ratio(py1.floor) >= 0.9,
        ),
        ("4", "same, worker mode ≥ 0.90 of the floor", f"{pyw.ratio(pyw.floor):.2f}", pyw.ratio(pyw.floor) >= 0.9),
        (
            "5",
            "in-process grading ≥ 30,000 results/s (2 KB records); peak RSS ≤ 150 MB and flat at 1 GB",
            f"{per_second:,.0f}/s; {rss_small.peak_rss:.0f} MB → {rss.waza.peak_rss:.0f} MB",
            per_second >= 30_000 and rss.waza.peak_rss <= 150 and rss.waza.peak_rss <= rss_small.peak_rss * 1.2,
        ),
    ]
    print("| # | target | measured | |")
    print("|---|---|---|---|")
    for number, title, shown, ok in targets:
        print(f"| {number} | {title} | {shown} | {met(ok)} |")
    print(
        f"\n{sum(ok for *_, ok in targets)}/{len(targets)} targets met"
        + ("" if peer is not None else " (the peer's half of target 2 not measured)")
    )
    print(
        f"\nload: 1-min load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; the machine's CPUs were "
        f"{machine / capacity:.0%} busy during the run, the benchmark's own processes {ours / capacity:.0%} "
        f"(others: {max(machine - ours, 0) / capacity:.0%})"
    )


if __name__ == "__main__":
    main()
