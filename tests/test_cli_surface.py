"""The command line's surface: help that says what goes where, one meaning per short option, completion, renamed options.

The help and completion tests run ``waza`` as a user does (a subprocess); the
walks over every option are in-process, over the click command typer builds.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
import typer
from rich.markup import render

from waza.runner.cli.app import build

from .analysis_runs import capture
from .conftest import read_jsonl, run_waza, write_jsonl

ROOT = Path(__file__).resolve().parent.parent


def commands() -> list[tuple[str, ...]]:
    """Every command path, groups' sub-commands included, e.g. ("graders", "check")."""
    found: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(build()), ())
    return found


def params() -> list[tuple[tuple[str, ...], object]]:
    """(command path, click parameter) for every parameter of every command."""
    root = typer.main.get_command(build())
    out = []
    for path in commands():
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        out += [(path, p) for p in command.params]  # type: ignore[attr-defined]
    return out


def test_every_short_option_has_one_meaning_across_commands() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    for _path, param in params():
        opts = param.opts + param.secondary_opts  # type: ignore[attr-defined]
        long = next((o for o in opts if o.startswith("--")), None)
        for short in (o for o in opts if not o.startswith("--")):
            meanings[short].add(long or "")
    assert {short: m for short, m in meanings.items() if len(m) > 1} == {}
    assert meanings["-k"] == {"--trials"} and meanings["-l"] == {"--list"} and meanings["-f"] == {"--format"}


