"""The conformance kit end to end: ``waza graders check`` against good graders, broken ones and every built-in.

Each grader in tests/graders/broken/ breaks exactly one rule on purpose; the
kit must fail (or, for the advisory rule, warn about) that rule with the reason
a grader author needs to fix it.
"""

from __future__ import annotations

import anyio
import orjson
import pytest

from waza.graders import CATALOGUE
from waza.protocol import schemas
from waza.protocol.schemas import errors
from waza.runner.conformance.kit import EXIT_WAIT, resolve
from waza.runner.conformance.kit import check as check_grader

from .conftest import ROOT

BROKEN = ROOT / "tests" / "graders" / "broken"
EXAMPLES = ROOT / "examples" / "graders"
JUDGE = ROOT / "tests" / "graders" / "judge.py"


def check(waza, *args: str) -> tuple[int, dict]:
    proc = waza("graders", "check", *args, "--json", "--grader-timeout", "30")  # the broken graders that hang wait this long
    assert proc.returncode in (0, 1), proc.stderr.decode()
    report = orjson.loads(proc.stdout)
    assert errors("ConformanceReport", report) == []
    return proc.returncode, report


def rule(report: dict, rule_id: str) -> dict:
    return next(r for r in report["rules"] if r["id"] == rule_id)


@pytest.mark.parametrize(
    ("grader", "rule_id", "status", "reason"),
    [
        ("score_out_of_range.py", "valid-result", "fail", "grader result 'score' must be finite and in [0, 1], got 1.5"),
        ("exits_nonzero.py", "exit-code", "fail", "exited with code 3 on a valid request: done, exiting with 3 for no reason"),
        ("stray_print.py", "stdout-clean", "fail", "stdout holds more than one JSON document: stray output 'debug: grading now'"),
        ("random_verdict.py", "deterministic", "warning", "results differ in score"),
        ("strict_fields.py", "unknown-fields", "fail", "grader printed nothing on stdout (exit code 1)"),
        ("needs_trajectory.js", "optional-absent", "fail", "grader printed nothing on stdout (exit code 1)"),
        ("latin1_output.py", "unicode", "fail", "grader stdout is not one JSON document"),
        ("reads_64k.py", "large-request", "fail", "grader printed nothing on stdout (exit code 1)"),
        (
            "silent_on_bad_input.py",
            "reports-errors",
            "fail",
            "exited 0 without a result or an error: grader printed nothing on stdout",
        ),
    ],
)
def test_a_grader_breaking_one_rule_is_caught_with_the_reason(waza, grader, rule_id, status, reason):
    code, report = check(waza, str(BROKEN / grader))
    verdict = rule(report, rule_id)
    assert verdict["status"] == status
    assert verdict["reason"].startswith(reason)
    if grader not in ("score_out_of_range.py", "stray_print.py"):  # no result waza can read: every rule needing one fails
        others = [r["id"] for r in report["rules"] if r["status"] != "pass" and r["id"] != rule_id]
        assert others == [], others  # the fault shows where it is, not as noise on other rules
    assert verdict["evidence"][0]["sentBytes"] > 0
    if status == "fail":
        assert code == 1 and report["conforms"] is False
    else:
        assert code == 0 and report["conforms"] is True  # a warning is advice, not a verdict


def test_evidence_shows_what_was_sent_and_received(waza):
    _, report = check(waza, str(BROKEN / "exits_nonzero.py"))
    ev = rule(report, "exit-code")["evidence"][0]
    assert ev["exitCode"] == 3
    assert ev["received"] == '{"pass": true, "score": 1}\n'
    assert ev["sent"].startswith('{"protocol":"2","id":"conformance-minimal"')
    assert "exiting with 3" in ev["stderrTail"]
    assert ev["duration"] > 0


def test_the_tip_for_a_grader_that_crashes_on_an_absent_field(waza):
    _, report = check(waza, str(BROKEN / "needs_trajectory.js"))
    assert 'answers {"error": "why"}' in rule(report, "optional-absent")["reason"]


@pytest.mark.parametrize(
    ("grader", "rule_id", "reason"),
    [
        ("stateful_worker.py", "worker-in-order", "answer 2 differs from a fresh process's answer to the same request"),
        (
            "dies_on_bad_line_worker.py",
            "worker-after-reject",
            "the malformed request: grader exited with code 1 before answering",
        ),
        ("bad_exit_worker.py", "worker-exits-on-eof", "exited with code 4 when stdin closed"),
        (
            "no_request_id_worker.py",
            "worker-request-id",
            "answer 1: grader answer does not echo requestId 'check-1-conformance-minimal'",
        ),
    ],
)
def test_a_worker_breaking_one_worker_rule_is_caught(waza, grader, rule_id, reason):
    code, report = check(waza, str(BROKEN / grader), "--worker")
    assert report["mode"] == "worker"
    verdict = rule(report, rule_id)
    assert verdict["status"] == "fail"
    assert verdict["reason"].startswith(reason)
    others = {r["id"] for r in report["rules"] if r["status"] != "pass"} - {rule_id, "exit-code"}
    assert others == set(), others  # each breaks one rule only (a bad exit on EOF is also a bad one-shot exit)
    assert code == 1


