"""Option groups shared by several commands, declared once.

``capture``, ``trials`` and ``run`` all take the agent options, the grader
options and the output options. Each group is a msgspec Struct whose fields carry
their typer declaration; :func:`with_groups` adds the fields to a command's
signature (so typer shows them in --help) and hands the command one object per
group instead of thirty keyword arguments.

This module declares options only: the engine (specs, the API, graders,
datasets) is imported by the methods that build from the options, so
``waza capture --help`` and a usage error do not load it. The annotations are
evaluated as the classes are made (no ``from __future__ import annotations``):
typer reads them, and resolving forty option strings again cost a compile each.
"""

import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_type_hints

import msgspec
import msgspec.structs

from waza.adapters import DEFAULT_ADAPTER
from waza.adapters.base import Adapter
from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import give_to_agents, mark_secret_env
from waza.protocol.jsonl import DEFAULT_MAX_LINE_MB
from waza.protocol.trajectory import DEFAULT_MAX_STEPS, DEFAULT_MAX_TRAJECTORY_MB
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import finite_number, positive_seconds

if TYPE_CHECKING:
    from waza.adapters.sandbox.bwrap import Sandbox
    from waza.runner.engine.datasets import TableOptions
    from waza.runner.engine.inputs import TimeoutUnit
    from waza.runner.engine.specs import AgentSpec, GraderSpecT, Judge, Limits, Output, Timeouts
    from waza.runner.grading.grader_runners import GraderRunner

F = TypeVar("F", bound=Callable[..., Any])

#: The largest value of a limit option (the engine's ``specs.MAX_LIMIT``; not imported, to keep --help light).
MAX_LIMIT = 1 << 20
AGENT = "Agent"
SANDBOX = "Sandbox"
GRADING = "Grading"
OUTPUT = "Output"


def opt(*names: str, help: str, panel: str, **kw: Any) -> Any:
    return option(*names, help=help, rich_help_panel=panel, **kw)


#: The arguments of the commands that run prompts through an agent (capture, trials).
PromptsArgument = Annotated[
    str,
    argument(metavar="PROMPTS", value="FILE", help="Prompts file (JSONL, CSV or Parquet), or - for stdin.", show_default=False),
]
AgentCommandArgument = Annotated[
    list[str] | None,
    argument(metavar="AGENT...", value="COMMAND", help="Agent command and its arguments.", show_default=False),
]


