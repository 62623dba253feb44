"""A command that is not an ACP agent fails with a hint instead of hanging a run with no --timeout."""

from __future__ import annotations

from .conftest import run_waza, write_jsonl


def test_a_silent_command_under_the_acp_adapter_stops_the_run_with_a_hint(tmp_path):
    """A command that never answers initialize stops the run once, instead of each prompt waiting."""
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hi"}, {"id": "b", "input": "again"}])
    proc = run_waza("capture", prompts, "--", "sleep", "30", env={"WAZA_ACP_HANDSHAKE_TIMEOUT": "1"}, timeout=60)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.decode()
    assert "'sleep' does not look like an ACP agent: it did not answer initialize within 1s" in err
    assert "--adapter exec" in err and "--adapter headless" in err
