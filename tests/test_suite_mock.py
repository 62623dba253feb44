"""The mock adapter on its own, through ``waza capture --adapter mock``: scripts, the default, and bad scripts."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import read_jsonl, run_waza, write_jsonl
from waza.protocol.schemas import errors


def capture(tmp_path: Path, rows: list[dict], *args: str) -> tuple[int, dict[str, dict], str]:
    prompts = write_jsonl(tmp_path / "prompts.jsonl", rows)
    done = run_waza("capture", prompts, "--adapter", "mock", *args)
    results = read_jsonl(done.stdout)
    for r in results:
        assert errors("CaptureResult", r) == []
    return done.returncode, {r["id"]: r for r in results}, done.stderr.decode()


def test_scripts_default_and_bad_scripts(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("remember the milk\n")
    (work / ".hidden").write_text("not shown\n")
    rows = [
        {
            "id": "scripted",
            "input": "Deploy it",
            "mock": [
                {"thought": "planning"},
                {"skill": "azure-deploy"},
                {"tool": "bash", "kind": "execute", "input": {"command": "azd up"}, "output": "ok"},
                {"tool": "view", "status": "failed", "input": {"path": "missing.txt"}},
                {"write": "out/report.txt", "content": "deployed\n"},
                {"usage": {"input_tokens": 7, "output_tokens": 3, "cost": 0.01}},
                {"message": "first"},
                {"message": "Deployed."},
            ],
        },
        {"id": "default", "input": ["hello", "Please explain notes"], "metadata": {"skill": "note-explainer"}},
        {"id": "escape", "input": "x", "mock": [{"write": "../outside.txt", "content": "no"}]},
        {"id": "two-actions", "input": "x", "mock": [{"message": "a", "tool": "b"}]},
        {"id": "fails", "input": "x", "mock": [{"message": "partial"}, {"error": "boom"}, {"message": "never"}]},
    ]
    code, results, _stderr = capture(tmp_path, rows, "--cwd", str(work))
    assert code == 1  # errored results

    scripted = results["scripted"]
    steps = [(s["type"], s.get("name")) for s in scripted["trajectory"]]
    assert steps == [
        ("message", None),  # the user's turn
        ("thought", None),
        ("tool_call", "skill"),
        ("tool_call", "bash"),
        ("tool_call", "view"),
        ("message", None),
        ("message", None),
    ]
    assert scripted["trajectory"][2]["input"] == {"skill": "azure-deploy"}
    assert scripted["output"] == "Deployed."
    assert scripted["toolErrors"] is True
    assert scripted["usage"] == {"inputTokens": 7, "outputTokens": 3, "cost": 0.01}
    assert (work / "out" / "report.txt").read_text() == "deployed\n"
    assert scripted["status"] == "ungraded" and scripted["errors"] == []

    default = results["default"]  # runs after "scripted" (-j 1) in the same --cwd, so it sees out/report.txt
    assert default["output"] == "Mock answer to: Please explain notes\nWorkspace files (2): notes.md, out/report.txt."
    calls = [s for s in default["trajectory"] if s["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["skill", "view", "view"]  # "note" starts a prompt word; .hidden is skipped
    assert calls[0]["input"] == {"skill": "note-explainer"}
    assert calls[1]["input"] == {"path": "notes.md"} and calls[1]["output"] == "remember the milk\n"
    assert (
        next(s["content"] for s in default["trajectory"] if s["type"] == "message" and s["role"] == "agent")
        == "Mock answer to: hello"
    )
    assert default["usage"] == {"inputTokens": 3, "outputTokens": len(default["output"].split())}

    assert results["escape"]["status"] == "error"
    assert "must not climb out of the workspace" in results["escape"]["errors"][0]
    assert not (tmp_path / "outside.txt").exists()
    assert "needs exactly one of" in results["two-actions"]["errors"][0]
    fails = results["fails"]
    assert fails["errors"] == ["boom"] and fails["output"] == "partial"


def test_mock_takes_no_command_and_no_foreign_options(tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    done = run_waza("capture", prompts, "--adapter", "mock", "--events")
    assert done.returncode == 2 and b"--events does nothing with --adapter mock" in done.stderr
    done = run_waza("capture", prompts, "--adapter", "mock", "--", "python", "agent.py")
    assert done.returncode == 2 and b"runs no agent command" in done.stderr