class AgentOptions(msgspec.Struct):
    """Which agent to run and how: the adapter and its options, limits, workspaces."""

    adapter: Annotated[str, opt("--adapter", help="exec, acp, headless, http, replay.", panel=AGENT)] = DEFAULT_ADAPTER
    timeout: Annotated[
        float | None,
        opt(
            "--timeout", help="Per-prompt limit in seconds (a prompt's own `timeout` wins).", panel=AGENT, parser=positive_seconds
        ),
    ] = None
    prompt_timeout_unit: Annotated[
        str,
        opt(
            "--prompt-timeout-unit",
            help="Unit of a prompt's own `timeout`: s, ms (acp-harness files), or auto (seconds; 1000 or more is refused as ambiguous).",
            panel=AGENT,
        ),
    ] = "auto"
    prompts_format: Annotated[
        str | None,
        opt("--prompts-format", help="Prompts file format: jsonl, csv or parquet (default: by extension).", panel=AGENT),
    ] = None
    column_map: Annotated[
        list[str] | None,
        opt(
            "--map",
            help="CSV/Parquet: FIELD=COLUMN, e.g. input=question,hint=answer (other columns go into metadata).",
            panel=AGENT,
        ),
    ] = None
    concurrency: Annotated[int, opt("-j", "--concurrency", help="Prompts run at once (one agent each).", panel=AGENT, min=1)] = 1
    cwd: Annotated[Path | None, opt("--cwd", help="Directory the agent runs in (default: here).", panel=AGENT)] = None
    workspace_dir: Annotated[
        Path | None, opt("--workspace-dir", help="Give each prompt a fresh DIR/<id> as its workspace.", panel=AGENT)
    ] = None
    events: Annotated[bool, opt("--events", help="exec: the agent prints JSONL trajectory events.", panel=AGENT)] = False
    max_steps: Annotated[
        int,
        opt(
            "--max-steps",
            help="Trajectory steps kept per prompt; an agent reporting more gets an error, the rest counted, not kept.",
            panel=AGENT,
            min=1,
            max=MAX_LIMIT,
        ),
    ] = DEFAULT_MAX_STEPS
    max_trajectory_mb: Annotated[
        int,
        opt(
            "--max-trajectory-mb",
            help="MB of trajectory text and data kept per prompt (beyond: as --max-steps).",
            panel=AGENT,
            min=1,
            max=MAX_LIMIT,
        ),
    ] = DEFAULT_MAX_TRAJECTORY_MB
    mcp_server: Annotated[list[str] | None, opt("--mcp-server", help="acp: an MCP server as JSON (repeatable).", panel=AGENT)] = (
        None
    )
    mcp_config: Annotated[Path | None, opt("--mcp-config", help="acp: a JSON file listing MCP servers.", panel=AGENT)] = None
    permission: Annotated[str | None, opt("--permission", help="acp: allow or deny permission requests.", panel=AGENT)] = None
    permission_rules: Annotated[Path | None, opt("--permission-rules", help="acp: permission rules file.", panel=AGENT)] = None
    raw_log: Annotated[Path | None, opt("--raw-log", help="acp: write every JSON-RPC message to FILE.", panel=AGENT)] = None
    auth_method: Annotated[str | None, opt("--auth-method", help="acp: authenticate with this method id.", panel=AGENT)] = None
    schema: Annotated[Path | None, opt("--schema", help="headless: the adapter schema JSON.", panel=AGENT)] = None
    replay_from: Annotated[Path | None, opt("--from", help="replay: recorded file to replay.", panel=AGENT)] = None
    base_url: Annotated[str | None, opt("--base-url", help="http: OpenAI-compatible base URL.", panel=AGENT)] = None
    model: Annotated[str | None, opt("--model", help="http: model name.", panel=AGENT)] = None
    api_key_env: Annotated[str | None, opt("--api-key-env", help="http: env var holding the API key.", panel=AGENT)] = None
    system_prompt: Annotated[str | None, opt("--system-prompt", help="http: system message.", panel=AGENT)] = None
    temperature: Annotated[
        float | None, opt("--temperature", help="http: sampling temperature.", panel=AGENT, parser=finite_number(0))
    ] = None
    max_tokens: Annotated[int | None, opt("--max-tokens", help="http: max tokens per reply.", panel=AGENT)] = None
    stream: Annotated[bool, opt("--stream", help="http: use streaming responses.", panel=AGENT)] = False
    cache: Annotated[
        bool, opt("--cache", help="http: keep replies in the model cache and reuse them (keyed by trial in trials).", panel=AGENT)
    ] = False
    local_model: Annotated[
        bool,
        opt(
            "--local-model",
            help="http: start a local model server as the agent (--model FILE.gguf picks the model).",
            panel=AGENT,
        ),
    ] = False
    agent_env: Annotated[
        list[str] | None,
        opt(
            "--agent-env",
            help="Give the agent NAME though the judge or waza uses it as a key (--judge-api-key-env; repeatable).",
            panel=AGENT,
            metavar="NAME",
        ),
    ] = None
    sandbox: Annotated[
        str | None,
        opt(
            "--sandbox",
            help="exec, headless, acp: run the agent and all it starts in a sandbox (bwrap: bubblewrap, Linux).",
            panel=SANDBOX,
            metavar="bwrap",
        ),
    ] = None
    sandbox_ro: Annotated[
        list[Path] | None, opt("--sandbox-ro", help="Show PATH read-only inside the sandbox (repeatable).", panel=SANDBOX)
    ] = None
    sandbox_rw: Annotated[
        list[Path] | None, opt("--sandbox-rw", help="Show PATH read-write inside the sandbox (repeatable).", panel=SANDBOX)
    ] = None
    sandbox_net: Annotated[
        str,
        opt(
            "--sandbox-net",
            help="none (default), loopback (only --sandbox-port ports of this machine) or host.",
            panel=SANDBOX,
            metavar="none|loopback|host",
        ),
    ] = "none"
    sandbox_port: Annotated[
        list[int] | None,
        opt(
            "--sandbox-port",
            help="With --sandbox-net loopback: a TCP port of 127.0.0.1 the agent may reach (repeatable).",
            panel=SANDBOX,
        ),
    ] = None
    sandbox_env: Annotated[
        list[str] | None,
        opt(
            "--sandbox-env",
            help="Give the sandboxed agent this secret-like variable (others are removed; repeatable).",
            panel=SANDBOX,
        ),
    ] = None

    sandbox_memory: Annotated[
        int | None,
        opt("--sandbox-memory", help="Memory (MB) of the sandboxed agent and all it starts.", panel=SANDBOX, metavar="MB"),
    ] = None
    sandbox_pids: Annotated[
        int | None,
        opt("--sandbox-pids", help="Processes and threads the sandboxed agent may have at once.", panel=SANDBOX, metavar="N"),
    ] = None
    sandbox_cpu_time: Annotated[
        int | None,
        opt("--sandbox-cpu-time", help="CPU seconds each process of the sandboxed agent may use.", panel=SANDBOX, metavar="S"),
    ] = None
    sandbox_disk: Annotated[
        int | None,
        opt(
            "--sandbox-disk",
            help="Largest file (MB) the sandboxed agent may write; a workspace this large after a prompt is its error.",
            panel=SANDBOX,
            metavar="MB",
        ),
    ] = None

    def sandbox_policy(self) -> "Sandbox | None":
        """The --sandbox options as the adapters' Sandbox; one given without --sandbox is a usage error."""
        from waza.adapters.sandbox.bwrap import Sandbox
        from waza.adapters.sandbox.limits import SandboxLimits

        extras = [flag for flag, value in (("--sandbox-ro", self.sandbox_ro), ("--sandbox-rw", self.sandbox_rw),
                  ("--sandbox-port", self.sandbox_port), ("--sandbox-env", self.sandbox_env),
                  ("--sandbox-memory", self.sandbox_memory), ("--sandbox-pids", self.sandbox_pids),
                  ("--sandbox-cpu-time", self.sandbox_cpu_time), ("--sandbox-disk", self.sandbox_disk))
                  if value is not None and value != []]  # fmt: skip
        if self.sandbox_net != "none":
            extras.append("--sandbox-net")
        if self.sandbox is None:
            if extras:
                raise ConfigError(f"{', '.join(extras)} needs --sandbox bwrap")
            return None
        if self.sandbox != "bwrap":
            raise ConfigError(f"--sandbox takes bwrap (bubblewrap), got {self.sandbox!r}")
        return Sandbox(
            read_only=tuple(p.absolute() for p in self.sandbox_ro or []),
            read_write=tuple(p.absolute() for p in self.sandbox_rw or []),
            network=self.sandbox_net,  # type: ignore[arg-type]  # checked by Sandbox
            ports=tuple(self.sandbox_port or []),
            keep_env=tuple(self.sandbox_env or []),
            limits=SandboxLimits(
                memory_mb=self.sandbox_memory,
                pids=self.sandbox_pids,
                cpu_seconds=self.sandbox_cpu_time,
                disk_mb=self.sandbox_disk,
            ),
        )

    def mcp_servers(self) -> tuple[dict[str, Any], ...]:
        """Each --mcp-server, parsed from JSON."""
        import orjson

        servers = []
        for raw in self.mcp_server or []:
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ConfigError(f"--mcp-server is not valid JSON: {exc}") from None
            if not isinstance(value, dict):
                raise ConfigError("--mcp-server must be a JSON object")
            servers.append(value)
        return tuple(servers)

    def timeout_unit(self) -> "TimeoutUnit":
        if self.prompt_timeout_unit not in ("auto", "s", "ms"):
            raise ConfigError(f"--prompt-timeout-unit takes auto, s or ms, got {self.prompt_timeout_unit!r}")
        return self.prompt_timeout_unit  # type: ignore[return-value]

    def table(self) -> "TableOptions":
        """How to read the prompts file: --prompts-format (checked with the file) and --map."""
        from waza.runner.engine.datasets import TableOptions, parse_map

        return TableOptions(format=self.prompts_format, columns=parse_map(self.column_map))  # type: ignore[arg-type]

    def spec(self, command: list[str], env: "Mapping[str, str] | None" = None) -> "AgentSpec":
        """The agent spec these options describe, each flag set straight into the spec field of its name
        (``env``: variables for the agent, from ``--serve-model``); a flag the adapter would ignore is a
        usage error."""
        from waza.adapters import adapter_class
        from waza.adapters.specs import AGENTS

        cls = AGENTS.get(self.adapter)
        if cls is None:
            adapter_class(self.adapter)  # raises the "unknown adapter" error listing the known ones
            raise AssertionError(self.adapter)
        converted: dict[str, Any] = {"mcp_servers": self.mcp_servers(), "sandbox": self.sandbox_policy(), "env": env}
        names = {f.name for spec in AGENTS.values() for f in msgspec.structs.fields(spec)} - {"command"}
        values = {n: converted[n] if n in converted else getattr(self, n) for n in sorted(names)}
        given = {n: v for n, v in values.items() if not (v is None or v is False or (isinstance(v, (tuple, dict)) and not v))}
        if self.api_key_env:
            mark_secret_env(self.api_key_env)
        for name in self.agent_env or []:
            give_to_agents(name)
        ignored = [n for n in given if n not in {f.name for f in msgspec.structs.fields(cls)}]
        if ignored:
            flags = ", ".join(agent_flags()[n] for n in ignored)
            raise ConfigError(f"{flags} does nothing with --adapter {self.adapter}; remove it or choose another adapter")
        return cls(command=tuple(command), **given)

    def resolve(self, command: list[str], env: "Mapping[str, str] | None" = None) -> "tuple[type[Adapter[Any]], AgentSpec]":
        """The adapter class and the agent spec as it runs (its command made absolute), checked."""
        from waza.runner.engine.run_setup import resolve_agent

        return resolve_agent(self.spec(command, env))

    def timeouts(self, grader: float) -> "Timeouts":
        from waza.runner.engine.specs import Timeouts

        return Timeouts(prompt=self.timeout, grader=grader, prompt_unit=self.timeout_unit())


