"""The model cache: judge answers (endpoint and command) and, with --cache, the http agent's replies,
against the real loopback servers that log every request they get."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from .conftest import ROOT, executable, loopback_server, read_jsonl, run_waza, write_jsonl

JUDGE = Path(__file__).parent / "fixtures" / "judge" / "judge_server.py"
CHAT = Path(__file__).parent / "fixtures" / "http" / "chat_server.py"


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    with loopback_server(JUDGE, tmp_path_factory.mktemp("judge") / "requests.jsonl") as running:
        yield running


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    with loopback_server(CHAT, tmp_path_factory.mktemp("chat") / "requests.jsonl") as running:
        yield running


def results(tmp_path: Path, *outputs: str) -> Path:
    rows = [{"id": f"r{i}", "input": "What is 2+2?", "output": out, "status": "ungraded"} for i, out in enumerate(outputs)]
    return write_jsonl(tmp_path / "results.jsonl", rows)


def grade(source: Path, *args: str) -> tuple[subprocess.CompletedProcess[bytes], list[dict]]:
    proc = run_waza("grade", source, "-g", "builtin:llm", *args)
    return proc, read_jsonl(proc.stdout)


def requests_during(log: Path, action):
    log.write_bytes(b"")
    value = action()
    return value, read_jsonl(log)


def test_a_second_grade_of_the_same_results_asks_the_judge_nothing(judge, tmp_path):
    base_url, log = judge
    source = results(tmp_path, "4 <<score:5>>", "5 <<score:2>>")
    (proc, first), sent = requests_during(log, lambda: grade(source, "--judge-base-url", base_url))
    assert proc.returncode == 0, proc.stderr
    assert len(sent) == 2 and "judge 0 hits, 2 misses" in proc.stderr.decode()
    (proc, second), sent = requests_during(log, lambda: grade(source, "--judge-base-url", base_url))
    assert sent == [] and "judge 2 hits, 0 misses" in proc.stderr.decode()
    scores = lambda lines: [(g["grades"][0]["score"], g["grades"][0]["details"]["cache"]) for g in lines]
    assert scores(first) == [(1.0, "miss"), (0.25, "miss")] and scores(second) == [(1.0, "hit"), (0.25, "hit")]
    # --no-cache asks again; another model is another key.
    (proc, _), sent = requests_during(log, lambda: grade(source, "--judge-base-url", base_url, "--no-cache"))
    assert len(sent) == 2 and "model cache" not in proc.stderr.decode()
    (_, _), sent = requests_during(log, lambda: grade(source, "--judge-base-url", base_url, "--judge-model", "other"))
    assert len(sent) == 2


def test_an_error_reply_is_never_cached(judge, tmp_path):
    base_url, log = judge
    source = results(tmp_path, "4 <<reply:I think it is fine>>")
    for _ in range(2):
        (proc, [line]), sent = requests_during(log, lambda: grade(source, "--judge-base-url", base_url))
        assert line["grades"][0]["status"] == "error" and len(sent) == 1, proc.stderr
    assert not list((tmp_path / "model-cache").rglob("*.json"))


def test_judge_commands_are_cached_and_cache_clear_empties_it(tmp_path):
    calls = tmp_path / "calls.log"
    command = executable(
        tmp_path / "judge.py",
        f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nopen({str(calls)!r}, 'a').write('call\\n')\n"
        'print(\'{"reasoning": "ok", "score": 4}\')\n',
    )
    source = results(tmp_path, "4")
    for _ in range(2):
        proc, [line] = grade(source, "--judge-command", str(command))
        assert line["grades"][0]["status"] == "passed", proc.stderr
    assert calls.read_text() == "call\n"
    where = run_waza("cache", "dir")
    assert where.stdout.decode().strip() == str(tmp_path / "model-cache")
    cleared = run_waza("cache", "clear")
    assert cleared.returncode == 0 and "removed 1 cached answer" in cleared.stderr.decode()
    grade(source, "--judge-command", str(command))
    assert calls.read_text() == "call\n" * 2


def test_two_processes_filling_the_cache_at_once(judge, tmp_path):
    base_url, log = judge
    source = results(tmp_path, *[f"{i} <<score:{1 + i % 5}>>" for i in range(12)])
    log.write_bytes(b"")
    command = [sys.executable, "-m", "waza", "grade", str(source), "-g", "builtin:llm", "--judge-base-url", base_url, "-j", "4"]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert 12 <= len(read_jsonl(log)) <= 24
    entries = list((tmp_path / "model-cache").rglob("*.json"))
    assert len(entries) == 12 and all(orjson.loads(e.read_bytes())["text"] for e in entries)
    assert not [p for p in (tmp_path / "model-cache").rglob(".tmp-*")]
    (proc, _), sent = requests_during(log, lambda: grade(source, "--judge-base-url", base_url))
    assert sent == [] and "judge 12 hits, 0 misses" in proc.stderr.decode()


def http_args(base_url: str) -> list[str]:
    return ["--adapter", "http", "--base-url", base_url, "--model", "echo-1"]


def test_the_http_agent_uses_the_cache_only_when_asked(chat, tmp_path):
    base_url, log = chat
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": ["hello", "again"]}])
    capture = lambda *extra: run_waza("capture", prompts, *http_args(base_url), *extra)
    (first, sent) = requests_during(log, lambda: capture("--cache"))
    assert first.returncode == 0 and len(sent) == 2, first.stderr
    (second, sent) = requests_during(log, lambda: capture("--cache"))
    assert sent == [] and "agent 2 hits, 0 misses" in second.stderr.decode()
    [a], [b] = read_jsonl(first.stdout), read_jsonl(second.stdout)
    assert a["output"] == b["output"] and [s["content"] for s in a["trajectory"]] == [s["content"] for s in b["trajectory"]]
    (_, sent) = requests_during(log, lambda: capture())
    assert len(sent) == 2
    refused = run_waza("capture", prompts, "--adapter", "exec", "--cache", "--", sys.executable, "-c", "print(1)")
    assert refused.returncode == 2 and b"--cache does nothing with --adapter exec" in refused.stderr


def test_trials_key_the_agent_cache_on_the_trial_number(chat, tmp_path):
    base_url, log = chat
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello", "hint": "hello"}])
    trials = lambda: run_waza("trials", prompts, "-k", "3", *http_args(base_url), "--cache", "-g", "builtin:hint")
    (proc, sent) = requests_during(log, trials)
    assert proc.returncode == 0 and len(sent) == 3, proc.stderr
    assert len(list((tmp_path / "model-cache").rglob("*.json"))) == 3  # three trials, three keys
    (proc, sent) = requests_during(log, trials)
    assert sent == [] and "agent 3 hits, 0 misses" in proc.stderr.decode()


def judge_script(folder: Path, score: int, calls: Path) -> Path:
    """A judge program (a plain script run as ``python ./judge.py``) that logs each call and gives ``score``."""
    folder.mkdir(exist_ok=True)
    script = folder / "judge.py"
    script.write_text(
        f"import sys\nsys.stdin.read()\nopen({str(calls)!r}, 'a').write({folder.name!r} + '\\n')\n"
        f'print(\'{{"reasoning": "scored by {folder.name}", "score": {score}}}\')\n'
    )
    return script


def test_a_judge_command_is_known_by_the_program_it_runs(tmp_path):
    """The same ``python ./judge.py`` in two projects is two judges, and a script edited in place is a new one."""
    calls = tmp_path / "calls.log"
    source = results(tmp_path, "4")
    lenient, strict = tmp_path / "lenient", tmp_path / "strict"
    judge_script(lenient, 5, calls), judge_script(strict, 1, calls)
    command = f"{sys.executable} ./judge.py"

    def verdict(project: Path) -> str:
        proc = run_waza("grade", source, "-g", "builtin:llm", "--judge-command", command, cwd=project)
        [line] = read_jsonl(proc.stdout)
        return line["grades"][0]["status"]

    assert [verdict(lenient), verdict(strict), verdict(lenient), verdict(strict)] == ["passed", "failed"] * 2
    assert calls.read_text().split() == ["lenient", "strict"]  # each project's second run was a hit
    judge_script(lenient, 1, calls)  # the lenient project's judge.py, edited in place
    assert verdict(lenient) == "failed" and calls.read_text().split()[-1] == "lenient"


def cached_entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "model-cache" / "calls").glob("*/*.json"))


def test_a_torn_or_edited_entry_is_asked_again_and_rewritten(tmp_path):
    calls = tmp_path / "calls.log"
    judge = judge_script(tmp_path / "project", 5, calls)
    source = results(tmp_path, "4")
    command = f"{sys.executable} {judge}"
    for damage in (
        lambda data: data[: len(data) // 2],  # torn by a full disk
        lambda data: orjson.dumps({**orjson.loads(data), "text": '{"reasoning": "ok", "sco'}),  # valid JSON, no verdict
        lambda data: b"[]",
    ):
        proc, [line] = grade(source, "--judge-command", command)
        assert line["grades"][0]["status"] == "passed", proc.stderr
        [entry] = cached_entries(tmp_path)
        entry.write_bytes(damage(entry.read_bytes()))
    proc, [line] = grade(source, "--judge-command", command)
    assert line["grades"][0]["status"] == "passed" and "judge 0 hits, 1 miss" in proc.stderr.decode()
    assert calls.read_text().split() == ["project"] * 4  # every damaged entry was asked again, never an error grade
    proc, [line] = grade(source, "--judge-command", command)
    assert line["grades"][0]["details"]["cache"] == "hit" and "judge 1 hit, 0 misses" in proc.stderr.decode()


def test_a_fifo_or_symlink_in_the_cache_never_blocks_and_clear_removes_only_the_cache(tmp_path):
    calls = tmp_path / "calls.log"
    judge = judge_script(tmp_path / "project", 5, calls)
    source = results(tmp_path, "4")
    command = f"{sys.executable} {judge}"
    grade(source, "--judge-command", command)
    [entry] = cached_entries(tmp_path)
    entry.unlink()
    os.mkfifo(entry)  # an entry that is a FIFO: a miss, never a blocked open
    proc, [line] = grade(source, "--judge-command", command)
    assert line["grades"][0]["status"] == "passed" and "judge 0 hits, 1 miss" in proc.stderr.decode()
    cache = tmp_path / "model-cache"
    shutil.rmtree(cache / "calls")
    os.mkfifo(cache / "calls")
    cleared = run_waza("cache", "clear", timeout=30)
    assert cleared.returncode == 0 and not (cache / "calls").exists(), cleared.stderr
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "ab").mkdir(parents=True)
    (elsewhere / "ab" / "keep.json").write_text("{}")
    (cache / "calls").symlink_to(elsewhere)
    cleared = run_waza("cache", "clear", timeout=30)
    assert cleared.returncode == 0 and not (cache / "calls").is_symlink() and (elsewhere / "ab" / "keep.json").exists()


def test_secrets_are_masked_before_they_reach_the_cache(chat, tmp_path):
    """A secret the agent printed and the judge quoted back, and an API key a server echoed, are kept masked."""
    secret = "sk-test-4f9a1c7e2b"
    env = {"MY_SERVICE_TOKEN": secret, "CHAT_KEY": "abc-key-0192837465"}
    quoting = executable(
        tmp_path / "quoting_judge.py",
        f"#!{sys.executable}\nimport json, sys\ntext = sys.stdin.read()\n"
        "quoted = text.split('## Agent output')[1].split('##')[0].strip()\n"
        "print(json.dumps({'reasoning': 'the agent printed ' + quoted, 'score': 5}))\n",
    )
    source = results(tmp_path, f"the token is {secret}")
    proc = run_waza("grade", source, "-g", "builtin:llm", "--judge-command", str(quoting), env=env)
    [line] = read_jsonl(proc.stdout)
    assert line["grades"][0]["status"] == "passed" and "[REDACTED]" in line["grades"][0]["reasoning"], proc.stderr
    base_url, _ = chat
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello [echoauth]"}])
    proc = run_waza("capture", prompts, *http_args(base_url), "--api-key-env", "CHAT_KEY", "--cache", env=env)
    [record] = read_jsonl(proc.stdout)
    assert "auth Bearer [REDACTED]" in record["output"], proc.stderr
    stored = b"".join(e.read_bytes() for e in cached_entries(tmp_path))
    assert len(cached_entries(tmp_path)) == 2 and stored.count(b"[REDACTED]") >= 2
    assert secret.encode() not in stored and b"abc-key-0192837465" not in stored
    again = run_waza("capture", prompts, *http_args(base_url), "--api-key-env", "CHAT_KEY", "--cache", env=env)
    assert "agent 1 hit" in again.stderr.decode() and read_jsonl(again.stdout)[0]["output"] == record["output"]
