"""waza balance: coverage counts, under-represented values and suggestions, hand-checked."""

from __future__ import annotations

import orjson
import pytest

from waza.protocol.schemas import errors

from .conftest import run_waza, write_jsonl

PROMPTS = [
    {"id": "a", "input": "x", "metadata": {"category": "math"}},
    {"id": "b", "input": "x", "metadata": {"category": "math"}},
    {"id": "c", "input": "x", "metadata": {"category": "math"}},
    {"id": "d", "input": "x", "metadata": {"category": "math"}},
    {"id": "e", "input": "x", "metadata": {"category": "geo"}},
    {"id": "f", "input": "x", "metadata": {"category": ["geo", "history"]}},
    {"id": "g", "input": "x"},
]


def test_counts_shares_and_under_represented(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", PROMPTS)
    proc = run_waza("balance", prompts, "--key", "category", "--expect", "science")
    assert proc.returncode == 0, proc.stderr.decode()
    r = orjson.loads(proc.stdout)
    assert errors("BalanceReport", r) == []
    assert (r["prompts"], r["tagged"], r["untagged"]) == (7, 6, ["g"])
    assert [(c["value"], c["count"]) for c in r["categories"]] == [("math", 4), ("geo", 2), ("history", 1), ("science", 0)]
    assert r["categories"][0]["share"] == pytest.approx(4 / 6)
    # mean = (4 + 2 + 1 + 0) / 4 = 1.75; under 0.5 x 1.75 = 0.875: only science
    assert r["meanCount"] == pytest.approx(1.75)
    assert r["underRepresented"] == ["science"]
    assert any("science" in s and "none yet" in s for s in r["suggestions"])
    assert any("'g'" in s for s in r["suggestions"])
    assert any("67%" in s for s in r["suggestions"])
    strict = orjson.loads(run_waza("balance", prompts, "--threshold", "0.9").stdout)
    assert strict["underRepresented"] == ["history", "geo"]  # 1 and 2 < 0.9 x 7/3


def test_markdown_nested_key_and_stdin(tmp_path):
    rows = [{"id": str(i), "input": "x", "metadata": {"source": {"kind": k}}} for i, k in enumerate("aab")]
    proc = run_waza(
        "balance", "-", "--key", "source.kind", "--format", "markdown", input=b"".join(orjson.dumps(r) + b"\n" for r in rows)
    )
    text = proc.stdout.decode()
    assert proc.returncode == 0
    assert "| a | 2 | 66.7% |  |" in text and "| b | 1 | 33.3% |  |" in text


def test_bad_input(tmp_path):
    dup = write_jsonl(tmp_path / "d.jsonl", [PROMPTS[0], PROMPTS[0]])
    proc = run_waza("balance", dup)
    assert proc.returncode == 2 and f"{dup}:2: field 'id'".encode() in proc.stderr
    assert run_waza("balance", dup, "--key", "a..b").returncode == 2
    assert b"Example" in run_waza("balance", "--help").stdout
