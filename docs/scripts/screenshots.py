"""The manual's screenshots of ``waza view``, made again from a real run: ``python docs/scripts/screenshots.py``.

It runs two real captures in a scratch directory (a scripted agent over four
prompts, one of which crashes with a traceback on stderr; then a second version
of the agent that answers differently), starts ``waza view`` on loopback, and
has Chromium (headless, driven by Playwright) save three pages into
``docs/manual/images/``: the run page, the crashed prompt's page with the
agent's stderr, and the comparison of the two runs.

Needs ``pip install -e '.[view]' playwright`` and a Chromium (``/usr/bin/chromium``
unless ``--chromium PATH``); Playwright's own browser download is not used.
Run it when the viewer's pages change, and commit the PNGs.
"""

from __future__ import annotations

import argparse
import json
import re
import select
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "manual" / "images"

PROMPTS = [
    {"id": "capital", "input": "What is the capital of France?", "hint": "Paris"},
    {"id": "sum", "input": "What is 17 + 25?", "hint": "42"},
    {"id": "ratio", "input": "Divide the 12 apples among the people in the room.", "hint": "each"},
    {"id": "haiku", "input": "Write a haiku about the sea.", "hint": "waves"},
]

#: The agent under test: reads the prompt on stdin, answers on stdout; ``ratio`` crashes (a real traceback).
AGENT = """\
import sys

VERSION = sys.argv[1]
prompt = sys.stdin.read()


def share(apples, people):
    return apples / people


if "capital" in prompt:
    print("The capital of France is Paris.")
elif "17 + 25" in prompt:
    print("17 + 25 = 42." if VERSION == "1" else "17 + 25 is 43.")
elif "apples" in prompt:
    people_in_room = 0 if VERSION == "1" else 3
    print(f"Each person gets {share(12, people_in_room):g} apples.")
else:
    print("Grey waves fold and break,\\nsalt wind combs the dune grasses,\\nthe tide keeps its time." if VERSION == "2"
          else "The sea is wide and blue.")
"""

#: A second grader, a Python function run in waza's process: answers of at most 200 characters.
GRADER = """\
def concise(request):
    n = len(request["output"])
    return {"pass": n <= 200, "score": 1.0 if n <= 200 else 0.0, "reasoning": f"{n} characters"}
"""


def capture(work: Path, version: str, out: str) -> None:
    """One real run; it exits 1 when a prompt errored, which the first version's run does on purpose."""
    command = [sys.executable, "-m", "waza", "capture", "prompts.jsonl", "--adapter", "exec", "-j", "1"]
    command += ["--grader", "builtin:hint", "--grader", "grader.py:concise", "-o", out, "--"]
    command += [sys.executable, "agent.py", version]
    proc = subprocess.run(command, cwd=work, capture_output=True, timeout=120)
    if proc.returncode not in (0, 1) or not (work / out).exists():
        sys.exit(f"screenshots: the capture failed (exit {proc.returncode}):\n{proc.stderr.decode()}")


def make_runs(work: Path) -> None:
    (work / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    (work / "agent.py").write_text(AGENT)
    (work / "grader.py").write_text(GRADER)
    (work / "runs").mkdir()
    capture(work, "1", "runs/main.jsonl")
    capture(work, "2", "runs/branch.jsonl")


def start_view(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``waza view runs`` from the scratch directory, so the pages name ``runs/main.jsonl``, not a temporary path."""
    proc = subprocess.Popen([sys.executable, "-m", "waza", "view", "runs"], cwd=work, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], 60)
    line = proc.stderr.readline().decode() if ready else ""
    match = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
    if not match:
        proc.kill()
        sys.exit(f"screenshots: waza view did not say where it listens: {line!r}")
    return proc, match.group(1)


def shoot(url: str, chromium: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    saved = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1200, "height": 480})
        page.set_default_timeout(30_000)

        def save(name: str) -> None:
            path = out / f"{name}.png"
            page.screenshot(path=str(path), full_page=True)  # the page as long as it is, no blank below
            saved.append(path)

        page.goto(url)
        page.locator("#runs a", has_text="main.jsonl").click()
        page.wait_for_selector("svg.chart")
        save("run")

        row = next(i for i, p in enumerate(PROMPTS) if p["id"] == "ratio")  # -j 1: the file keeps the prompts' order
        page.goto(page.url.replace("/run?", "/prompt?") + f"&i={row}")
        page.get_by_text("ZeroDivisionError").first.scroll_into_view_if_needed()
        save("prompt-stderr")

        page.goto(url)  # the baseline's run page offers the comparison; the candidate is picked by its label
        page.locator("#runs a", has_text="main.jsonl").click()
        page.get_by_role("link", name=re.compile("compare with")).click()
        page.wait_for_url(re.compile(r"/compare"))
        branch = next(o for o in page.locator("select[name=b] option").all_inner_texts() if "branch.jsonl" in o)
        page.select_option("select[name=b]", label=branch)
        page.wait_for_selector("tr.change-regression")
        save("compare")
        browser.close()
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium executable to drive")
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the PNGs go")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="waza-screenshots-") as tmp:
        work = Path(tmp)
        make_runs(work)
        view, url = start_view(work)
        try:
            saved = shoot(url, args.chromium, args.out)
        finally:  # a read-only viewer holds nothing that a kill could lose
            view.kill()
            view.wait()
    for path in saved:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
