"""The floor: the least a program can do for each benchmark job, so "the machine's limit" is visible.

No validation, no timeouts, no records beyond one JSON line per prompt; threads
and ``subprocess``. ``bench/run.py`` runs it as its own process beside waza and
the peer, so all three pay their own interpreter start and are timed alike.

  capture PROMPTS AGENT GRADER -j N   per prompt: AGENT PROMPT, last stdout line's
                                      "result" is the answer, then GRADER with the request on stdin
  capture ... --worker                GRADER started once per thread, one request/answer line each
  capture ... --anyio                 the same on anyio's processes: a task per -j slot, no threads of its own
                                      (the least a runner on the process library waza's issue names can do)
  parse RECORDS                       orjson parse + dump + write of every line (in-process grading's floor)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import anyio
import orjson
from anyio.streams.buffered import BufferedByteReceiveStream


def run(argv: list[str], data: bytes | None = None) -> bytes:
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE, check=False).stdout


def capture(prompts: str, agent: str, grader: str, jobs: int, worker: bool) -> None:
    local = threading.local()
    workers: list[subprocess.Popen[bytes]] = []

    def grade(request: bytes) -> bytes:
        if not worker:
            return run([grader], request)
        proc = getattr(local, "proc", None)
        if proc is None:
            proc = local.proc = subprocess.Popen([grader], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            workers.append(proc)
        proc.stdin.write(request + b"\n")
        proc.stdin.flush()
        return proc.stdout.readline()

    def one(line: bytes) -> bytes:
        case = orjson.loads(line)
        events = run([agent, case["input"]]).splitlines()
        answer, request = request_line(case, events)
        grade_line = grade(request)
        return orjson.dumps({"id": case["id"], "output": answer, "grade": orjson.loads(grade_line)}) + b"\n"

    out = sys.stdout.buffer
    with open(prompts, "rb") as f, ThreadPoolExecutor(jobs) as pool:
        for result in pool.map(one, f.read().splitlines()):
            out.write(result)
            out.flush()
    for proc in workers:
        proc.stdin.close()
        proc.wait()


def request_line(case: dict, events: list[bytes]) -> tuple[str, bytes]:
    answer = orjson.loads(events[-1]).get("result", "") if events else ""
    return answer, orjson.dumps(
        {"id": case["id"], "input": case["input"], "output": answer, "hint": case.get("hint"), "requestId": case["id"]}
    )


async def capture_anyio(prompts: str, agent: str, grader: str, jobs: int, worker: bool) -> None:
    with open(prompts, "rb") as f:
        cases = iter(f.read().splitlines())
    out = sys.stdout.buffer

    async def slot() -> None:
        proc = await anyio.open_process([grader], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None) if worker else None
        lines = BufferedByteReceiveStream(proc.stdout) if proc else None
        for line in cases:
            case = orjson.loads(line)
            done = await anyio.run_process([agent, case["input"]], check=False, stderr=None)
            answer, request = request_line(case, done.stdout.splitlines())
            if proc:
                await proc.stdin.send(request + b"\n")
                grade_line = await lines.receive_until(b"\n", 1 << 20)
            else:
                grade_line = (await anyio.run_process([grader], input=request, check=False, stderr=None)).stdout
            out.write(orjson.dumps({"id": case["id"], "output": answer, "grade": orjson.loads(grade_line)}) + b"\n")
            out.flush()
        if proc:
            await proc.stdin.aclose()
            await proc.wait()

    async with anyio.create_task_group() as tg:
        for _ in range(jobs):
            tg.start_soon(slot)


def parse(records: str) -> None:
    out = sys.stdout.buffer
    with open(records, "rb") as f:
        for line in f:
            out.write(orjson.dumps(orjson.loads(line), option=orjson.OPT_APPEND_NEWLINE))
            out.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="job", required=True)
    c = sub.add_parser("capture")
    c.add_argument("prompts")
    c.add_argument("agent")
    c.add_argument("grader")
    c.add_argument("-j", type=int, default=1)
    c.add_argument("--worker", action="store_true")
    c.add_argument("--anyio", action="store_true")
    p = sub.add_parser("parse")
    p.add_argument("records")
    args = parser.parse_args()
    if args.job == "capture" and args.anyio:
        anyio.run(capture_anyio, args.prompts, args.agent, args.grader, args.j, args.worker)
    elif args.job == "capture":
        capture(args.prompts, args.agent, args.grader, args.j, args.worker)
    else:
        parse(args.records)


if __name__ == "__main__":
    main()