def test_a_worker_ignoring_eof_and_sigterm_is_killed_and_the_check_returns(waza):
    # --grader-timeout is every rule's budget, the healthy answers' too (one line from a Python worker: seconds to
    # spare on a busy machine). It is also what the one-shot probes of a worker that never exits wait out, and the
    # wait for an exit after EOF is the shorter of it and the kit's own grace: the kit's grace itself here.
    proc = waza(
        "graders", "check", str(BROKEN / "ignores_eof_worker.py"), "--worker", "--json", "--grader-timeout", f"{EXIT_WAIT:g}"
    )
    assert proc.returncode == 1, proc.stderr.decode()
    report = orjson.loads(proc.stdout)
    verdict = rule(report, "worker-exits-on-eof")
    assert verdict["status"] == "fail"
    assert verdict["reason"] == f"still running {EXIT_WAIT:g}s after stdin closed; its process group was killed"
    assert verdict["evidence"][0]["signal"] == 9


def test_the_example_graders_conform_in_both_modes_and_the_summary_reads_well(waza):
    for grader in ("contains_hint.py", "contains_hint.jq.sh"):
        code, report = check(waza, f"worker:{EXAMPLES / grader}")
        assert code == 0 and report["conforms"], [r for r in report["rules"] if r["status"] != "pass"]
        assert {r["id"] for r in report["rules"]} >= {"worker-in-order", "worker-after-reject", "worker-exits-on-eof"}
    proc = waza("graders", "check", "examples/graders/contains_hint.js", cwd=EXAMPLES.parent.parent)
    text = proc.stdout.decode()
    assert proc.returncode == 0
    # The path as the user typed it, not the machine's absolute one (the --json report keeps that).
    assert text.startswith("waza graders check examples/graders/contains_hint.js (one-shot: examples/graders/contains_hint.js)")
    assert "  PASS  valid-result" in text
    assert text.rstrip().endswith("9 rules: 9 passed, 0 failed, 0 warnings: conforms")


def test_a_python_function_is_checked_as_a_process(waza, tmp_path):
    (tmp_path / "noisy.py").write_text(
        "def grade(request):\n    print('looking at', request['id'])\n    return {'pass': True, 'score': 1.0}\n"
    )
    code, report = check(waza, f"{tmp_path / 'noisy.py'}:grade")
    assert code == 1
    assert rule(report, "stdout-clean")["reason"].startswith("stdout holds more than one JSON document: stray output 'looking at")


@pytest.mark.slow
def test_bad_arguments_are_usage_errors(waza, tmp_path):
    assert waza("graders", "check", "builtin:nope").returncode == 2
    proc = waza("graders", "check", "builtin:hint", "--grader-config", "[1]")
    assert proc.returncode == 2 and b"--grader-config must be a JSON object" in proc.stderr
    assert waza("graders", "check", str(tmp_path / "missing.sh")).returncode == 2
    assert b"Example" in waza("graders", "check", "--help").stdout


def judge_config(name: str) -> list[str]:
    """LLM judges are checked against a real judge command that always gives 4 of 5."""
    properties = schemas.load(f"grader-{name}").get("properties", {})
    if "command" not in properties:
        return []
    config = {"command": str(JUDGE)}
    if "rubric" in properties:  # required by some, one of two forms for prompt, optional elsewhere
        config["rubric"] = "Is the answer correct?"
    return ["--grader-config", orjson.dumps(config).decode()]


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_every_built_in_grader_conforms(name):
    """In-process kit, real grader processes: the CLI start is paid once above, not once per built-in."""
    config = judge_config(name)
    target = resolve(f"builtin:{name}", orjson.loads(config[1]) if config else None, worker=False)
    report = anyio.run(check_grader, target, 60.0)
    assert errors("ConformanceReport", report.to_dict()) == []
    assert [(r.id, r.reason) for r in report.rules if r.status == "fail"] == []
    assert report.conforms


def test_a_built_in_conforms_as_a_worker(waza):
    code, report = check(waza, "builtin:regex", "--worker")
    assert code == 0 and report["conforms"] and rule(report, "worker-after-reject")["status"] == "pass"