#: The agent spec fields set from a flag of another name, their value converted first (:meth:`AgentOptions.spec`).
_CONVERTED_FLAGS = {"mcp_servers": "--mcp-server", "env": "--serve-model"}


@functools.cache
def agent_flags() -> dict[str, str]:
    """Each agent spec field the command line sets -> its flag (``raw_log``: ``--raw-log``).

    Read from the declarations of :class:`AgentOptions`, whose fields are named as the spec fields they set,
    so adding an agent option is the spec field, the adapter's use of it and the flag (the error table,
    ``api_terms.FLAGS``, follows); only the fields whose value is converted first are listed by hand."""
    from waza.adapters.specs import AGENTS

    hints = get_type_hints(AgentOptions, include_extras=True)
    fields = {f.name for spec in AGENTS.values() for f in msgspec.structs.fields(spec)}
    declared = {name: _long_flag(hints[name]) for name in sorted(fields & hints.keys())}
    return {**declared, **_CONVERTED_FLAGS}


def declared_names(hint: Any) -> list[str]:
    """The names an option field's typer declaration gives it (``Annotated[T, typer.Option("-j", "--concurrency")]``:
    typer keeps the first name where a default would be, the others in ``param_decls``)."""
    from typer.models import OptionInfo

    (info,) = (m for m in hint.__metadata__ if isinstance(m, OptionInfo))
    return [str(info.default), *(info.param_decls or ())]


