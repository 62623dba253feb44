"""Memory bounded whatever an agent prints or an input holds, and bad input refused where it is read.

Real programs: an agent that floods waza with events, a shell pipeline that feeds an endless CSV
line, a FIFO; the peak memory of the whole waza process tree is read from the kernel (``wait4``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import waza

from .conftest import read_jsonl, run_waza, write_jsonl

ECHO = (sys.executable, "-c", "import sys; print(sys.stdin.read())")

#: An exec agent for ``--events``: for a prompt "flood N" it prints N small events of a type no
#: mapping knows, then its answer; for any other prompt only the answer.
FLOOD = """
import sys
prompt = sys.stdin.read()
if prompt.startswith("flood "):
    n = int(prompt.split()[1])
    block = '{"type":"weird","n":1}\\n' * 1000
    for _ in range(n // 1000):
        sys.stdout.write(block)
sys.stdout.write('{"type":"message","content":"done"}\\n')
"""


#: Runs its arguments and prints their peak resident size: it is forked from a small interpreter, so the
#: figure is the command's own (a child forked straight from a test worker counts the worker's pages until
#: it execs, and a worker grows to hundreds of MB over a whole suite).
_MEASURE = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "print(usage.ru_maxrss)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def _run_measured(argv: list[str], stdin: int | None = None) -> tuple[int, float, bytes]:
    """Run ``argv`` to its end; (exit code, peak resident MB of it and the processes it waited for, stderr)."""
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *argv], stdin=stdin, capture_output=True, timeout=600, check=False)
    return proc.returncode, int(proc.stdout) / 1024, proc.stderr


# --- an agent's flood of events ---------------------------------------------------------------------


def test_an_agent_printing_a_million_unknown_events_is_kept_bounded_and_the_run_goes_on(tmp_path):
    agent = tmp_path / "flood.py"
    agent.write_text(FLOOD)
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "flood", "input": "flood 1000000"}, {"id": "calm", "input": "hi"}])
    out = tmp_path / "r.jsonl"
    code, peak, stderr = _run_measured(
        [sys.executable, "-m", "waza", "capture", str(prompts), "--adapter", "exec", "--events", "-o", str(out), "--",
         sys.executable, str(agent)]
    )  # fmt: skip
    assert code == 1, stderr  # one record errored
    assert peak < 250, f"waza peaked at {peak:.0f} MB"  # unbounded, a million steps took about 750 MB
    flood, calm = sorted(read_jsonl(out), key=lambda r: r["id"] != "flood")
    assert flood["status"] == "error"
    assert len(flood["trajectory"]) == waza.Limits().steps
    [error] = [e for e in flood["errors"] if "trajectory may keep" in e]
    assert "Limits.steps" in error and "later events were dropped" in error
    assert calm["status"] != "error" and calm["output"] == "done"


def test_the_trajectory_limits_are_options(tmp_path):
    agent = tmp_path / "flood.py"
    agent.write_text(FLOOD)
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "f", "input": "flood 5000"}])
    proc = run_waza("capture", prompts, "--adapter", "exec", "--events", "--max-steps", "100", "--", sys.executable, agent)
    [record] = read_jsonl(proc.stdout)
    assert len(record["trajectory"]) == 100
    # kept: the prompt and 99 events; dropped: the other 4901 events and the answer
    assert any("4902 later events were dropped" in e for e in record["errors"]), record["errors"]
    proc = run_waza("capture", prompts, "--adapter", "exec", "--events", "--max-trajectory-mb", "1", "--", sys.executable, agent)
    [record] = read_jsonl(proc.stdout)
    assert not record["errors"], record["errors"]  # 5000 small events are far below a megabyte


def test_the_python_api_takes_the_limits_as_a_spec(tmp_path):
    agent = tmp_path / "flood.py"
    agent.write_text(FLOOD)
    [result] = waza.capture(
        [{"id": "f", "input": "flood 3000"}],
        waza.ExecAgent(command=(sys.executable, str(agent)), events=True),
        limits=waza.Limits(steps=10),
    )
    assert len(result.trajectory) == 10 and result.status == "error"
    with pytest.raises(waza.ConfigError, match=r"Limits\.steps"):
        waza.Limits(steps=0)


# --- the line limit travels with the run ------------------------------------------------------------


def test_the_line_limit_is_a_setting_of_the_run_not_of_the_process(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "long", "input": "x" * (2 << 20)}])
    agent = waza.ExecAgent(command=ECHO)
    with pytest.raises(waza.ConfigError, match=r"p\.jsonl:1: line longer than 1 MB"):
        waza.capture(prompts, agent, limits=waza.Limits(line_mb=1))
    [result] = waza.capture(prompts, agent)  # the next run has its own (default) limit
    assert len(result.output) > 2 << 20 - 1


# --- CSV lines and headers ------------------------------------------------------------------------------


def test_an_endless_csv_line_on_stdin_stops_at_the_line_limit(tmp_path):
    shell = (
        f"(printf 'id,input\\n'; yes , | tr -d '\\n') 2>/dev/null | {sys.executable} -m waza capture - --prompts-format csv"
        f" --adapter exec -o {tmp_path / 'r.jsonl'} -- {sys.executable} -c 'import sys; print(sys.stdin.read())'"
    )
    code, peak, stderr = _run_measured(["sh", "-c", shell])
    assert code == 2, stderr
    assert stderr.decode().strip() == "waza: <stdin>:2: line longer than 64 MB (raise the limit: --max-line-mb)"
    # unbounded, it took 4.5 GB in 16 s; bounded, a few times the limit (about 160 MB alone, more on a busy machine)
    assert peak < 400, f"peaked at {peak:.0f} MB"
    assert not (tmp_path / "r.jsonl").exists()


def test_a_csv_header_of_sixty_thousand_columns_is_read(tmp_path):
    columns = [f"c{i}" for i in range(60_000)]
    prompts = tmp_path / "wide.csv"
    prompts.write_text(",".join(["id", "input", *columns]) + "\n" + ",".join(["a", "hello", *("v" for _ in columns)]) + "\n")
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *ECHO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [record] = read_jsonl(proc.stdout)
    assert len(record["metadata"]) == 60_000


def test_an_invalid_byte_is_reported_on_its_own_csv_line(tmp_path):
    prompts = tmp_path / "p.csv"
    rows = b"".join(f"p{i},hello {i}\n".encode() for i in range(2, 3002))
    prompts.write_bytes(b"id,input\n" + rows + b"p3002,bad \xff byte\n")
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *ECHO)
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"waza: {prompts}:3002: is not UTF-8 text (byte 11)\n"


# --- NUL ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("p.jsonl", b'{"id":"a","input":"x"}\n{"id":"b","input":"x\\u0000y"}\n', "2: field 'input'"),
        ("p.jsonl", b'{"id":"a\\u0000","input":"x"}\n', "1: field 'id'"),
        ("p.csv", b"id,input\na,x\nb,x\x00y\n", "3: field 'input'"),
        ("p.csv", b"id,input\na\x00,x\n", "2: field 'id'"),
    ],
)
@pytest.mark.parametrize("from_stdin", [False, True])
def test_a_nul_is_refused_where_the_prompts_are_read(tmp_path, name, text, where, from_stdin):
    prompts = tmp_path / name
    prompts.write_bytes(text)
    out = tmp_path / "r.jsonl"
    if from_stdin:
        fmt = "csv" if name.endswith(".csv") else "jsonl"
        proc = run_waza("capture", "-", "--prompts-format", fmt, "--adapter", "exec", "-o", out, "--", *ECHO, input=text)
        source = "<stdin>"
    else:
        proc = run_waza("capture", prompts, "--adapter", "exec", "-o", out, "--", *ECHO)
        source = str(prompts)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.decode().splitlines()[-1]
        == f"waza: {source}:{where}: must not contain a NUL character (no agent can be handed one)"
    )
    assert b"Traceback" not in proc.stderr
    if not from_stdin:
        assert not out.exists()  # refused before anything ran


# --- Parquet --------------------------------------------------------------------------------------------


def _parquet(path: Path, extra: object) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"id": ["a", "b"], "input": ["x", "y"], "when": extra}), path)
    return path


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("date32", "row 2: holds a value Python cannot represent"),
        ("timestamp_ms", "row 2: holds a value Python cannot represent"),
        ("timestamp_ns", "row 2: holds a value Python cannot represent"),
    ],
)
def test_a_parquet_date_python_cannot_hold_is_a_clear_error(tmp_path, column, message):
    pa = pytest.importorskip("pyarrow")
    values = {
        "date32": pa.array([1, 2**31 - 1], pa.date32()),
        "timestamp_ms": pa.array([0, 2**62], pa.timestamp("ms")),
        "timestamp_ns": pa.array([0, 2**62], pa.timestamp("ns")),
    }[column]
    prompts = _parquet(tmp_path / "p.parquet", values)
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *ECHO)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and f"p.parquet:{message}" in err and "Traceback" not in err, err


def test_a_parquet_fifo_is_refused_at_once(tmp_path):
    pytest.importorskip("pyarrow")
    fifo = tmp_path / "fifo.parquet"
    os.mkfifo(fifo)  # no writer: a reader opening it would block for good
    proc = run_waza("capture", fifo, "--adapter", "exec", "--", *ECHO, timeout=60)
    assert proc.returncode == 2
    assert "is not a regular file" in proc.stderr.decode()


# --- trials -k ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", ["1000000000", str(10**30)])
def test_trials_refuses_a_count_it_could_not_run(tmp_path, k):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x", "hint": "x"}])
    out = tmp_path / "t.jsonl"
    proc = run_waza("trials", prompts, "-k", k, "--adapter", "exec", "-g", "builtin:hint", "-o", out, "--", *ECHO)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "must be from 1 to 10000 trials per prompt" in err, err
    assert not out.exists()
