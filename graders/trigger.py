"""trigger: does the prompt fall in a skill's scope, by the words of its SKILL.md (the original's heuristic)?

This judges the *prompt*, not the agent: with ``mode: positive`` the prompt
should be about the skill, with ``negative`` it should not. The skill's words
are those of SKILL.md's name, description (up to ``DO NOT USE FOR:``) and body,
lower-cased, split at anything that is not a letter or digit, without words
under three letters and a short list of stop words. The score is the larger
of: the share of the prompt's distinct words that are skill words, and the
best trigger phrase's share of words found in the prompt (1 when the prompt
contains the phrase whole). Trigger phrases are the comma- or
semicolon-separated items after ``USE FOR:`` in the description. Pass:
score >= ``threshold`` (default 0.6) for positive, below it for negative.
``skill_path`` is SKILL.md or its folder, relative to ``base_dir`` (a suite
passes the declaring file's directory) or the current directory. A SKILL.md
with no usable words scores every prompt 0 (the original refuses it).
"""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from ._example import Example
from ._paths import config_file, config_root

SUMMARY = "Whether the prompt is in a skill's scope, by the words of its SKILL.md (positive / negative)."

EXAMPLE = Example(
    # relative to the directory the grader runs in (a suite sets base_dir); the conformance kit runs it
    # beside the example's workspace folder, where ``files`` are written
    config={"skill_path": "workspace/SKILL.md", "mode": "negative"},
    request={"input": "What is the weather like in Lisbon?", "output": ""},
    files={
        "SKILL.md": "---\nname: pdf-tools\ndescription: 'Merge, split and compress PDF documents."
        " USE FOR: merging PDF files, splitting PDF pages.'\n---\n# PDF tools\n"
    },
    result={"pass": True, "score": 0.0},
)

THRESHOLD = 0.6
STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "this",
        "that",
        "from",
        "into",
        "your",
        "you",
        "are",
        "was",
        "were",
        "what",
        "where",
        "how",
        "why",
        "not",
        "can",
        "should",
        "using",
        "about",
        "have",
        "has",
        "had",
        "but",
        "all",
        "any",
        "too",
        "out",
        "get",
        "let",
    ]
)
SPLIT = re.compile(r"[^\w]|_", re.UNICODE)
#: Most bytes of SKILL.md read.
LIMIT = 1024 * 1024


def tokens(text: str) -> list[str]:
    return [t for t in SPLIT.split(text.lower()) if len(t) >= 3 and t not in STOP_WORDS]


def _skill(config: dict[str, Any]) -> tuple[set[str], list[str]]:
    """The skill's words and trigger phrases (ConfigError when SKILL.md cannot be read or has no words)."""
    name = config["skill_path"]
    if (config_root(config, "base_dir") / name).is_dir():
        name = f"{name.rstrip('/')}/SKILL.md"
    path = config_file(config, "base_dir", name, "skill_path", contained=False)
    try:
        with path.open("rb") as fh:
            text = fh.read(LIMIT).decode("utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"skill_path: cannot read {path}: {exc.strerror or exc}") from None
    front: dict[str, Any] = {}
    body = text
    if text.startswith("---"):
        head, _, rest = text[3:].partition("\n---")
        try:
            loaded = yaml.safe_load(head)
        except yaml.YAMLError as exc:
            raise ConfigError(f"skill_path: {path} has a front matter that is not YAML: {exc}") from None
        front = loaded if isinstance(loaded, dict) else {}
        body = rest
    description = str(front.get("description") or "")
    cut = description.upper().find("DO NOT USE FOR:")
    scope = description[:cut].strip() if cut >= 0 else description
    start = scope.upper().find("USE FOR:")
    phrases = []
    if start >= 0:
        phrases = [p.strip(" .\"'\n") for p in re.split(r"[,;]", scope[start + len("USE FOR:") :])]
        phrases = [p for p in phrases if p]
    words = set(tokens(f"{front.get('name') or ''} {scope} {body}"))
    for phrase in phrases:
        words.update(tokens(phrase))
    return words, phrases


def check_config(config: dict[str, Any]) -> None:
    _skill(config)


def score_prompt(prompt: str, words: set[str], phrases: list[str]) -> tuple[float, list[str]]:
    said = tokens(prompt)
    if not said:
        return 0.0, []
    matched = sorted({t for t in said if t in words})
    by_words = len(matched) / len(set(said))
    best = 0.0
    for phrase in phrases:
        if phrase.lower() in prompt.lower():
            return 1.0, matched
        wanted = tokens(phrase)
        if wanted:
            best = max(best, sum(t in set(said) for t in wanted) / len(wanted))
    return max(by_words, best), matched


def grade(request: GraderRequest) -> GraderResult:
    words, phrases = _skill(request.config)
    threshold = request.config.get("threshold", THRESHOLD)
    prompt = request.input if isinstance(request.input, str) else (request.input[0] if request.input else "")
    score, matched = score_prompt(prompt, words, phrases)
    positive = request.config["mode"] == "positive"
    passed = score >= threshold if positive else score < threshold
    relation = ">=" if score >= threshold else "<"
    return GraderResult(
        passed=passed,
        score=round(score, 6),
        reasoning=f"trigger score {score:.2f} {relation} {threshold} ({request.config['mode']})",
        details={"mode": request.config["mode"], "threshold": threshold, "matched_keywords": matched},
    )


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "trigger")


if __name__ == "__main__":
    main()