def _long_flag(hint: Any) -> str:
    return next(name for name in declared_names(hint) if name.startswith("--"))


class GraderOptions(msgspec.Struct):
    """Which graders judge each result, their configs, weights and the LLM judge."""

    grader: Annotated[
        list[str] | None,
        opt(
            "--grader",
            "-g",
            help="Grader: PATH, FILE.py:FUNC, module:FUNC, builtin:NAME, worker:PATH; NAME=SPEC names it (repeatable).",
            panel=GRADING,
        ),
    ] = None
    grader_config: Annotated[
        list[str] | None, opt("--grader-config", help="NAME=JSON config for a grader (bare JSON with one grader).", panel=GRADING)
    ] = None
    grader_weight: Annotated[
        list[str] | None, opt("--grader-weight", help="NAME=W weight in the aggregate score (default 1).", panel=GRADING)
    ] = None
    grader_timeout: Annotated[
        float, opt("--grader-timeout", help="Seconds a grader may take per result.", panel=GRADING, parser=positive_seconds)
    ] = 60.0
    isolate: Annotated[
        bool, opt("--isolate", help="Run built-in graders as subprocesses instead of in-process.", panel=GRADING)
    ] = False
    judge: Annotated[
        str | None,
        opt("--judge", help="LLM graders: 'local' starts a local model server as their judge (no API key).", panel=GRADING),
    ] = None
    judge_base_url: Annotated[
        str | None,
        opt("--judge-base-url", help="LLM graders: OpenAI-compatible endpoint, e.g. https://api.openai.com/v1.", panel=GRADING),
    ] = None
    judge_model: Annotated[str | None, opt("--judge-model", help="LLM graders: model name for the endpoint.", panel=GRADING)] = (
        None
    )
    judge_api_key_env: Annotated[
        str | None, opt("--judge-api-key-env", help="LLM graders: env var holding the endpoint's API key.", panel=GRADING)
    ] = None
    judge_command: Annotated[
        str | None, opt("--judge-command", help="LLM graders: a judge program (prompt on stdin, reply on stdout).", panel=GRADING)
    ] = None
    judge_model_path: Annotated[
        Path | None, opt("--judge-model-path", help="--judge local: the GGUF model file to serve.", panel=GRADING)
    ] = None
    no_cache: Annotated[
        bool, opt("--no-cache", help="LLM graders: ask the judge every time; keep nothing in the model cache.", panel=GRADING)
    ] = False

    def specs(self, *, judge: bool = True) -> "list[GraderSpecT]":
        """Every ``--grader`` parsed into an API spec, judge options merged in (unless ``judge`` is false):
        the one way commands name graders."""
        from waza.runner.cli.grader_flags import build_specs
        from waza.runner.engine.specs import Builtin
        from waza.runner.grading.judge_setup import apply as apply_judge

        parsed: list[GraderSpecT] = [
            msgspec.structs.replace(s, isolate=self.isolate) if isinstance(s, Builtin) else s
            for s in build_specs(self.grader or [], self.grader_config, self.grader_weight)
        ]
        chosen = self.judge_spec() if judge else None
        return parsed if chosen is None else apply_judge(parsed, chosen.judge_config())

    def runners(self) -> "list[GraderRunner]":
        """The graders of :meth:`specs`, checked and ready to enter."""
        from waza.runner.engine.run_setup import build_graders
        from waza.runner.engine.specs import Timeouts

        return build_graders(self.specs(), Timeouts(grader=self.grader_timeout))

    def judge_spec(self) -> "Judge | None":
        """The --judge-* options as a Judge spec (merged into the run's LLM graders, or a suite's); None when none
        is given."""
        from waza.runner.engine.specs import Judge

        if self.judge not in (None, "local"):
            raise ConfigError(f"--judge takes 'local', got {self.judge!r}", field="--judge")
        if self.judge_api_key_env:
            mark_secret_env(self.judge_api_key_env)
        judge = Judge(
            local=self.judge == "local",
            base_url=self.judge_base_url,
            model=self.judge_model,
            api_key_env=self.judge_api_key_env,
            command=self.judge_command,
            model_path=self.judge_model_path,
            cache=not self.no_cache,
        )
        return judge if judge.judge_config() else None