@pytest.mark.parametrize("path", commands(), ids=lambda p: " ".join(p) or "waza")
def test_help_says_what_goes_there_not_a_python_type(path: tuple[str, ...]) -> None:
    done = run_waza(*path, "-v", "--help") if not path else run_waza("-v", "--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    assert "Usage:" in text
    leaked = re.findall(r"<(?:str|path|int|float|parse|positive_seconds|int range|float range|[a-z_]+\(?)>", text)
    assert leaked == [], (path, leaked)


def test_no_help_text_loses_brackets_to_markup() -> None:
    """A help text is rendered as rich markup: `[view]` would vanish unless written `\\[view]`."""
    root = typer.main.get_command(build())
    lost = []
    for path in commands():
        command = root
        for name in path:
            command = command.commands[name]
        for text in [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]:
            if render(text).plain != text.replace("\\[", "["):
                lost.append((path, text))
    assert lost == []


def test_view_help_names_the_extra_for_a_checkout_and_for_the_package() -> None:
    text = " ".join(run_waza("view", "--help").stdout.decode().split())
    assert "pip install '.[view]'" in text and "pip install 'waza[view]'" in text


def test_a_missing_extra_is_named_with_the_pip_command_for_this_checkout(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "uvicorn"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('uvicorn is not installed here', name='uvicorn')\n")
    done = run_waza("view", str(tmp_path), env={"PYTHONPATH": str(blocker.parent)})
    assert done.returncode == 2
    # This test runs from a source checkout: 'waza[view]' would fetch the published package instead.
    assert done.stderr.decode() == f"waza: waza view needs the view extra (uvicorn is missing): pip install -e '{ROOT}[view]'\n"


def test_show_completion_prints_a_bash_script_that_calls_waza() -> None:
    """Run from bash, as a user types it: the shell is found from waza's parent process (so the test does
    not depend on what started pytest; the ``; exit $?`` keeps bash from replacing itself with waza)."""
    done = subprocess.run(
        ["bash", "-c", '"$@"; exit $?', "bash", sys.executable, "-m", "waza", "--show-completion"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    script = done.stdout.decode()
    assert "_WAZA_COMPLETE=complete_bash" in script and "complete -o default -F _waza_completion waza" in script


def complete(words: str) -> list[str]:
    """What bash completion offers for the last of ``words``, asked of waza as the installed script asks."""
    env = {**os.environ, "_WAZA_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    done = subprocess.run([sys.executable, "-m", "waza"], env=env, capture_output=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().split()


def test_completion_offers_commands_sub_commands_and_options_but_not_hidden_names() -> None:
    assert complete("waza cap") == ["capture"]
    assert complete("waza graders ch") == ["check"]
    assert complete("waza capture --grader-t") == ["--grader-timeout"]
    offered = complete("waza graders check --")
    assert "--grader-config" in offered and "--config" not in offered and "--timeout" not in offered


def test_quick_help_lists_the_root_options_typer_has() -> None:
    quick = run_waza("--help").stdout.decode().split("Options:\n")[1].split("\n\n")[0]
    listed = {word for line in quick.splitlines() for word in line.split() if word.startswith("-")}
    root = typer.main.get_command(build())
    declared = {o.rstrip(",") for p in root.params for o in p.opts + p.secondary_opts} | {"-h", "--help"}
    assert {w.rstrip(",") for w in listed} == declared


PROMPTS = [{"id": str(i), "input": "x", "metadata": {"category": c}} for i, c in enumerate("aab")]


def test_format_markdown_is_how_balance_and_compare_write_markdown_and_the_old_flag_still_works(tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", PROMPTS)
    new = run_waza("balance", prompts, "--format", "markdown")
    assert new.returncode == 0 and new.stdout.startswith(b"#"), new.stderr
    assert run_waza("balance", prompts, "-f", "markdown").stdout == new.stdout
    assert run_waza("balance", prompts, "--markdown").stdout == new.stdout
    assert orjson.loads(run_waza("balance", prompts, "-f", "json").stdout)["key"] == "category"
    both = run_waza("balance", prompts, "--markdown", "--format", "json")
    assert both.returncode == 2 and both.stderr == b"waza: --markdown is the old name of --format: give --format only\n"
    assert b"--markdown" not in run_waza("balance", "--help").stdout


def test_compare_and_summarize_take_format_markdown_and_compare_label_by_its_long_name_only(tmp_path: Path) -> None:
    a = capture(tmp_path, "a.jsonl")
    new = run_waza("compare", a, a, "--label", "old", "--label", "new", "--format", "markdown")
    assert new.returncode == 0 and "## new vs old" in new.stdout.decode(), new.stderr
    assert run_waza("compare", a, a, "--label", "old", "--label", "new", "--markdown").stdout == new.stdout
    summary = run_waza("summarize", a, "-f", "markdown")
    assert summary.returncode == 0 and summary.stdout.startswith(b"#"), summary.stderr
    assert run_waza("summarize", a, "--markdown").stdout == summary.stdout
    assert run_waza("summarize", a, "-f", "jsonl").stdout == run_waza("summarize", a).stdout
    short = run_waza("compare", a, a, "-l", "old")
    assert short.returncode == 2 and b"-l" in short.stderr


def test_graders_check_takes_grader_config_and_grader_timeout_and_the_old_names_hidden() -> None:
    new = run_waza("graders", "check", "builtin:hint", "--grader-config", "[1]", "--grader-timeout", "30")
    assert new.returncode == 2 and new.stderr == b"waza: --grader-config must be a JSON object\n"
    old = run_waza("graders", "check", "builtin:hint", "--config", "[1]", "--timeout", "30")
    assert old.stderr == new.stderr
    both = run_waza("graders", "check", "builtin:hint", "--config", "{}", "--grader-config", "{}")
    assert (
        both.returncode == 2 and both.stderr == b"waza: --config is the old name of --grader-config: give --grader-config only\n"
    )
    text = run_waza("graders", "check", "--help").stdout.decode()
    assert "--grader-config" in text and "--config " not in text.replace("--grader-config", "")
    assert "--timeout" not in text.replace("--grader-timeout", "")


def test_calibrate_writes_the_markdown_sheet_with_sheet_markdown_or_its_old_name(tmp_path: Path) -> None:
    captured = capture(tmp_path, "a.jsonl")
    for flag in ("--sheet-markdown", "--markdown"):
        md = tmp_path / f"{flag.strip('-')}.md"
        done = run_waza("calibrate", captured, "--sample", "2", "-o", tmp_path / "sheet.jsonl", flag, md)
        assert done.returncode == 0, done.stderr
        assert md.read_text().startswith("#")


EXEC_AGENT = [sys.executable, str(ROOT / "tests" / "agents" / "exec_agent.py")]


def one_line(stderr: bytes) -> str:
    """A usage error's words, without the box typer draws around them or its line breaks."""
    return " ".join(stderr.decode().replace("│", " ").split())


def test_an_unknown_grader_config_key_names_the_keys_allowed_there(tmp_path: Path) -> None:
    results = write_jsonl(tmp_path / "r.jsonl", [{"id": "a", "input": "q", "output": "x"}])
    done = run_waza("grade", results, "-g", "builtin:text", "--grader-config", '{"mustmatch": ["x"]}')
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == (
        b"waza: grader 'text' config: unknown key 'mustmatch' "
        b"(allowed here: contains, contains_cs, not_contains, not_contains_cs, regex_match, regex_not_match)\n"
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-j", "abc"], "Invalid value for '-j' / '--concurrency': 'abc' is not a whole number (at least 1)"),
        (["-j", "0"], "Invalid value for '-j' / '--concurrency': 0 is out of range: it must be at least 1"),
        (["--max-steps", "9999999999"], "Invalid value for '--max-steps': 9999999999 is out of range: it must be between 1"),
    ],
)
def test_a_bad_whole_number_option_says_what_it_takes(tmp_path: Path, args: list[str], words: str) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    done = run_waza("capture", prompts, *args, "--adapter", "exec", "--", *EXEC_AGENT)
    assert done.returncode == 2 and words in one_line(done.stderr), done.stderr


def test_one_result_and_one_step_are_singular(tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello", "hint": "hello"}])
    out = tmp_path / "out.jsonl"
    done = run_waza("capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", out, "--", *EXEC_AGENT)
    assert done.returncode == 0, done.stderr
    assert b"waza: 1 result: 1 passed" in done.stderr
    report = run_waza("report", out, "-f", "markdown")
    assert report.stderr.startswith(b"waza: report of 1 prompt: 1 passed")
    one_step = [{**row, "trajectory": row["trajectory"][:1]} for row in read_jsonl(out.read_bytes())]
    html = run_waza("report", write_jsonl(tmp_path / "one.jsonl", one_step), "-f", "html").stdout.decode()
    assert "Trajectory (1 step)</h4>" in html


def test_an_unreachable_server_is_named_by_its_url(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hello"}])
    url = f"http://127.0.0.1:{port}/v1"
    # A refused connection is retried with growing waits (0.5 s, 1 s, 2 s, ...) while the prompt's --timeout leaves
    # room for them: 3 s ends the retries after two, and the message names the server all the same.
    done = run_waza("capture", prompts, "--adapter", "http", "--base-url", url, "--model", "m", "--timeout", "3")
    [row] = read_jsonl(done.stdout)
    assert row["errors"][0].startswith(f"turn 0: cannot reach the server at {url}/chat/completions: "), row["errors"]
