"""The benchmark's inputs, written under bench/.data (gitignored): agents, graders, schemas, prompts, records.

The agents print JSON events as a CLI agent does (a message, a tool call, then a
result line), so waza and the peer both drive them through the same headless
adapter schema. The graders answer the one-shot protocol both speak (a JSON
request on stdin, ``{"pass", "score"}`` on stdout); the worker grader answers one
request per line and echoes ``requestId``. Large record files are kept between
runs; everything small is rewritten each time, so an edit here always applies.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson

__all__ = ["generate"]

PY = sys.executable

AGENT_PY = """#!{python}
import json
import sys

prompt = sys.argv[-1]
print(json.dumps({{"type": "message", "text": "thinking about " + prompt}}))
print(json.dumps({{"type": "tool", "name": "lookup", "input": prompt}}))
print(json.dumps({{"type": "result", "result": "answer: " + prompt}}))
"""

AGENT_SH = """#!/bin/sh
printf '{"type":"message","text":"thinking about %s"}\\n' "$1"
printf '{"type":"tool","name":"lookup","input":"%s"}\\n' "$1"
printf '{"type":"result","result":"answer: %s"}\\n' "$1"
"""

GRADER_PY = """#!{python}
import json
import sys

request = json.load(sys.stdin)
passed = (request.get("hint") or "") in (request.get("output") or "")
print(json.dumps({{"pass": passed, "score": 1.0 if passed else 0.0}}))
"""

GRADER_SH = """#!/bin/sh
request=$(cat)
case "$request" in
  *'"output":"answer: '*) echo '{"pass":true,"score":1}' ;;
  *) echo '{"pass":false,"score":0}' ;;
esac
"""

WORKER_PY = """#!{python}
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    passed = (request.get("hint") or "") in (request.get("output") or "")
    print(json.dumps({{"pass": passed, "score": 1.0 if passed else 0.0, "requestId": request.get("requestId")}}), flush=True)
"""

FUNCTION = """def grade(request):
    return {"pass": "alpha" in request["output"], "score": 1.0}
"""

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def schema(agent: Path) -> dict[str, object]:
    """A headless adapter schema (acp-harness's format, which waza reads unchanged) for a bench agent."""
    return {
        "version": 1,
        "name": agent.stem,
        "command": [str(agent)],
        "sessionMode": "stream",
        "prompt": {"flag": ""},
        "output": {"flag": "", "value": ""},
        "outputEvents": [
            {"match": {"path": "$.type", "value": "message"}, "emitAs": "message", "extract": {"content": "$.text"}},
            {"match": {"path": "$.type", "value": "tool"}, "emitAs": "tool_call", "extract": {"title": "$.name"}},
        ],
        "result": {"matchPath": "$.type", "matchValue": "result", "contentPath": "$.result"},
    }


def record(i: int, rng: random.Random) -> dict[str, object]:
    """A plausible ~2 KB CaptureResult: an answer, one trajectory step, metadata, timing."""
    text = " ".join(rng.choice(WORDS) for _ in range(150))
    return {
        "id": f"case-{i}",
        "input": "Summarise the deployment log",
        "output": text[:900],
        "hint": "alpha",
        "trajectory": [{"type": "message", "stepId": "s0", "timestamp": 3, "turn": 0, "role": "agent", "content": text[:700]}],
        "metadata": {"suite": "bench", "n": i},
        "timing": {"start": 1, "end": 2, "total": 1},
        "status": "ungraded",
    }


def write_records(path: Path, megabytes: float) -> None:
    if path.exists():
        return
    rng = random.Random(7)
    limit = megabytes * 1_000_000
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        i = size = 0
        while size < limit:
            line = orjson.dumps(record(i, rng), option=orjson.OPT_APPEND_NEWLINE)
            f.write(line)
            size += len(line)
            i += 1
    tmp.rename(path)


def write_prompts(path: Path, count: int) -> None:
    rows = [{"id": f"p{i}", "input": f"say {i}", "hint": f"say {i}"} for i in range(count)]
    path.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))


def executable(path: Path, text: str) -> Path:
    path.write_text(text.format(python=PY) if "{python}" in text else text)
    path.chmod(0o755)
    return path


def generate(data: Path, prompts: int, records_mb: tuple[float, float] | None) -> dict[str, Path]:
    """Write every input (the record files only with their sizes); return them by name."""
    data.mkdir(parents=True, exist_ok=True)
    f = {
        "agent.py": executable(data / "agent.py", AGENT_PY),
        "agent.sh": executable(data / "agent.sh", AGENT_SH),
        "grader.py": executable(data / "grader.py", GRADER_PY),
        "grader.sh": executable(data / "grader.sh", GRADER_SH),
        "worker.py": executable(data / "worker.py", WORKER_PY),
        "function.py": data / "function.py",
        "prompts": data / f"prompts-{prompts}.jsonl",
        "prompt-1": data / "prompts-1.jsonl",
    }
    f["function.py"].write_text(FUNCTION)
    for name in ("agent.py", "agent.sh"):
        f[f"schema-{name}"] = path = data / f"schema-{Path(name).suffix[1:]}.json"
        path.write_bytes(orjson.dumps(schema(f[name]), option=orjson.OPT_INDENT_2))
    write_prompts(f["prompts"], prompts)
    write_prompts(f["prompt-1"], 1)
    if records_mb is not None:
        f["small"], f["large"] = data / f"records-{records_mb[0]:g}MB.jsonl", data / f"records-{records_mb[1]:g}MB.jsonl"
        write_records(f["small"], records_mb[0])
        write_records(f["large"], records_mb[1])
    return f
