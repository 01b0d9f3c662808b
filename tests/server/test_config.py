"""Configuration precedence (flags > environment > file > defaults) and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from pioneer_grpc.config import Config, ConfigError, load_config


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pioneer.toml"
    path.write_text(text)
    return path


def test_defaults():
    config = load_config({}, environ={})
    assert config.listen == "127.0.0.1:50051"
    assert config.home == Path.home() / ".pioneer"
    assert config.effective_database_url == f"sqlite+aiosqlite:///{Path.home() / '.pioneer' / 'pioneer.db'}"
    assert config.token == ""
    assert config.max_message_bytes == 16 * 1024 * 1024


def test_file_overrides_defaults(tmp_path):
    toml = write_toml(tmp_path, 'listen = "127.0.0.1:6000"\nmax_message_bytes = 1024\n')
    config = load_config({}, environ={}, config_file=toml)
    assert config.listen == "127.0.0.1:6000"
    assert config.max_message_bytes == 1024


def test_environment_overrides_file(tmp_path):
    toml = write_toml(tmp_path, 'listen = "127.0.0.1:6000"\ntoken = "from-file"\n')
    env = {"PIONEER_LISTEN": "127.0.0.1:7000", "PIONEER_HOME": str(tmp_path / "h")}
    config = load_config({}, environ=env, config_file=toml)
    assert config.listen == "127.0.0.1:7000"
    assert config.home == tmp_path / "h"
    assert config.token == "from-file"


def test_flags_override_environment_and_file(tmp_path):
    toml = write_toml(tmp_path, 'listen = "127.0.0.1:6000"\n')
    env = {"PIONEER_LISTEN": "127.0.0.1:7000", "PIONEER_TOKEN": "env-token"}
    config = load_config({"listen": "127.0.0.1:8000", "token": None}, environ=env, config_file=toml)
    assert config.listen == "127.0.0.1:8000"
    assert config.token == "env-token"


def test_config_file_from_environment(tmp_path):
    toml = write_toml(tmp_path, 'database_url = "postgresql+asyncpg://u@127.0.0.1:5/db"\n')
    config = load_config({}, environ={"PIONEER_CONFIG": str(toml)})
    assert config.effective_database_url == "postgresql+asyncpg://u@127.0.0.1:5/db"


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        ({"listen": "nonsense"}, {}, "flag --listen: invalid value 'nonsense': must be HOST:PORT"),
        (
            {},
            {"PIONEER_MAX_MESSAGE_BYTES": "-5"},
            "environment PIONEER_MAX_MESSAGE_BYTES: invalid value '-5'",
        ),
        ({"database_url": "mysql://x"}, {}, "flag --database-url: invalid value 'mysql://x'"),
        ({"summarizer": "magic"}, {}, "must be one of extractive, openai"),
    ],
)
def test_bad_values_name_the_setting(flags, env, expected):
    with pytest.raises(ConfigError) as err:
        load_config(flags, environ=env)
    assert expected in str(err.value)


def test_bad_file_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config({}, environ={}, config_file=write_toml(tmp_path, "listen = \n"))
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config({}, environ={}, config_file=write_toml(tmp_path, 'lisen = "x"\n'))
    with pytest.raises(ConfigError, match="No such file"):
        load_config({}, environ={}, config_file=tmp_path / "absent.toml")


def test_tls_needs_both_files(tmp_path):
    with pytest.raises(ConfigError, match="TLS needs both"):
        load_config({"tls_cert": str(tmp_path / "c.pem")}, environ={})


def test_homes_lists_extra_homes(tmp_path):
    config = Config(home=tmp_path / "a", extra_homes=(tmp_path / "b",))
    assert config.homes == [tmp_path / "a", tmp_path / "b"]


def test_telemetry_settings_from_each_layer(tmp_path):
    assert load_config({}, environ={}).metrics_listen == ""
    assert load_config({}, environ={}).otlp_endpoint == ""
    assert load_config({}, environ={}).log_format == "text"
    toml = write_toml(tmp_path, 'metrics_listen = "127.0.0.1:9464"\nlog_format = "json"\n')
    env = {"PIONEER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}
    config = load_config({"metrics_listen": "0.0.0.0:9100"}, environ=env, config_file=toml)
    assert config.metrics_listen == "0.0.0.0:9100"
    assert config.otlp_endpoint == "http://127.0.0.1:4317"
    assert config.log_format == "json"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"metrics_listen": "9464"}, "flag --metrics-listen: invalid value '9464'"),
        ({"otlp_endpoint": "127.0.0.1:4317"}, "flag --otlp-endpoint: invalid value '127.0.0.1:4317'"),
        ({"log_format": "xml"}, "flag --log-format: invalid value 'xml'"),
    ],
)
def test_bad_telemetry_values_name_the_setting(flags, expected):
    with pytest.raises(ConfigError, match=expected):
        load_config(flags, environ={})


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            'grace_seconds = "five"\n',
            "key grace_seconds: invalid value 'five': must be a number, e.g. 5 or 0.5",
        ),
        (
            'workers = "two"\n',
            "key workers: invalid value 'two': must be a positive whole number or auto (one per core)",
        ),
        (
            'max_message_bytes = "lots"\n',
            "key max_message_bytes: invalid value 'lots': must be a positive whole number, e.g. 2",
        ),
    ],
)
def test_a_bad_toml_value_names_its_key_without_python_words(tmp_path, toml, expected):
    path = write_toml(tmp_path, toml)
    with pytest.raises(ConfigError) as err:
        load_config({}, environ={}, config_file=path)
    assert str(err.value) == f"config file {path}: {expected}"
    for leaked in ("could not convert", "invalid literal", "base 10"):
        assert leaked not in str(err.value)


def test_a_bad_environment_number_is_said_in_words():
    with pytest.raises(ConfigError) as err:
        load_config({}, environ={"PIONEER_WORKERS": "two"})
    assert str(err.value) == (
        "environment PIONEER_WORKERS: invalid value 'two': "
        "must be a positive whole number or auto (one per core)"
    )