class OutputOptions(msgspec.Struct):
    """Where results go and what else the run prints (progress, the --fail-under gate)."""

    output: Annotated[
        str,
        opt(
            "-o",
            "--output",
            help="Results JSONL file, or - for stdout (the default, also on a terminal: stdout carries only the records).",
            panel=OUTPUT,
        ),
    ] = "-"
    resume: Annotated[
        bool, opt("--resume", help="Skip results already in -o FILE (a torn last line is repaired).", panel=OUTPUT)
    ] = False
    retry_errors: Annotated[
        bool,
        opt(
            "--retry-errors",
            help="With --resume: run again the results in -o FILE that ended as errors (each new one replaces its error).",
            panel=OUTPUT,
        ),
    ] = False
    progress: Annotated[
        bool | None,
        opt(
            "--progress/--no-progress",
            help="Progress bar on stderr (default: when stderr is a terminal).",
            panel=OUTPUT,
            show_default=False,
        ),
    ] = None
    fail_under: Annotated[str | None, opt("--fail-under", help="Exit 1 below these: pass_rate=0.8,score=0.5.", panel=OUTPUT)] = (
        None
    )
    max_line_mb: Annotated[
        int,
        opt(
            "--max-line-mb",
            help="Longest input line read, in MB (an endless line is an error, not endless memory).",
            panel=OUTPUT,
            min=1,
            max=MAX_LIMIT,
        ),
    ] = DEFAULT_MAX_LINE_MB

    def limits(self, agent: AgentOptions | None = None) -> "Limits":
        """The run's Limits: the line limit from here, the trajectory's from the agent options (when the command runs one)."""
        from waza.runner.engine.specs import Limits

        if agent is None:
            return Limits(line_mb=self.max_line_mb)
        return Limits(line_mb=self.max_line_mb, steps=agent.max_steps, trajectory_mb=agent.max_trajectory_mb)

    def spec(self) -> "Output":
        from waza.runner.engine.specs import Output

        note_records_on_terminal(self.output)
        return Output(self.output, resume=self.resume, retry_errors=self.retry_errors, progress=self.progress)


