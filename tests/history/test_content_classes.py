"""Which estimate factor a text gets: the script ranges at their first and last code points, and the
shares that tip a text into a class (estimate.py)."""

from __future__ import annotations

import pytest

from pioneer_grpc.history.estimate import CLAUDE, content_class, estimate

CJK_RANGES = [(0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFF00, 0xFFEF)]


@pytest.mark.parametrize(("first", "last"), CJK_RANGES)
def test_each_cjk_range_counts_from_its_first_to_its_last_code_point(first: int, last: int):
    assert content_class(chr(first) * 5) == "cjk"
    assert content_class(chr(last) * 5) == "cjk"
    assert content_class(chr(first - 1) * 5) != "cjk"
    assert content_class(chr(last + 1) * 5) != "cjk"


def test_greek_and_cyrillic_run_from_0370_to_052f():
    assert content_class("\u0370" * 5) == "cyrillic_greek"
    assert content_class("\u052f" * 5) == "cyrillic_greek"
    assert content_class("\u0530" * 5) != "cyrillic_greek"
    assert content_class("Привет мир") == "cyrillic_greek"


def test_latin_extensions_end_at_024f_and_other_scripts_follow():
    # U+024F is Latin; U+0250 (IPA) is a letter of another script; U+0080 is a control character.
    assert content_class("\u024f" * 5) == "prose"
    assert content_class("\u0250" * 5) == "other_script"
    assert content_class("\u0080" * 5 + "abc") == "prose"
    assert content_class("สวัสดีครับ") == "other_script"


def test_a_script_takes_the_text_over_thirty_percent_of_its_letters():
    assert content_class("abcdefg" + "日本語") == "prose"  # 3 of 10 letters
    assert content_class("abcdef" + "日本語本") == "cjk"  # 4 of 10
    assert content_class("abcdefg" + "при") == "prose"
    assert content_class("abcdef" + "прив") == "cyrillic_greek"
    assert content_class("abcdefg" + "ʃʒɐ") == "prose"
    assert content_class("abcdef" + "ʃʒɐɑ") == "other_script"


def test_digits_over_a_fifth_make_it_numeric_symbols_over_six_percent_make_it_code():
    assert content_class("abcdefgh12") == "prose"  # 2 of 10 characters
    assert content_class("abcdefg123") == "numeric"
    assert content_class("a" * 94 + "{}();=") == "prose"  # 6 of 100
    assert content_class("a" * 93 + "{}();=+") == "code"
    assert content_class("") == "prose"


def test_an_estimate_is_the_base_count_times_the_factor_rounded_up():
    assert estimate(CLAUDE, "", 0) == 0
    assert estimate(CLAUDE, "hello world", 100) == 115  # prose: 1.148
    assert estimate(CLAUDE, "日本語のテキスト", 100) == 99  # cjk: 0.989


def test_accented_latin_letters_count_as_letters_and_punctuation_does_not():
    assert content_class("ééééééé" + "日本語") == "prose"  # 3 of 10 letters
    assert content_class("abcdef" + "————") == "prose"  # dashes are not letters of another script
