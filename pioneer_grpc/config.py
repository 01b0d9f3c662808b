"""Server configuration from flags, environment and an optional TOML file (shared by `serve` and the CLI).

Precedence: flags > environment (PIONEER_*) > TOML file (--config / PIONEER_CONFIG)
> defaults. Every value is validated here, so a bad value fails start with a
message that names the setting and where it came from.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pioneer_grpc.caps.prompt import MAX_LABEL_CHARS, MAX_PERSONA_CHARS
from pioneer_grpc.compiler.render.policies import IDENTITY_BASE
from pioneer_grpc.compiler.settings import DEFAULT_HOME_LABEL, CompileSettings
from pioneer_grpc.compiler.text import replace_controls, sanitize
from pioneer_grpc.models.registry import RegistryError, load_registry
from pioneer_grpc.store.engine import (
    DEFAULT_SQLITE_SYNCHRONOUS,
    SQLITE_SYNCHRONOUS,
    default_database_url,
    is_postgres,
    is_sqlite,
)
from pioneer_grpc.tenants.tenants_file import TenantsError, load_tenants

# The runtime home when none is configured (the first run of `serve` seeds Pioneer's files there).
DEFAULT_HOME = Path("~") / ".pioneer"


class ConfigError(ValueError):
    """A configuration value is invalid; the message says which and why."""


@dataclass(frozen=True)
class Config:
    listen: str = "127.0.0.1:50051"
    home: Path = field(default_factory=lambda: Path(os.path.expanduser(DEFAULT_HOME)))
    # Extra runtime homes a compile's workspace_root may resolve into (besides `home`).
    extra_homes: tuple[Path, ...] = ()
    database_url: str = ""
    # SQLite's `synchronous`: FULL (an acknowledged write survives a power loss) or NORMAL
    # (faster commits; the last ones before a power loss may be lost). docs/operating-durability.md.
    sqlite_synchronous: str = DEFAULT_SQLITE_SYNCHRONOUS
    max_message_bytes: int = 16 * 1024 * 1024
    token: str = ""
    # TOML file mapping token digests to a tenant and a role, with per-tenant rate limits
    # (pioneer_grpc/tenants/tenants_file.py); reloaded on SIGHUP. Not together with `token`.
    tenants_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    grace_seconds: float = 5.0
    heartbeat_seconds: float = 15.0
    # Per-observer queue of manifest events before the observer is ended.
    watch_queue_size: int = 1024
    # ... and its bytes (encoded events): a slow observer of large manifests holds at most this.
    watch_queue_bytes: int = 4 * 1024 * 1024
    summarizer: str = "extractive"
    summarizer_base_url: str = ""
    summarizer_api_key_env: str = "OPENAI_API_KEY"
    summarizer_timeout_seconds: float = 60.0
    summarizer_retries: int = 2
    log_level: str = "INFO"
    # A TOML model registry whose entries add to (or replace) the packaged one.
    models_file: Path | None = None
    # The providers' own count-tokens endpoints, used by CountTokens for Claude and Gemini
    # models when both the base URL is set (e.g. https://api.anthropic.com,
    # https://generativelanguage.googleapis.com) and the named variable holds an API key.
    # Empty by default: counts never leave the machine unless asked to.
    count_tokens_anthropic_base_url: str = ""
    count_tokens_anthropic_api_key_env: str = "ANTHROPIC_API_KEY"
    count_tokens_gemini_base_url: str = ""
    count_tokens_gemini_api_key_env: str = "GEMINI_API_KEY"
    count_tokens_timeout_seconds: float = 5.0
    log_format: str = "text"
    # OTLP/gRPC collector for traces, e.g. http://127.0.0.1:4317; empty: no tracing.
    otlp_endpoint: str = ""
    # HOST:PORT of the Prometheus endpoint; empty: no metrics.
    metrics_listen: str = ""
    # Scrapes of /metrics must send `Authorization: Bearer <token>` (the --token of the RPCs).
    metrics_require_token: bool = False
    # Processes serving the one port (SO_REUSEPORT); `auto` in flags and files means one per core.
    workers: int = 1
    # Open connections each listener holds (gRPC: beyond it RPCs on new connections are RESOURCE_EXHAUSTED,
    # and past 32 more new ones are closed at accept; HTTP: new ones are closed at accept). 0: the
    # descriptor limit (raised to its hard limit at start) minus 256, shared by the listeners.
    max_connections: int = 0
    # How often health probes that the database can be written (0: never; health then stays SERVING).
    health_probe_seconds: float = 5.0
    # The Identity section's text (docs/persona.md); empty leaves the section out. With
    # persona_file set, the file's text, read once at start.
    persona: str = IDENTITY_BASE
    persona_file: Path | None = None
    # How bootstrap headings name the home and the extra homes (in order; unlabelled: their path).
    home_label: str = DEFAULT_HOME_LABEL
    extra_home_labels: tuple[str, ...] = ()
    # Whether compiles read SOUL.md and IDENTITY.md when a request does not say: auto (only while the
    # built-in persona is in effect), read, skip (docs/persona.md).
    identity_files: str = "auto"
    # Create Pioneer's SOUL.md and IDENTITY.md in the home at start when missing. None: the
    # `serve` command decides (yes at its default home, ~/.pioneer: a first run); a server
    # started any other way, or on another home, seeds nothing unless this is true.
    seed_bootstrap_files: bool | None = None
    # HOST:PORT of the contract over HTTP/JSON (Connect protocol) and the console page; empty: off.
    http_listen: str = ""
    # Host header names the HTTP listener answers ("*.example.com" for a domain's names, "*" for any);
    # empty: the --http-listen host and localhost names. Others are refused before anything else.
    http_allowed_hosts: tuple[str, ...] = ()
    # An HTTP request's headers must be in within this of the connection's accept (TLS handshake
    # included) or of the request's first byte; its body within this of its headers; a connection
    # with no request under way is closed after the idle timeout. The header timeout also bounds
    # gRPC's handshakes (TLS and HTTP/2).
    http_header_timeout_seconds: float = 10.0
    http_body_timeout_seconds: float = 60.0
    http_idle_timeout_seconds: float = 30.0
    # Keep what each PrepareTurn round rendered (prompt, messages, provider body) for the console.
    # Off by default; bounded per thread, in total bytes and by age (docs/console.md).
    keep_rendered_requests: bool = False
    kept_rounds_per_thread: int = 50
    kept_bytes_total: int = 64 * 1024 * 1024
    kept_max_age_seconds: float = 24 * 3600.0
    # Threads without a write for this many days are deleted by the retention sweeper, with all
    # they hold (docs/operating.md); 0: kept forever. A thread's own ThreadConfig.retention_days wins.
    retention_days: int = 0
    # How often the sweeper looks for expired threads (0: never; threads' own retentions too).
    retention_sweep_seconds: float = 600.0

    @property
    def homes(self) -> list[Path]:
        return [self.home, *self.extra_homes]

    @property
    def effective_database_url(self) -> str:
        return self.database_url or default_database_url(self.home)

    def compile_settings(self) -> CompileSettings:
        if self.persona_file is not None:
            source = str(self.persona_file)
        else:
            source = "" if self.persona == IDENTITY_BASE else CONFIGURED_PERSONA_SOURCE
        return CompileSettings(
            persona=self.persona,
            persona_source=source,
            home_label=self.home_label,
            extra_home_labels=self.extra_home_labels,
            identity_files=IDENTITY_FILES[self.identity_files],
        )

    @property
    def seeds_bootstrap_files(self) -> bool:
        return self.seed_bootstrap_files is True


# identity_files: what a compile does when a request does not say (None: as the persona says).
IDENTITY_FILES: dict[str, bool | None] = {"auto": None, "read": True, "skip": False}


# The Identity section's source when the persona is configured as text (a file is named by its path).
CONFIGURED_PERSONA_SOURCE = "server persona"


def _retention_days(raw: Any) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError("must be a whole number of days, e.g. 30 (0: keep threads forever)") from None
    if not 0 <= value <= 36_500:
        raise ValueError("must be 0 (keep threads forever) to 36500 days")
    return value


def _positive_int(raw: Any) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError("must be a positive whole number, e.g. 2") from None
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


def _workers(raw: Any) -> int:
    if str(raw).strip().lower() == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        return _positive_int(raw)
    except ValueError:
        raise ValueError("must be a positive whole number or auto (one per core)") from None


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    value = str(raw).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false")


def _non_negative_float(raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValueError("must be a number, e.g. 5 or 0.5") from None
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _path(raw: Any) -> Path:
    return Path(os.path.expanduser(str(raw)))


def _paths(raw: Any) -> tuple[Path, ...]:
    items = raw if isinstance(raw, list) else [p for p in str(raw).split(os.pathsep) if p]
    return tuple(_path(p) for p in items)


def _listen(raw: Any) -> str:
    value = str(raw)
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:50051")
    return value


def _otlp_endpoint(raw: Any) -> str:
    value = str(raw)
    if value and not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:4317")
    return value


def _database_url(raw: Any) -> str:
    value = str(raw)
    if value and not (is_sqlite(value) or is_postgres(value)):
        raise ValueError("must start with sqlite+aiosqlite:/// or postgresql+asyncpg://")
    return value


def _persona(raw: Any) -> str:
    value = sanitize(str(raw))
    if len(value) > MAX_PERSONA_CHARS:
        raise ValueError(f"at most {MAX_PERSONA_CHARS:,} characters (got {len(value):,})")
    if replace_controls(value)[1]:
        raise ValueError("must not contain control characters other than tab and newline")
    return value


def _label(raw: Any) -> str:
    value = str(raw).strip()
    if len(value) > MAX_LABEL_CHARS:
        raise ValueError(f"at most {MAX_LABEL_CHARS:,} characters")
    if "\n" in value or replace_controls(value)[1]:
        raise ValueError("must be one line without control characters")
    return value


def _labels(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else str(raw).split(os.pathsep)
    return tuple(_label(item) for item in items)


def _positive_float(raw: Any) -> float:
    value = _non_negative_float(raw)
    if value == 0:
        raise ValueError("must be more than 0")
    return value


def _host_pattern(raw: Any) -> str:
    value = str(raw).strip().lower()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    name = value[2:] if value.startswith("*.") else value
    if not value or (value != "*" and (not name or "*" in name or "/" in name or " " in name)):
        raise ValueError("each must be a host name or address, *.domain or *, e.g. pioneer.example.com")
    if ":" in name:
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            raise ValueError("a host name without a port, e.g. pioneer.example.com") from None
    return value


def _host_patterns(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else [p for p in str(raw).split(",") if p.strip()]
    return tuple(_host_pattern(item) for item in items)


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        value = str(raw)
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return value

    return parse


PARSERS: dict[str, Callable[[Any], Any]] = {
    "listen": _listen,
    "home": _path,
    "extra_homes": _paths,
    "database_url": _database_url,
    "sqlite_synchronous": lambda raw: _choice(*SQLITE_SYNCHRONOUS)(str(raw).upper()),
    "max_message_bytes": _positive_int,
    "token": str,
    "tenants_file": _path,
    "tls_cert": _path,
    "tls_key": _path,
    "grace_seconds": _non_negative_float,
    "heartbeat_seconds": _non_negative_float,
    "watch_queue_size": _positive_int,
    "watch_queue_bytes": _positive_int,
    "summarizer": _choice("extractive", "openai"),
    "summarizer_base_url": str,
    "summarizer_api_key_env": str,
    "summarizer_timeout_seconds": _non_negative_float,
    "summarizer_retries": lambda raw: int(_non_negative_float(raw)),
    "log_level": _choice("DEBUG", "INFO", "WARNING", "ERROR"),
    "models_file": _path,
    "count_tokens_anthropic_base_url": str,
    "count_tokens_anthropic_api_key_env": str,
    "count_tokens_gemini_base_url": str,
    "count_tokens_gemini_api_key_env": str,
    "count_tokens_timeout_seconds": _non_negative_float,
    "log_format": _choice("text", "json"),
    "otlp_endpoint": _otlp_endpoint,
    "metrics_listen": lambda raw: _listen(raw) if str(raw) else "",
    "metrics_require_token": _bool,
    "workers": _workers,
    "health_probe_seconds": _non_negative_float,
    "persona": _persona,
    "persona_file": _path,
    "home_label": _label,
    "extra_home_labels": _labels,
    "identity_files": _choice(*IDENTITY_FILES),
    "seed_bootstrap_files": _bool,
    "http_listen": lambda raw: _listen(raw) if str(raw) else "",
    "http_allowed_hosts": _host_patterns,
    "http_header_timeout_seconds": _positive_float,
    "http_body_timeout_seconds": _positive_float,
    "http_idle_timeout_seconds": _positive_float,
    "keep_rendered_requests": _bool,
    "kept_rounds_per_thread": _positive_int,
    "kept_bytes_total": _positive_int,
    "kept_max_age_seconds": _non_negative_float,
    "retention_days": _retention_days,
    "retention_sweep_seconds": _non_negative_float,
    "max_connections": lambda raw: int(_non_negative_float(raw)),
}
FIELD_NAMES = [f.name for f in fields(Config)]


def env_name(name: str) -> str:
    return "PIONEER_" + name.upper()


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(unknown)}")
    return data


def _read_persona(path: Path) -> str:
    most = MAX_PERSONA_CHARS * 4  # bytes of the longest text within the cap
    try:
        with path.open("rb") as handle:
            raw = handle.read(most + 1)
    except OSError as exc:
        raise ConfigError(f"persona file {path}: {exc.strerror}") from exc
    if len(raw) > most:
        raise ConfigError(f"persona file {path}: larger than {most:,} bytes")
    try:
        return _persona(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"persona file {path}: not valid UTF-8 (byte {exc.start})") from exc
    except ValueError as exc:
        raise ConfigError(f"persona file {path}: {exc}") from exc


def load_config(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Config:
    """Merge the four layers; `flags` holds only the flags the user gave."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    environ = os.environ if environ is None else environ
    if config_file is None and environ.get("PIONEER_CONFIG"):
        config_file = Path(environ["PIONEER_CONFIG"])
    # Each layer, and how an error names a setting there: the flag, the variable, the TOML key.
    layers: list[tuple[Callable[[str], str], Mapping[str, Any]]] = [
        (lambda name: f"flag --{name.replace('_', '-')}", flags),
        (
            lambda name: f"environment {env_name(name)}",
            {n: environ[env_name(n)] for n in FIELD_NAMES if env_name(n) in environ},
        ),
    ]
    if config_file is not None:
        layers.append((lambda name: f"config file {config_file}: key {name}", _read_toml(config_file)))
    values: dict[str, Any] = {}
    # Which layer each value came from (0: flags): the persona's two settings compare them.
    ranks: dict[str, int] = {}
    for name in FIELD_NAMES:
        for rank, (origin, layer) in enumerate(layers):
            if name in layer:
                try:
                    values[name] = PARSERS[name](layer[name])
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"{origin(name)}: invalid value {layer[name]!r}: {exc}") from exc
                ranks[name] = rank
                break
    _resolve_persona(values, ranks)
    return _checked(Config(**values))


