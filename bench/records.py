"""msgspec beside pydantic v2 on what waza does with records: ``python bench/records.py [--runs N]``.

The same record classes (a CaptureResult with its trajectory steps, timing,
usage, exit, grades and verdict: camelCase names, ``pass`` for ``passed``,
constraints, descriptions) are written for each library into bench/.data, then:

- import: the CPU time (user + system, so a busy machine's waits do not count)
  of a fresh ``python -c "import <module>"`` (the library and the record
  module), alternating between the libraries, median of ``--runs``, beside
  ``python -c pass``;
- decode: a ~2 KB CaptureResult JSON line to a validated object (bytes in);
- encode: that object back to JSON bytes;
- schema: the JSON Schema of CaptureResult, generated from the classes.

pydantic is not one of waza's dependencies: install it beside waza to run this
(``pip install pydantic``); without it, its row says so. Not a test: nothing
here asserts, and CI does not run it. The manual's Dependencies page
(docs/manual/explanations/dependencies.md) says what these figures decided.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data" / "records"

MSGSPEC = '''
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, field

Score = Annotated[float, Meta(ge=0, le=1)]


class Base(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    pass


class TrajectoryStep(Base, kw_only=True, omit_defaults=True):
    """One step of what the agent did."""

    type: Literal["message", "thought", "tool_call", "plan", "permission", "event"]
    step_id: str | None = None
    timestamp: Annotated[int, Meta(description="ms since the prompt started.")]
    turn: int | None = None
    role: Literal["agent", "user"] | None = None
    content: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None
    input: Any = None
    output: Any = None
    extra: dict[str, Any] | None = None


class Timing(Base, kw_only=True, omit_defaults=True):
    start: int
    end: int
    total: int
    first_response: int | None = None


class Usage(Base, kw_only=True, omit_defaults=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


class Exit(Base, kw_only=True):
    code: int | None = None
    signal: int | None = None
    timed_out: bool = False


class Grade(Base, kw_only=True):
    name: str
    status: Literal["passed", "failed", "error", "pending"]
    passed: bool | None = field(default=None, name="pass")
    score: Annotated[Score | None, Meta(description="In [0, 1]; null on error or pending.")] = None
    reasoning: str = ""
    details: dict[str, Any] = {}


class Verdict(Base, kw_only=True):
    status: Literal["passed", "failed", "error", "pending"]
    passed: bool | None = field(default=None, name="pass")
    score: Score | None = None
    reasoning: str = ""


class CaptureResult(Base, kw_only=True, omit_defaults=True):
    """One prompt's run."""

    id: str
    input: str | list[str]
    output: Annotated[str, Meta(description="Final agent message text of the last turn.")]
    hint: str | None = None
    trajectory: list[TrajectoryStep] = []
    metadata: dict[str, Any] = {}
    timing: Timing | None = None
    usage: Usage | None = None
    exit: Exit | None = None
    tool_errors: bool = False
    errors: list[str] = []
    grades: list[Grade] = []
    score: Verdict | None = None
    status: Literal["passed", "failed", "error", "pending", "ungraded"] = "ungraded"


_decoder = msgspec.json.Decoder(CaptureResult)
decode = _decoder.decode
encode = msgspec.json.Encoder().encode


def schema():
    return msgspec.json.schema(CaptureResult)
'''

PYDANTIC = '''
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

Score = Annotated[float, Field(ge=0, le=1)]


