"""The original's named rubrics (``rubric: groundedness`` ...) reach the judge as waza's built-in rubric texts;
an unknown name is refused when the suite is checked, never sent to the judge as the rubric itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import read_jsonl, run_waza
from waza.graders._rubric_presets import PRESETS
from waza.protocol.errors import ConfigError
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import Builtin

NAMES = ["groundedness", "helpfulness", "instruction-following", "refusal-correctness", "tool-use-appropriateness"]


def test_the_original_s_five_presets_exist() -> None:
    assert sorted(PRESETS) == sorted(NAMES)


@pytest.mark.parametrize("name", ["groundednes", "instruction-follow", "tool-use"])
def test_an_unknown_preset_name_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_runner(Builtin(name="p", grader="prompt", config={"rubric": name}))
    assert f"unknown rubric {name!r}" in str(caught.value) and "groundedness" in str(caught.value)


@pytest.mark.parametrize("name", NAMES)
def test_a_preset_reaches_the_judge_as_its_text(tmp_path: Path, name: str) -> None:
    """A suite's prompt grader with ``rubric: NAME``: the judge program is asked with the preset's text."""
    seen = tmp_path / "judge-stdin.txt"
    script = tmp_path / "judge.py"
    reply = json.dumps({"reasoning": "fine", "score": 5, "overall_score": 5})
    script.write_text(f"import sys\nopen({str(seen)!r}, 'w').write(sys.stdin.read())\nprint({reply!r})\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text("id: t\ninputs:\n  prompt: Say done.\n")
    (tmp_path / "eval.yaml").write_text(
        "name: presets\nskill: demo\ntasks: ['tasks/*.yaml']\ngraders:\n  - type: prompt\n    name: judged\n"
        f"    config:\n      rubric: {name}\n      command: [{sys.executable!r}, {str(script)!r}]\n"
    )
    agent = Path(__file__).parent / "agents" / "exec_agent.py"
    done = run_waza("run", tmp_path / "eval.yaml", "--adapter", "exec", "--", sys.executable, agent)
    [line] = read_jsonl(done.stdout)
    assert line["grades"][0]["status"] == "passed", done.stderr
    asked = seen.read_text()
    first_line = PRESETS[name].splitlines()[0]
    assert first_line in asked and f"\n{name}\n" not in asked
