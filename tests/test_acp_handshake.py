"""A command that is not an ACP agent fails with a hint instead of hanging a run with no --timeout."""

from __future__ import annotations

import subprocess
import sys

from .conftest import read_jsonl, write_jsonl

# The real CLI in a real process, with the 60 s handshake limit shortened so the test is quick.
SHORT_HANDSHAKE = "import waza.adapters.acp as acp; acp.HANDSHAKE_TIMEOUT = 1.0; from waza.runner.cli import main; main()"


def test_a_plain_command_under_the_acp_adapter_is_an_error_with_a_hint(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hi"}, {"id": "b", "input": "again"}])
    proc = subprocess.run(
        [sys.executable, "-c", SHORT_HANDSHAKE, "capture", str(prompts), "--", "sleep", "30"],
        capture_output=True, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    rows = read_jsonl(proc.stdout)
    assert [r["status"] for r in rows] == ["error", "error"]
    assert all("did not answer initialize within 1s; is 'sleep' an ACP agent?" in r["errors"][0] for r in rows)
    assert "--adapter exec" in rows[0]["errors"][0]
