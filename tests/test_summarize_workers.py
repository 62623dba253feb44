"""waza summarize in several processes: the same bytes and the same errors as one process, chunk by chunk.

The workers are real spawned processes reading real files; the chunks are made small so that a few KB of
real capture and trials lines cross many chunk boundaries (blank lines, CRLF endings, a long line spanning
several chunks, a last line without its newline, a bad line in a worker's chunk)."""

from __future__ import annotations

import orjson
import pytest

from waza.protocol.jsonl import JsonlError
from waza.runner.analysis.runs import ResultsFile
from waza.runner.analysis.summary_lines import write_summaries
from waza.runner.analysis.summary_workers import summarize_with_workers

from .analysis_runs import capture, trials
from .conftest import run_waza

BOM = b"\xef\xbb\xbf"


def one_process(path, width=200, markdown=False):
    """(the summaries, the error or None) as ``waza summarize`` writes them without workers."""
    pending = bytearray()
    file = ResultsFile(str(path))
    try:
        write_summaries(file.lines(), file.source, None, width, markdown, pending)
    except JsonlError as exc:
        return bytes(pending), str(exc)
    return bytes(pending), None


def in_workers(path, jobs, chunk, width=200, markdown=False):
    written = bytearray()
    try:
        summarize_with_workers(str(path), jobs, width, markdown, written.extend, chunk)
    except JsonlError as exc:
        return bytes(written), str(exc)
    return bytes(written), None


def awkward_capture(tmp_path):
    """Real capture lines, many times over with other ids, with the shapes a chunk boundary may cut."""
    rows = [orjson.loads(x) for x in capture(tmp_path, "r.jsonl", "q2=fail", "q4=error").read_bytes().splitlines()]
    lines = []
    for n in range(12):
        for row in rows:
            lines.append(orjson.dumps({**row, "id": f"{row['id']}-{n}"}))
    lines[5] += b"\r"  # CRLF
    lines[9] = orjson.dumps({**rows[0], "output": "long " * 900})  # a line over several chunks
    lines[14] = orjson.dumps({k: v for k, v in rows[1].items() if k != "status"})  # acp-harness's shape
    lines.insert(20, b"")  # blank lines
    lines.insert(21, b"   ")
    return lines


def test_workers_write_the_bytes_one_process_writes(tmp_path):
    lines = awkward_capture(tmp_path)
    path = tmp_path / "many.jsonl"
    path.write_bytes(BOM + b"\n".join(lines))  # a byte-order mark first, no newline last
    single = one_process(path)
    assert single[1] is None and single[0].count(b"\n") == len(lines) - 2
    for jobs, chunk in [(2, 700), (3, 1), (2, 4096), (2, 1 << 20)]:
        assert in_workers(path, jobs, chunk) == single, (jobs, chunk)
    assert in_workers(path, 2, 900, width=5, markdown=True) == one_process(path, width=5, markdown=True)
    assert in_workers(path, 2, 900, width=0) == one_process(path, width=0)


def test_trials_files_in_workers(tmp_path):
    results = trials(tmp_path, "t.jsonl", 2, "q1=1")
    path = tmp_path / "t-many.jsonl"
    path.write_bytes(results.read_bytes() * 20)
    assert in_workers(path, 2, 800) == one_process(path)


@pytest.mark.parametrize(
    "bad",
    [
        b'{"id": "a", "input": "x", "output": 5, "status": "passed"}',  # a bad field
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "metadata": {"n": 100000000000000000000}}',
        BOM + b'{"id": "a", "input": "x", "output": "", "status": "passed"}',  # a mark is only taken off line 1
        b'{"id": "a", "input": "x", "output": "", "trials": [], "passes": 0}',  # a trials line in a capture file
        b"{",
    ],
)
def test_a_bad_line_in_a_workers_chunk_ends_the_output_where_one_process_does(tmp_path, bad):
    """The summaries of every line before it are written, and its error names its line in the whole file."""
    lines = awkward_capture(tmp_path)
    for at in (1, 17, len(lines) - 1):
        path = tmp_path / f"bad-{at}.jsonl"
        path.write_bytes(b"\n".join([*lines[:at], bad, *lines[at:]]) + b"\n")
        written, error = in_workers(path, 3, 600)
        assert (written, error) == one_process(path), at
        assert error is not None and error.startswith(f"{path}:{at + 1}: ")


def test_the_command_takes_workers_for_a_regular_file_only(tmp_path):
    lines = awkward_capture(tmp_path)
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    alone = run_waza("summarize", path, "--workers", "1")
    together = run_waza("summarize", path, "--workers", "2")
    assert alone.returncode == together.returncode == 0, together.stderr.decode()
    assert together.stdout == alone.stdout and together.stdout.count(b"\n") == len(lines) - 2  # blank lines
    piped = run_waza("summarize", "-", "--workers", "2", input=path.read_bytes())
    assert piped.returncode == 2 and piped.stdout == b""
    assert piped.stderr.decode() == (
        "waza: --workers 2: <stdin> is not a regular file (stdin and pipes are read in this process)\n"
    )


def test_workers_end_with_the_command_that_stops_early(tmp_path):
    """A write that fails (the reader of stdout went away) ends the run there: the error reaches the caller and
    no worker process is left behind."""
    import multiprocessing

    lines = awkward_capture(tmp_path)
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    calls = []

    def write(data):
        calls.append(len(data))
        if len(calls) == 3:
            raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        summarize_with_workers(str(path), 3, 200, False, write, 500)
    assert len(calls) == 3
    assert multiprocessing.active_children() == []


def test_a_worker_that_dies_ends_the_run_with_an_error(tmp_path):
    """A worker killed mid-run (the machine's OOM killer, say) is an error naming its exit, not a silent gap:
    what was written before is the start of one process's output."""
    import multiprocessing

    from waza.protocol.errors import WazaError

    lines = awkward_capture(tmp_path)
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    written = bytearray()
    calls = []

    def write(data):
        calls.append(len(data))
        if len(calls) == 2:  # the first chunk's summaries (the first line's came before the worker started)
            for worker in multiprocessing.active_children():
                worker.kill()
                worker.join()
        written.extend(data)

    with pytest.raises(WazaError, match=r"many\.jsonl: a summarize worker ended early \(exit code -9\)"):
        summarize_with_workers(str(path), 2, 200, False, write, 300)
    assert one_process(path)[0].startswith(bytes(written))
    assert multiprocessing.active_children() == []


def test_a_worker_that_finds_another_file_at_the_path_reads_nothing_of_it(tmp_path):
    # The command opened one file and a worker opens the path again: when the path names another file by
    # then (replaced meanwhile), the worker ends with its own exit code before reading it, and the run ends
    # with an error saying so instead of summarizing two files' lines as one.
    import multiprocessing

    from waza.runner.analysis import summary_workers

    path = tmp_path / "r.jsonl"
    path.write_bytes(b"")
    orders, _ = multiprocessing.Pipe(duplex=False)
    _, send = multiprocessing.Pipe(duplex=False)
    with pytest.raises(SystemExit) as ended:
        summary_workers._work(str(path), (-1, -1), "r.jsonl", "capture", 200, False, 0, 0, 1, orders, send)
    assert ended.value.code == summary_workers._CHANGED
