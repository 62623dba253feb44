"""Prompts from CSV and Parquet files: columns mapped to fields, the rest into metadata, errors by line or row."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from waza.runner.install_hints import pip_install

from .conftest import read_jsonl, run_waza

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "exec_agent.py")]


def capture(prompts: Path, *args: str):
    return run_waza("capture", prompts, "--adapter", "exec", "-g", "builtin:hint", *args, "--", *AGENT)


def test_csv_columns_are_mapped_and_the_rest_kept_as_metadata(tmp_path):
    prompts = tmp_path / "quiz.csv"
    # A quoted field spanning lines, a BOM and CRLF endings, as spreadsheets write them.
    prompts.write_bytes(
        b'\xef\xbb\xbfid,question,answer,topic\r\nq1,"say ""hi""\nplease",hi,greeting\r\nq2,say bye,nope,farewell\r\n'
    )
    proc = capture(prompts, "--map", "input=question,hint=answer")
    assert proc.returncode == 0, proc.stderr  # a failed grade is a verdict, not an error
    results = {r["id"]: r for r in read_jsonl(proc.stdout)}
    assert results["q1"]["input"] == 'say "hi"\nplease'
    assert results["q1"]["hint"] == "hi" and results["q1"]["status"] == "passed"
    assert results["q1"]["metadata"] == {"topic": "greeting"}
    assert results["q2"]["status"] == "failed"


def test_csv_without_an_id_column_numbers_its_rows_and_an_empty_hint_is_absent(tmp_path):
    prompts = tmp_path / "p.csv"
    prompts.write_text("input,hint\nfirst,\nsecond,sec\n")
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 0, proc.stderr
    results = read_jsonl(proc.stdout)
    assert [(r["id"], r.get("hint")) for r in results] == [("1", None), ("2", "sec")]


@pytest.mark.parametrize(
    ("text", "args", "expected"),
    [
        ("id,input\na,x\nb,y,extra\n", [], "p.csv:3: has 3 fields, the header has 2"),
        ('id,input\na,x\n"b,"y"\n', [], "p.csv:3"),
        ("id,input,timeout\na,x,soon\n", [], "p.csv:2: field 'timeout': must be a number of seconds, got 'soon'"),
        ("id,input\na,x\na,y\n", [], "p.csv:3: field 'id': duplicate id 'a'"),
        ("id,input\na,\n", [], "p.csv:2: field 'input': is empty"),
        ("id,question\na,x\n", [], "p.csv:2: field 'input': no column gives the prompt"),
        ("id,input\na,x\n", ["--map", "hint=answer"], "p.csv:1: field '--map': no column 'answer'"),
        ("id,input\na,x\n", ["--map", "inptu=x"], "field '--map': unknown field 'inptu'"),
        ("id,id\na,x\n", [], "p.csv:1: column 'id' is empty or repeated"),
        ("id,input\n", [], "holds no prompts"),
        # a quote never closed: the row it opens on is named, not swallowed into one field to the end of the file
        ('id,input\na,x\nb,"never closed\n', [], "p.csv:3: has a quoted field that is never closed"),
        ('id,input\na,"x\nb,y\nc,z', [], "p.csv:2: has a quoted field that is never closed"),
        ('id,input\na,"x"y\n', [], "p.csv:2: bad CSV: ',' expected after '\"'"),
    ],
)
def test_bad_csv_is_one_line_naming_file_and_line(tmp_path, text, args, expected):
    prompts = tmp_path / "p.csv"
    prompts.write_text(text)
    proc = capture(prompts, *args)
    assert proc.returncode == 2, proc.stderr
    message = proc.stderr.decode()
    assert message.count("\n") == 1 and expected in message, message
    assert proc.stdout == b""


def test_map_on_a_jsonl_file_is_refused(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "input": "x"}\n')
    proc = capture(prompts, "--map", "input=question")
    assert proc.returncode == 2 and b"--map is for CSV and Parquet" in proc.stderr


def test_prompts_format_reads_csv_from_stdin(tmp_path):
    proc = run_waza(
        "capture",
        "-",
        "--prompts-format",
        "csv",
        "--adapter",
        "exec",
        "--",
        *AGENT,
        input=b"id,input\na,hello\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert read_jsonl(proc.stdout)[0]["output"].strip() == "echo: hello"
    bad = run_waza("capture", "-", "--prompts-format", "xlsx", "--adapter", "exec", "--", *AGENT, input=b"")
    assert bad.returncode == 2 and b"--prompts-format" in bad.stderr


def test_trials_read_csv_too(tmp_path):
    prompts = tmp_path / "p.csv"
    prompts.write_text("id,input,hint\na,say hi,hi\n")
    proc = run_waza("trials", prompts, "-k", "2", "--adapter", "exec", "-g", "builtin:hint", "--", *AGENT)
    assert proc.returncode == 0, proc.stderr
    [record] = read_jsonl(proc.stdout)
    assert record["id"] == "a" and [t["status"] for t in record["trials"]] == ["passed", "passed"]


def parquet(path: Path, columns: dict[str, list]) -> Path:
    pa = pytest.importorskip("pyarrow", reason="pyarrow (the waza[parquet] extra) is not installed")
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path, row_group_size=2)  # several row groups: read batch by batch
    return path


def test_parquet_rows_become_prompts_with_typed_metadata(tmp_path):
    prompts = parquet(
        tmp_path / "p.parquet",
        {
            "question": ["say hi", "say bye", "say hi again"],
            "answer": ["hi", "bye", "hi"],
            "level": [1, 2, 3],
            "tags": [["a"], [], ["b", "c"]],
        },
    )
    proc = capture(prompts, "--map", "input=question,hint=answer", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    results = sorted(read_jsonl(proc.stdout), key=lambda r: r["id"])
    assert [r["id"] for r in results] == ["1", "2", "3"]
    assert results[2]["metadata"] == {"level": 3, "tags": ["b", "c"]}
    assert all(r["status"] == "passed" for r in results)


def test_parquet_errors_name_the_row(tmp_path):
    prompts = parquet(tmp_path / "p.parquet", {"id": ["a", "b", "a"], "input": ["x", "y", "z"]})
    proc = capture(prompts)
    assert proc.returncode == 2
    assert f"{prompts}:row 3: field 'id': duplicate id 'a'" in proc.stderr.decode()
    binary = parquet(tmp_path / "b.parquet", {"input": ["x"], "blob": [b"\x00\x01"]})
    proc = capture(binary)
    assert proc.returncode == 2 and f"{binary}:row 1: field 'blob': a bytes value" in proc.stderr.decode()


def test_a_file_that_is_not_parquet_is_named(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow (the waza[parquet] extra) is not installed")
    prompts = tmp_path / "p.parquet"
    prompts.write_text("id,input\na,x\n")
    proc = capture(prompts)
    assert proc.returncode == 2 and f"{prompts}: is not a readable Parquet file" in proc.stderr.decode()


def test_without_pyarrow_parquet_is_a_one_line_error_naming_the_extra(tmp_path):
    prompts = tmp_path / "p.parquet"
    prompts.write_bytes(b"PAR1")
    # A directory holding a pyarrow that cannot be imported stands in for a venv without the extra.
    blocker = tmp_path / "blocker" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pyarrow is not installed here')\n")
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT, env={"PYTHONPATH": str(blocker.parent)})
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert message.count("\n") == 1 and pip_install("parquet") in message, message


def test_a_csv_whose_last_row_never_closes_its_quote_writes_nothing(tmp_path):
    prompts = tmp_path / "p.csv"
    prompts.write_bytes(b'id,input\r\na,first\r\nb,"second')  # as an editor cut off mid-save leaves it
    out = tmp_path / "out.jsonl"
    proc = capture(prompts, "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"waza: {prompts}:3: has a quoted field that is never closed (the file ends inside it)\n"
    assert not out.exists()
