"""Start-up: ``waza --help`` and ``--version`` answer without loading the CLI framework, and lists every command.

What a command imports before it runs is checked with ``python -X importtime``
(which modules, not how long: no timed assertions).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from waza import __version__
from waza.runner.cli.app import build

from .conftest import message_result_schema, read_jsonl, run_waza, write_jsonl

AGENTS = Path(__file__).parent / "agents"
EXEC_AGENT = [sys.executable, str(AGENTS / "exec_agent.py")]
ACP_AGENT = [sys.executable, str(AGENTS / "scripted_acp_agent.py")]


def imported(*args: str) -> set[str]:
    """The modules ``waza ARGS`` imports, from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "waza", *args], capture_output=True, check=False)
    return {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:")}


def test_help_lists_every_command_and_group_typer_knows() -> None:
    app = build()
    names = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    for args, code in ((["--help"], 0), (["-h"], 0), ([], 2)):
        done = run_waza(*args)
        assert done.returncode == code, args
        listed = [line.split()[0] for line in done.stdout.decode().split("Commands:\n")[1].splitlines() if line.startswith("  ")]
        assert listed == names


def test_version_and_help_do_not_import_the_cli_framework() -> None:
    assert run_waza("--version").stdout.decode() == f"waza {__version__}\n"
    for args in (["--help"], ["--version"]):
        modules = imported(*args)
        assert "waza" in modules
        assert not {"typer", "click", "rich", "anyio", "asyncio"} & modules, args


def test_a_command_and_unknown_options_still_go_through_typer() -> None:
    done = run_waza("--bogus")
    assert done.returncode == 2
    assert b"--bogus" in done.stderr
    assert b"--prompts-format" in run_waza("capture", "--help").stdout


def test_a_capture_loads_neither_logging_nor_progress_bar_until_needed(tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello"}])
    args = [
        "capture",
        str(prompts),
        "--adapter",
        "exec",
        "-g",
        "builtin:hint",
        "-o",
        str(tmp_path / "out.jsonl"),
        "--",
        *EXEC_AGENT,
    ]
    modules = imported(*args)
    assert "waza.runner.engine.pipeline" in modules
    assert not {"structlog", "rich"} & modules
    assert read_jsonl(tmp_path / "out.jsonl")[0]["output"] == "echo: hello"


def test_verbose_logs_still_reach_stderr(tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello"}])
    out = tmp_path / "out.jsonl"
    quiet = run_waza("capture", prompts, "-o", out, "--", *ACP_AGENT)
    loud = run_waza("-vv", "capture", prompts, "-o", out, "--", *ACP_AGENT)
    assert quiet.returncode == loud.returncode == 0, loud.stderr
    assert b"agent started" in loud.stderr and b"[debug" in loud.stderr
    assert b"agent started" not in quiet.stderr


def test_a_local_headless_capture_loads_neither_ray_nor_trials(tmp_path: Path) -> None:
    """A one-prompt capture (headless agent, sh grader) imports only what it runs: no Ray executor without
    --executor ray, no trial records, no JSON Schema validator (the adapter schema is checked by its typed
    decode); its --help not even the engine."""
    agent = tmp_path / "agent.sh"
    agent.write_text("""#!/bin/sh\necho '{"type":"message","text":"hi"}'\necho '{"type":"result","result":"answer"}'\n""")
    grader = tmp_path / "grader.sh"
    grader.write_text("""#!/bin/sh\ncat >/dev/null\necho '{"pass":true,"score":1}'\n""")
    for script in (agent, grader):
        script.chmod(0o755)
    message_result_schema(tmp_path / "schema.json", agent)
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello"}])
    out = tmp_path / "out.jsonl"
    modules = imported("capture", str(prompts), "--adapter", "headless", "--schema", str(tmp_path / "schema.json"),
                       "-g", str(grader), "-o", str(out))  # fmt: skip
    assert read_jsonl(out)[0]["output"] == "answer"
    assert read_jsonl(out)[0]["grades"][0]["pass"] is True
    assert "waza.adapters.headless_schema" in modules
    assert not {"waza.runner.ray_cluster.executor", "ray", "waza.protocol.trial_records"} & modules
    assert not {"jsonschema", "referencing", "waza.protocol.schemas"} & modules
    # nor what other grader kinds and the schema-writing command need
    assert not {"waza.runner.grading.worker_pool", "waza.graders._config", "argparse"} & modules
    assert not {"waza.runner.engine.capture", "waza.runner.engine.run_setup", "waza.runner.engine.specs", "anyio"} & imported(
        "capture", "--help"
    )


def test_the_garbage_collector_is_back_on_while_results_are_graded(tmp_path: Path) -> None:
    """Start-up runs without the cyclic collector; a run's own garbage must still be collected (flat memory)."""
    grader = tmp_path / "collector.py"
    grader.write_text(
        "import gc\n\n\ndef grade(request):\n"
        "    return {'pass': gc.isenabled(), 'score': 1.0 if gc.isenabled() else 0.0, 'reasoning': str(gc.get_freeze_count())}\n"
    )
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello"}, {"id": "b", "input": "again"}])
    out = tmp_path / "out.jsonl"
    done = run_waza("capture", prompts, "-g", f"{grader}:grade", "-o", out, "--adapter", "exec", "--", *EXEC_AGENT)
    assert done.returncode == 0, done.stderr
    captured = read_jsonl(out)
    assert [r["status"] for r in captured] == ["passed", "passed"]
    assert all(int(r["grades"][0]["reasoning"]) > 10_000 for r in captured)  # start-up's objects were frozen out
    regraded = run_waza("grade", out, "-g", f"{grader}:grade")
    assert regraded.returncode == 0, regraded.stderr
    assert all(line["status"] == "passed" for line in map(orjson.loads, regraded.stdout.splitlines()))
