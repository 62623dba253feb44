"""The bare loops waza is measured against: the least a program could do for the same job.

Each is run as its own process by ``bench/run.py``, exactly like the waza
command it is paired with, so both pay the same interpreter start and are
measured the same way. Threads are fine here: this is the baseline, not waza.

  spawn REQUESTS GRADER -j N     spawn GRADER once per request line, N at a time
  orjson RECORDS                 parse and re-serialise every line, one write + flush each
  capture PROMPTS AGENT GRADER -j N   per prompt: spawn AGENT with the prompt on stdin, then GRADER
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import orjson


def spawn_one(argv: list[str], data: bytes) -> bytes:
    return subprocess.run(argv, input=data, capture_output=True, check=True).stdout


def spawn_loop(requests: str, grader: str, jobs: int) -> None:
    with open(requests, "rb") as f, ThreadPoolExecutor(jobs) as pool:
        out = sys.stdout.buffer
        for answer in pool.map(lambda line: spawn_one([grader], line), f.read().splitlines()):
            out.write(answer)
            out.flush()


def orjson_loop(records: str) -> None:
    out = sys.stdout.buffer
    with open(records, "rb") as f:
        for line in f:
            out.write(orjson.dumps(orjson.loads(line), option=orjson.OPT_APPEND_NEWLINE))
            out.flush()


def capture_loop(prompts: str, agent: str, grader: str, jobs: int) -> None:
    def one(line: bytes) -> bytes:
        case = orjson.loads(line)
        output = spawn_one([agent], case["input"].encode()).decode()
        request = {"protocol": "2", "id": case["id"], "input": case["input"], "output": output, "hint": case.get("hint")}
        return spawn_one([grader], orjson.dumps(request))

    with open(prompts, "rb") as f, ThreadPoolExecutor(jobs) as pool:
        out = sys.stdout.buffer
        for answer in pool.map(one, f.read().splitlines()):
            out.write(answer)
            out.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="loop", required=True)
    s = sub.add_parser("spawn")
    s.add_argument("requests")
    s.add_argument("grader")
    s.add_argument("-j", type=int, default=2)
    o = sub.add_parser("orjson")
    o.add_argument("records")
    c = sub.add_parser("capture")
    c.add_argument("prompts")
    c.add_argument("agent")
    c.add_argument("grader")
    c.add_argument("-j", type=int, default=2)
    args = parser.parse_args()
    if args.loop == "spawn":
        spawn_loop(args.requests, args.grader, args.j)
    elif args.loop == "orjson":
        orjson_loop(args.records)
    else:
        capture_loop(args.prompts, args.agent, args.grader, args.j)


if __name__ == "__main__":
    main()
