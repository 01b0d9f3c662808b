"""The persona and home-label settings: flag, environment, TOML, persona file, and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from pioneer_grpc.compiler.render import policies
from pioneer_grpc.config import CONFIGURED_PERSONA_SOURCE, ConfigError, load_config

SCOUT = "You are Scout, a browser agent that files expense reports."


def test_defaults_are_the_seeds() -> None:
    config = load_config({}, environ={})
    assert config.persona == policies.IDENTITY_BASE
    settings = config.compile_settings()
    assert (settings.persona, settings.persona_source, settings.home_label, settings.extra_home_labels) == (
        policies.IDENTITY_BASE,
        "",
        "~/.pioneer",
        (),
    )


def test_persona_text_from_each_layer(tmp_path: Path) -> None:
    toml = tmp_path / "pioneer.toml"
    toml.write_text(
        'persona = """\nYou are from the file.\n"""\nhome_label = "/srv/agent"\n', encoding="utf-8"
    )
    from_file = load_config({}, environ={}, config_file=toml)
    assert from_file.persona == "You are from the file."
    assert from_file.home_label == "/srv/agent"
    assert from_file.compile_settings().persona_source == CONFIGURED_PERSONA_SOURCE
    from_env = load_config(
        {}, environ={"PIONEER_PERSONA": SCOUT, "PIONEER_HOME_LABEL": "~"}, config_file=toml
    )
    assert (from_env.persona, from_env.home_label) == (SCOUT, "~")
    from_flag = load_config({"persona": "You are from the flag."}, environ={"PIONEER_PERSONA": SCOUT})
    assert from_flag.persona == "You are from the flag."


def test_an_empty_persona_leaves_the_identity_section_out() -> None:
    config = load_config({}, environ={"PIONEER_PERSONA": ""})
    assert config.compile_settings().persona == ""


def test_persona_file_is_read_once_at_load(tmp_path: Path) -> None:
    path = tmp_path / "persona.md"
    path.write_text(f"\ufeff{SCOUT}\r\nKeep receipts.\r\n", encoding="utf-8")
    config = load_config({}, environ={"PIONEER_PERSONA_FILE": str(path)})
    assert config.persona == f"{SCOUT}\nKeep receipts."
    assert config.compile_settings().persona_source == str(path)
    path.write_text("changed", encoding="utf-8")
    assert config.compile_settings().persona == f"{SCOUT}\nKeep receipts."


def test_persona_and_persona_file_in_one_layer_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "persona.md"
    path.write_text(SCOUT, encoding="utf-8")
    with pytest.raises(ConfigError, match="set persona or persona_file, not both"):
        load_config({}, environ={"PIONEER_PERSONA": "x", "PIONEER_PERSONA_FILE": str(path)})


def test_the_stronger_layer_wins_between_persona_and_persona_file(tmp_path: Path) -> None:
    path = tmp_path / "persona.md"
    path.write_text(SCOUT, encoding="utf-8")
    toml = tmp_path / "pioneer.toml"
    toml.write_text(f'persona_file = "{path}"\n', encoding="utf-8")
    assert load_config({"persona": "flag"}, environ={}, config_file=toml).persona == "flag"
    flag_file = load_config({"persona_file": str(path)}, environ={"PIONEER_PERSONA": "env"})
    assert flag_file.persona == SCOUT


def test_bad_persona_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing.md"
    with pytest.raises(ConfigError, match=f"persona file {missing}: No such file"):
        load_config({"persona_file": str(missing)}, environ={})
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"ok \xff")
    with pytest.raises(ConfigError, match="not valid UTF-8 \\(byte 3\\)"):
        load_config({"persona_file": str(binary)}, environ={})
    long = tmp_path / "long.md"
    long.write_text("x" * 50_001, encoding="utf-8")
    with pytest.raises(ConfigError, match="at most 50,000 characters \\(got 50,001\\)"):
        load_config({"persona_file": str(long)}, environ={})
    huge = tmp_path / "huge.md"
    huge.write_bytes(b"x" * 200_001)
    with pytest.raises(ConfigError, match="larger than 200,000 bytes"):
        load_config({"persona_file": str(huge)}, environ={})


@pytest.mark.parametrize(
    ("setting", "value", "problem"),
    [
        ("PIONEER_PERSONA", "x" * 50_001, "at most 50,000 characters"),
        ("PIONEER_PERSONA", "bell\x07", "must not contain control characters"),
        ("PIONEER_HOME_LABEL", "two\nlines", "must be one line"),
    ],
)
def test_bad_values_name_the_setting(setting: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=f"environment {setting}: invalid value .*{problem}"):
        load_config({}, environ={setting: value})


def test_extra_home_labels(tmp_path: Path) -> None:
    env = {"PIONEER_EXTRA_HOMES": f"{tmp_path / 'a'}:{tmp_path / 'b'}", "PIONEER_EXTRA_HOME_LABELS": "~/a"}
    assert load_config({}, environ=env).compile_settings().extra_home_labels == ("~/a",)
    with pytest.raises(ConfigError, match="extra_home_labels: 3 labels for 2 extra homes"):
        load_config({}, environ={**env, "PIONEER_EXTRA_HOME_LABELS": "~/a:~/b:~/c"})