class Base(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class TrajectoryStep(Base):
    """One step of what the agent did."""

    type: Literal["message", "thought", "tool_call", "plan", "permission", "event"]
    step_id: str | None = None
    timestamp: Annotated[int, Field(description="ms since the prompt started.")]
    turn: int | None = None
    role: Literal["agent", "user"] | None = None
    content: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None
    input: Any = None
    output: Any = None
    extra: dict[str, Any] | None = None


class Timing(Base):
    start: int
    end: int
    total: int
    first_response: int | None = None


class Usage(Base):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


class Exit(Base):
    code: int | None = None
    signal: int | None = None
    timed_out: bool = False


class Grade(Base):
    name: str
    status: Literal["passed", "failed", "error", "pending"]
    passed: bool | None = Field(default=None, alias="pass")
    score: Annotated[Score | None, Field(description="In [0, 1]; null on error or pending.")] = None
    reasoning: str = ""
    details: dict[str, Any] = {}


class Verdict(Base):
    status: Literal["passed", "failed", "error", "pending"]
    passed: bool | None = Field(default=None, alias="pass")
    score: Score | None = None
    reasoning: str = ""


class CaptureResult(Base):
    """One prompt's run."""

    id: str
    input: str | list[str]
    output: Annotated[str, Field(description="Final agent message text of the last turn.")]
    hint: str | None = None
    trajectory: list[TrajectoryStep] = []
    metadata: dict[str, Any] = {}
    timing: Timing | None = None
    usage: Usage | None = None
    exit: Exit | None = None
    tool_errors: bool = False
    errors: list[str] = []
    grades: list[Grade] = []
    score: Verdict | None = None
    status: Literal["passed", "failed", "error", "pending", "ungraded"] = "ungraded"


decode = CaptureResult.model_validate_json


def encode(obj):
    return obj.model_dump_json(by_alias=True, exclude_none=True).encode()


def schema():
    return CaptureResult.model_json_schema(by_alias=True)
'''

LIBRARIES = {"msgspec": MSGSPEC, "pydantic": PYDANTIC}


def sample_line() -> bytes:
    """A ~2 KB CaptureResult line, shaped like bench/fixtures.py's records plus a tool call and a grade."""
    words = " ".join((["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"] * 12)[:110])
    import json

    return json.dumps(
        {
            "id": "case-1",
            "input": "Summarise the deployment log",
            "output": words,
            "hint": "alpha",
            "trajectory": [
                {"type": "message", "stepId": "s1", "timestamp": 3, "turn": 0, "role": "agent", "content": words},
                {
                    "type": "tool_call",
                    "stepId": "s2",
                    "timestamp": 5,
                    "turn": 0,
                    "toolCallId": "t1",
                    "name": "lookup",
                    "status": "completed",
                    "input": {"q": "deploy"},
                    "output": "ok",
                },
            ],
            "metadata": {"suite": "bench", "n": 1},
            "timing": {"start": 1, "end": 2, "total": 1},
            "grades": [{"name": "regex", "status": "passed", "pass": True, "score": 1.0, "reasoning": "ok", "details": {}}],
            "score": {"status": "passed", "pass": True, "score": 1.0, "reasoning": "all graders passed"},
            "status": "passed",
        },
        separators=(",", ":"),
    ).encode()


def installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def import_times(runs: int, names: list[str]) -> dict[str, float]:
    """Median CPU time (user + system) of a fresh interpreter importing each module (and of ``python -c pass``)."""
    commands = {"python -c pass": "pass", **{name: f"import records_{name}" for name in names}}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        order = list(commands.items())
        for name, code in order if i % 2 == 0 else reversed(order):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", code], cwd=DATA, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            samples[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {name: statistics.median(s) for name, s in samples.items()}


def per_call(fn: object, number: int) -> float:
    """Best of five timeit repeats, in microseconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh imports of each module, alternating (default 15)")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    for name, source in LIBRARIES.items():
        (DATA / f"records_{name}.py").write_text(source)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(DATA)], check=True)
    line = sample_line()
    names = [name for name in LIBRARIES if installed(name)]
    imports = import_times(args.runs, names)
    sys.path.insert(0, str(DATA))
    import importlib

    print(f"CaptureResult line: {len(line):,} bytes; imports: median of {args.runs} fresh interpreters")
    print(f"{'':10} {'import CPU ms':>13} {'+ over pass':>12} {'decode µs':>10} {'encode µs':>10} {'schema µs':>10}")
    base = imports["python -c pass"]
    print(f"{'(pass)':10} {base * 1000:13.1f}")
    for name in LIBRARIES:
        if name not in names:
            print(f"{name:10} not installed (pip install {name})")
            continue
        module = importlib.import_module(f"records_{name}")
        obj = module.decode(line)
        assert obj.status == "passed" and obj.grades[0].passed is True  # the same record, read by both
        decode_us = per_call(lambda m=module: m.decode(line), 20_000)
        encode_us = per_call(lambda m=module, o=obj: m.encode(o), 20_000)
        schema_us = per_call(module.schema, 200)
        t = imports[name]
        print(f"{name:10} {t * 1000:13.1f} {(t - base) * 1000:12.1f} {decode_us:10.1f} {encode_us:10.1f} {schema_us:10.1f}")


if __name__ == "__main__":
    main()
