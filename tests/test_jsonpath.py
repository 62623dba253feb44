"""The JSONPath the adapter schemas use: every construct in the shipped and acp-harness schemas."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waza.adapters.headless_schema import Condition
from waza.adapters.jsonpath import compile_selector

LINE = {
    "type": "assistant",
    "session_id": "s-1",
    "message": {
        "id": "m1",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Hello, "},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            {"type": "text", "text": "world"},
            {"type": "tool_result", "tool_use_id": "t0", "is_error": True},
            {"type": "tool_result", "tool_use_id": "t2"},
        ],
    },
    "item": {"type": "todo_list", "items": [{"text": "a"}, {"text": "b"}]},
}


@pytest.mark.parametrize(
    ("path", "expected", "singular"),
    [
        ("$.type", ["assistant"], True),  # member
        ("$.message.id", ["m1"], True),  # nested member
        ("$.message.content[1].text", ["Hello, "], True),  # index
        ("$.message.content[-1].tool_use_id", ["t2"], True),  # negative index
        ("$.message.content[*].type", ["thinking", "text", "tool_use", "text", "tool_result", "tool_result"], False),
        ("$.message.content[?@.type == 'text'].text", ["Hello, ", "world"], False),  # filter
        ("$.message.content[?@.type == 'tool_result' && @.is_error == true].tool_use_id", ["t0"], False),
        ("$.message.content[?@.type == 'tool_result' && @.is_error != true].tool_use_id", ["t2"], False),  # absent != true
        ("$.item.items", [[{"text": "a"}, {"text": "b"}]], True),
        ("$..tool_use_id", ["t0", "t2"], False),  # descendants
        ("$.missing.deeper", [], True),  # nothing selected is not an error
        ("$", [LINE], True),
        ("'pending'", ["pending"], True),  # a quoted literal, as acp-harness writes them
        ("''", [""], True),
    ],
)
def test_selects_what_rfc_9535_says(path, expected, singular):
    selector = compile_selector(path)
    assert selector.select(LINE) == expected
    assert selector.singular is singular


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("type", "starts with '$'"),
        ("$.a[", "not a valid JSONPath"),
        ("$.a[?@.b = 1]", "not a valid JSONPath"),
        ("", "starts with"),
    ],
)
def test_invalid_paths_are_rejected_with_a_reason(path, reason):
    with pytest.raises(ValueError, match=reason.replace("$", r"\$")):
        compile_selector(path)


def test_each_selects_parts_and_paths_are_relative_to_a_part():
    parts = compile_selector("$.message.content[?@.type == 'tool_use']").select(LINE)
    assert [compile_selector("$.name").first(p) for p in parts] == ["Bash"]
    assert compile_selector("$.input").first(parts[0]) == {"command": "ls"}


def test_conditions_compare_json_values_exactly():
    assert Condition(compile_selector("$.type"), "assistant").holds(LINE)
    assert Condition(compile_selector("$.message.content[*].type"), "tool_use").holds(LINE)  # any selected value
    assert not Condition(compile_selector("$.type"), "user").holds(LINE)
    assert not Condition(compile_selector("$.message.content[4].is_error"), 1).holds(LINE)  # true is not 1
    assert Condition(compile_selector("$.session_id"), any_value=True).holds(LINE)  # presence only
    assert not Condition(compile_selector("$.nope"), any_value=True).holds(LINE)


NAMES = st.sampled_from(["a", "b", "type", "_x", "n1", "true"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=4),
    max_leaves=12,
)


@given(names=st.lists(NAMES, max_size=4), node=JSON)
def test_plain_member_chains_select_what_the_library_selects(names: list[str], node: object) -> None:
    import jsonpath

    # Under a member: the library reads a string given as the whole document as JSON text.
    path = "$.doc" + "".join(f".{n}" for n in names)
    selector = compile_selector(path)
    assert selector.singular
    document = {"doc": node}
    assert selector.select(document) == [m.obj for m in jsonpath.compile(path, strict=True).finditer(document)]


def test_a_string_is_a_value_not_a_json_document():
    """A wildcard's items may be strings; a path relative to one selects nothing, whatever the string says."""
    assert compile_selector("$['x']").select('{"x": 1}') == []
    assert compile_selector("$.x").select('{"x": 1}') == []
    assert compile_selector("$[*]").select("[1, 2]") == []
    assert compile_selector("$[*]").select([1, 2]) == [1, 2]