def _resolve_persona(values: dict[str, Any], ranks: dict[str, int]) -> None:
    """persona and persona_file given in one layer is an error; from two, the stronger layer wins.
    A persona file is read here, once."""
    if "persona" in values and "persona_file" in values:
        if ranks["persona"] == ranks["persona_file"]:
            raise ConfigError("set persona or persona_file, not both")
        del values["persona_file" if ranks["persona"] < ranks["persona_file"] else "persona"]
    if "persona_file" in values:
        values["persona"] = _read_persona(values["persona_file"])


def _checked(config: Config) -> Config:
    """Settings that are valid alone but not in this combination."""
    if config.metrics_require_token and not config.token:
        raise ConfigError("metrics_require_token needs a token (--token) for /metrics to require")
    if len(config.extra_home_labels) > len(config.extra_homes):
        raise ConfigError(
            f"extra_home_labels: {len(config.extra_home_labels)} labels for "
            f"{len(config.extra_homes)} extra homes"
        )
    if (config.tls_cert is None) != (config.tls_key is None):
        raise ConfigError("TLS needs both --tls-cert and --tls-key")
    for tls_file in (config.tls_cert, config.tls_key):
        if tls_file is not None and not tls_file.is_file():
            raise ConfigError(f"TLS file {tls_file} does not exist")
    if config.token and config.tenants_file is not None:
        raise ConfigError(
            "--token and --tenants (tenants_file) are both set: use one. To keep the token, add its "
            'sha256 to the tenants file as a [[token]] with tenant = "default" and role = "agent"'
        )
    if config.tenants_file is not None:
        try:
            load_tenants(config.tenants_file)
        except TenantsError as exc:
            raise ConfigError(str(exc)) from exc
    if config.models_file is not None:
        try:
            load_registry(config.models_file)
        except RegistryError as exc:
            raise ConfigError(str(exc)) from exc
    return config
