"""The engine speaks the Python API's language; the CLI maps it to its options in one place.

A Python caller who wrote ``waza.Timeouts(prompt=-1)`` should read ``Timeouts.prompt`` in the
error, not ``--timeout``; a command-line user the other way round (``runner/cli/api_terms.py``).
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import msgspec
import pytest

import waza
from waza.adapters.specs import AGENTS
from waza.runner.cli.api_terms import FLAGS, cli_message, in_cli_terms
from waza.runner.cli.options import AgentOptions, declared_names

from .conftest import ROOT, run_waza, write_jsonl

# Where the engine lives: what a Python caller reaches through ``import waza``.
ENGINE = ["runner/engine", "runner/suites", "runner/grading", "runner/ray_cluster", "adapters", "graders"]
# Functions there that parse command-line values or print the CLI's own lines, and so may name options.
CLI_FUNCTIONS = {
    ("runner/suites/reporters.py", "parse"),  # --reporter KIND:FILE
    ("runner/ray_cluster/connect.py", "reach"),  # Ray's own command line (`ray start --head --port PORT`)
    # a judge grader's own config keys, and (said to be) the command line's options that set them
    ("graders/_judge_client.py", "from_config"),
}
CLI_MODULES = {"graders/_standalone.py", "graders/__main__.py"}  # waza-grader: a command line of its own
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _flags_in_messages(path: Path) -> list[str]:
    """``file:line: text`` of every string in a raise statement or an error's arguments that names an option."""
    tree = ast.parse(path.read_text())
    relative = path.relative_to(ROOT).as_posix()
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Raise) and (relative, name) not in CLI_FUNCTIONS:
                for leaf in ast.walk(child):
                    if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str) and FLAG.search(leaf.value):
                        found.append(f"{relative}:{leaf.lineno}: {leaf.value}")
            visit(child, name)

    visit(tree, None)
    return found


def test_errors_raised_by_the_engine_name_api_terms_not_options() -> None:
    offenders: list[str] = []
    for folder in ENGINE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() not in CLI_MODULES:
                offenders += _flags_in_messages(path)
    assert offenders == [], "\n".join(offenders)


def test_the_cli_table_maps_api_names_to_options_it_has() -> None:
    assert in_cli_terms("Timeouts.prompt must be a positive number") == "--timeout must be a positive number"
    assert in_cli_terms("Timeouts.prompt_unit takes 's'") == "--prompt-timeout-unit takes 's'"  # longest name first
    assert in_cli_terms("written with errors=fail; resume") == "written with --errors fail; resume"
    assert in_cli_terms("needs at least one grader in graders=: pass@k") == "needs at least one grader in --grader: pass@k"
    assert in_cli_terms("field 'HttpAgent.base_url': not a URL") == "field '--base-url': not a URL"
    assert (
        in_cli_terms("my_Timeouts.prompt and Timeouts.prompts") == "my_Timeouts.prompt and Timeouts.prompts"
    )  # whole names only
    options = {flag for flag in FLAGS.values() if flag.startswith("-")}
    help_text = "".join(
        run_waza(command, "--help", env={"COLUMNS": "200"}).stdout.decode()
        for command in ("capture", "trials", "calibrate", "run")
    )
    for option in options:
        assert option.split()[0] in help_text, option


def test_every_agent_spec_field_with_a_flag_is_in_the_table() -> None:
    """An agent option is three places (the spec field, the adapter's use, the flag named as the field): the
    table errors are said in follows from the flag's declaration, for every spec that has the field."""
    hints = typing.get_type_hints(AgentOptions, include_extras=True)
    for spec in AGENTS.values():
        assert FLAGS[f"{spec.__name__}.command"].startswith("the agent command")
        for field in msgspec.structs.fields(spec):
            if field.name in hints:
                assert FLAGS[f"{spec.__name__}.{field.name}"] in declared_names(hints[field.name]), (spec.__name__, field.name)
    # the fields set from a flag of another name, their value converted first
    assert FLAGS["AcpAgent.mcp_servers"] == "--mcp-server"
    assert {FLAGS[f"{s}.env"] for s in ("ExecAgent", "AcpAgent", "HeadlessAgent")} == {"--serve-model"}
    assert in_cli_terms("HeadlessAgent.raw_log and AcpAgent.raw_log") == "--raw-log and --raw-log"


def test_a_python_caller_reads_spec_names_and_a_cli_user_reads_options(tmp_path: Path) -> None:
    with pytest.raises(waza.ConfigError, match=r"^the http adapter needs HttpAgent\.base_url"):
        waza.capture([{"id": "a", "input": "x"}], waza.HttpAgent(model="m"))
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    proc = run_waza("capture", prompts, "--adapter", "http", "--model", "m")
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("waza: the http adapter needs --base-url (e.g."), proc.stderr
    proc = run_waza("capture", prompts, "--adapter", "exec", "--timeout", "0", "--", "cat")
    assert proc.returncode == 2 and "HttpAgent" not in proc.stderr.decode() and "Timeouts" not in proc.stderr.decode()


def test_a_judge_error_names_the_spec_field_in_python_and_the_option_on_the_command_line(tmp_path: Path) -> None:
    with pytest.raises(waza.ConfigError) as caught:
        waza.capture([{"id": "a", "input": "x"}], waza.MockAgent(), [waza.Judge(model_path=tmp_path / "m.gguf")])
    assert caught.value.field == "Judge.model_path" and "--" not in str(caught.value)
    assert cli_message(caught.value) == "field '--judge-model-path': --judge-model-path is for --judge local"