def note_records_on_terminal(output: str) -> None:
    """Results to a terminal's stdout (no -o): said once on stderr, so a screen of JSON is not a surprise.
    Piped or redirected, stdout is data and nothing is said."""
    if output == "-" and sys.stdout.isatty():
        print("waza: results go to standard output as JSON lines (give -o FILE to write them to a file)", file=sys.stderr)


def with_groups(**groups: type) -> Callable[[F], F]:
    """Expose each group's fields as options of the decorated command; pass it one object per group."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        # Resolve the command's own (possibly string) annotations here, in its module's namespace,
        # because typer will read the wrapper's signature, not the function's.
        resolved = get_type_hints(fn, include_extras=True)
        own = [p.replace(annotation=resolved.get(p.name, p.annotation)) for p in sig.parameters.values() if p.name not in groups]
        added: list[inspect.Parameter] = []
        owners: dict[str, str] = {}
        for key, cls in groups.items():
            hints = get_type_hints(cls, include_extras=True)
            for f in msgspec.structs.fields(cls):
                added.append(
                    inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
                )
                owners[f.name] = key

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bundles: dict[str, dict[str, Any]] = {key: {} for key in groups}
            for name in list(kwargs):
                if name in owners:
                    bundles[owners[name]][name] = kwargs.pop(name)
            for key, cls in groups.items():
                kwargs[key] = cls(**bundles[key])
            return fn(*args, **kwargs)

        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.kind == inspect.Parameter.KEYWORD_ONLY else p for p in own]
        wrapper.__signature__ = sig.replace(parameters=params + added)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params + added}
        return wrapper  # type: ignore[return-value]

    return decorate
