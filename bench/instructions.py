"""waza's own instructions per record, counted by callgrind: ``python bench/instructions.py [--prompts N]``.

Wall and CPU time move with the machine's load; the instructions a process
executes do not, so this is the figure to compare a change against (A/B) on a
busy machine. Runs the sh workload of ``run.py`` (sh agent + sh grader, the
headless adapter, ``-j 4``) under ``valgrind --tool=callgrind`` once with one
prompt and once with ``--prompts``; children are not traced, so the count is
waza's process alone (all its threads). Prints both counts and the difference
per record: what waza itself executes for each prompt beyond its fixed cost.
``--keep DIR`` keeps the callgrind files (``callgrind_annotate`` reads them).

Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures import generate
from run import DATA, PY, waza_argv, waza_sources


def count(argv: list[str], out: Path, env: dict[str, str]) -> int:
    """Instructions executed by ``argv``'s own process (callgrind's total)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=500, help="prompts in the measured run (default 500)")
    parser.add_argument("--keep", type=Path, help="keep the callgrind files here (one.cg, many.cg)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    f = generate(DATA, args.prompts, None)
    # as installed, like run.py: bytecode compiled and cached, not compiled again in every run
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([PY, "-m", "compileall", "-q", *waza_sources()], check=False, stdout=subprocess.DEVNULL)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="waza-callgrind-"))
    keep.mkdir(parents=True, exist_ok=True)

    def capture(prompts: Path) -> list[str]:
        return [
            *waza_argv(),
            "capture",
            str(prompts),
            "--adapter",
            "headless",
            "--schema",
            str(f["schema-agent.sh"]),
            "-g",
            str(f["grader.sh"]),
            "-j",
            "4",
            "-o",
            "/dev/null",
        ]

    one = count(capture(f["prompt-1"]), keep / "one.cg", env)
    many = count(capture(f["prompts"]), keep / "many.cg", env)
    per = (many - one) / max(args.prompts - 1, 1)
    print(f"one prompt: {one:,} instructions; {args.prompts} prompts: {many:,}")
    print(f"waza's own instructions per record (beyond its fixed cost): {per:,.0f}")
    if args.keep is None:
        shutil.rmtree(keep)


if __name__ == "__main__":
    main()
