"""Tool call arguments at the edges of what providers take: how a refusal shows the number, which
string holds a lone surrogate, what a repair keeps (tool_arguments.py)."""

from __future__ import annotations

from pioneer_grpc.caps.history import MAX_ARGUMENTS_DEPTH
from pioneer_grpc.history.tool_arguments import WHY, arguments_problem, repaired_arguments


def test_a_refused_number_is_shown_whole_up_to_24_characters():
    exactly = "1" + "0" * 19 + "e999"  # 24 characters
    assert (
        arguments_problem('{"x": ' + exactly + "}")
        == f"{WHY}: the number {exactly} is beyond a double's range"
    )
    longer = "1" + "0" * 20 + "e999"  # 25 characters
    assert arguments_problem('{"x": ' + longer + "}") == (
        f"{WHY}: the number 100000000000...(25 characters) is beyond a double's range"
    )


def test_a_lone_surrogate_is_found_after_sound_strings_and_numbers():
    assert arguments_problem('{"a": 1, "b": "fine", "c": ["ok", "\\udfff"]}') == (
        f"{WHY}: a string holds a lone surrogate escape \\udfff"
    )
    assert arguments_problem('{"a": 1, "b": [2, 3], "c": "ok"}') is None


def test_nesting_too_deep_is_refused_and_not_repaired():
    deep = '{"a": ' * (MAX_ARGUMENTS_DEPTH + 1) + "1" + "}" * (MAX_ARGUMENTS_DEPTH + 1)
    assert arguments_problem(deep) == f"{WHY}: they nest deeper than 64 levels"
    assert repaired_arguments(deep) is None


def test_a_repair_keeps_text_as_it_is_and_names_what_it_replaced():
    fixed, replaced = repaired_arguments('{"city": "Zürich", "t": NaN, "s": "a\\udfffb"}')  # type: ignore[misc]
    assert fixed == '{"city": "Zürich", "t": null, "s": "a\ufffdb"}'
    assert replaced == ["NaN", "a lone surrogate"]


def test_a_repaired_number_is_named_by_its_first_24_characters():
    number = "1" + "0" * 30 + "e999"
    fixed, replaced = repaired_arguments('{"x": ' + number + "}")  # type: ignore[misc]
    assert fixed == '{"x": null}'
    assert replaced == ["the number " + number[:24]]


def test_a_lone_surrogate_is_found_after_a_number_in_the_same_object():
    assert (
        arguments_problem('{"s": "\\ud800", "n": 1}')
        == f"{WHY}: a string holds a lone surrogate escape \\ud800"
    )
