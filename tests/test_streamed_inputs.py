"""Nothing lost: a failed start leaves ``-o`` as it was, signals while prompts stream on stdin end
waza cleanly with every finished record, and streamed prompts run as each line arrives.

Real processes throughout: a real ``waza`` subprocess, a real producer program on the other end of a
real pipe, real signals."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import read_jsonl, run_waza, write_jsonl
from .test_interrupts import wait_for_lines

#: An exec agent that answers with its prompt.
ECHO = (sys.executable, "-c", "import sys; print(sys.stdin.read())")


def _waza(*args: str | Path, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "waza", *map(str, args)], stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen[bytes]) -> None:
    """Poll until ``path`` holds ``n`` lines (a generous budget; no timing is asserted)."""
    wait_for_lines(path, n, proc)
    assert path.exists() and path.read_bytes().count(b"\n") >= n, f"waza ended ({proc.returncode}) first"


# --- a failed start --------------------------------------------------------------------------------


def test_a_failed_acp_start_leaves_an_existing_output_as_it_was(tmp_path):
    prompts = write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "input": "x"}])
    keep = tmp_path / "keep.jsonl"
    keep.write_bytes(b"one\ntwo\nthree\n")
    script = tmp_path / "plain_script.py"
    script.write_text("print('hello, I am not an ACP agent')\n")
    proc = run_waza("capture", prompts, "-o", keep, "--", sys.executable, script)  # the default adapter: ACP
    assert proc.returncode == 2, proc.stderr
    assert b"does not look like an ACP agent" in proc.stderr
    assert keep.read_bytes() == b"one\ntwo\nthree\n"


def test_a_failed_start_creates_no_empty_output(tmp_path):
    prompts = write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "input": "x"}])
    script = tmp_path / "plain_script.py"
    script.write_text("print('hello')\n")
    out = tmp_path / "new.jsonl"
    proc = run_waza("capture", prompts, "-o", out, "--", sys.executable, script)
    assert proc.returncode == 2, proc.stderr
    assert not out.exists()


def test_a_failed_start_on_resume_keeps_what_was_there(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": f"p{i}", "input": f"q{i}"} for i in range(3)])
    out = tmp_path / "r.jsonl"
    assert run_waza("capture", prompts, "--adapter", "exec", "-o", out, "--", *ECHO).returncode == 0
    before = out.read_bytes()
    write_jsonl(prompts, [{"id": f"p{i}", "input": f"q{i}"} for i in range(4)])
    script = tmp_path / "plain_script.py"
    script.write_text("print('hello')\n")
    proc = run_waza("capture", prompts, "--resume", "-o", out, "--", sys.executable, script)
    assert proc.returncode == 2, proc.stderr
    assert out.read_bytes() == before


def test_a_successful_run_still_flushes_each_result_as_it_finishes(tmp_path):
    """The output is opened at the first result, then written line by line: a reader sees the first
    result while the agent is still busy with the second."""
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "first"}, {"id": "b", "input": "second"}])
    release = tmp_path / "release"
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import pathlib, sys, time\n"
        "prompt = sys.stdin.read()\n"
        f"while prompt == 'second' and not pathlib.Path({str(release)!r}).exists():\n"
        "    time.sleep(0.05)\n"
        "print(prompt)\n"
    )
    out = tmp_path / "r.jsonl"
    proc = _waza("capture", prompts, "--adapter", "exec", "-o", out, "--", sys.executable, agent)
    try:
        _wait_for_lines(out, 1, proc)
        assert [r["id"] for r in read_jsonl(out)] == ["a"]
    finally:
        release.touch()
    assert proc.wait(60) == 0, proc.stderr.read()  # type: ignore[union-attr]
    assert [r["id"] for r in read_jsonl(out)] == ["a", "b"]


# --- signals while prompts stream on stdin -----------------------------------------------------------

#: A producer that writes one whole prompt, then the start of a second one that never ends.
PRODUCERS = {
    "jsonl": (b'{"id":"a","input":"one"}\n{"id":"b","input":"', b"x"),
    "csv": (b"id,input\na,one\nb,", b"x"),
}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_a_long_line_arrives_on_stdin_keeps_every_finished_record(tmp_path, fmt, sig, code):
    head, tail = PRODUCERS[fmt]
    producer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            f"sys.stdout.buffer.write({head!r}); sys.stdout.flush()\n"
            "while True:\n"
            f"    sys.stdout.buffer.write({tail!r} * 1000); sys.stdout.flush(); time.sleep(0.05)\n",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    out = tmp_path / "r.jsonl"
    try:
        proc = _waza("capture", "-", "--prompts-format", fmt, "--adapter", "exec", "-o", out, "--", *ECHO, stdin=producer.stdout)
        assert producer.stdout is not None
        producer.stdout.close()  # waza holds the read end now
        _wait_for_lines(out, 1, proc)
        proc.send_signal(sig)
        assert proc.wait(60) == code
        stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        producer.kill()
        producer.wait()
    assert "Fatal Python error" not in stderr and "Traceback" not in stderr, stderr
    assert [r["id"] for r in read_jsonl(out)] == ["a"]


# --- each streamed line runs as it arrives ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_streamed_prompts_run_as_each_line_arrives_while_the_producer_stays_open(tmp_path, fmt):
    release = tmp_path / "release"
    first, second = (
        (b'{"id":"a","input":"one"}\n', b'{"id":"b","input":"two"}\n') if fmt == "jsonl" else (b"id,input\na,one\n", b"b,two\n")
    )
    producer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pathlib, sys, time\n"
            f"sys.stdout.buffer.write({first!r}); sys.stdout.flush()\n"
            f"while not pathlib.Path({str(release)!r}).exists():\n"
            "    time.sleep(0.05)\n"
            f"sys.stdout.buffer.write({second!r})\n",
        ],
        stdout=subprocess.PIPE,
    )
    out = tmp_path / "r.jsonl"
    try:
        proc = _waza("capture", "-", "--prompts-format", fmt, "--adapter", "exec", "-o", out, "--", *ECHO, stdin=producer.stdout)
        assert producer.stdout is not None
        producer.stdout.close()
        _wait_for_lines(out, 1, proc)
        assert producer.poll() is None  # the first result is out while the stream is still open
        assert [r["id"] for r in read_jsonl(out)] == ["a"]
    finally:
        release.touch()
        producer.wait(60)
    assert proc.wait(60) == 0, proc.stderr.read()  # type: ignore[union-attr]
    assert [r["id"] for r in read_jsonl(out)] == ["a", "b"]


def test_a_ray_cluster_that_cannot_be_joined_leaves_the_output_as_it_was(tmp_path):
    """Joining an address where no cluster listens never yields a result; however long waza tries and
    however it ends (here: SIGTERM while it tries), the existing output is untouched."""
    pytest.importorskip("ray")
    prompts = write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "input": "x"}])
    keep = tmp_path / "keep.jsonl"
    keep.write_bytes(b"one\ntwo\nthree\n")
    proc = _waza(
        "capture", prompts, "--adapter", "exec", "--executor", "ray", "--ray-address", "127.0.0.1:1", "-o", keep, "--", *ECHO
    )
    try:
        proc.wait(5)  # it may give up by itself, or still be trying: either way no result exists
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert keep.read_bytes() == b"one\ntwo\nthree\n"
    assert not list(tmp_path.glob(".keep.jsonl*"))
