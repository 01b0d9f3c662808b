"""The `pioneer-grpc` command: serve, and local tools for debugging a turn."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from dataclasses import replace
from pathlib import Path

from pioneer_grpc import __version__
from pioneer_grpc.cli import compile as cli_compile
from pioneer_grpc.cli import exits
from pioneer_grpc.cli import history as cli_history
from pioneer_grpc.cli import render as cli_render
from pioneer_grpc.cli import threads as cli_threads
from pioneer_grpc.cli import watch as cli_watch
from pioneer_grpc.cli.persona import add_persona_flags
from pioneer_grpc.config import Config, ConfigError, load_config
from pioneer_grpc.store.engine import is_sqlite
from pioneer_grpc.telemetry.logs import announce, log_handler


def _add_serve(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser("serve", help="run the gRPC server")
    serve.add_argument("--config", type=Path, help="TOML file (also PIONEER_CONFIG)")
    serve.add_argument("--listen", help="HOST:PORT (default 127.0.0.1:50051)")
    serve.add_argument("--home", help="runtime home (default ~/.pioneer)")
    serve.add_argument(
        "--extra-home",
        dest="extra_homes",
        action="append",
        help="another runtime home a workspace_root may lie in (repeatable)",
    )
    add_persona_flags(serve)
    serve.add_argument(
        "--extra-home-label",
        dest="extra_home_labels",
        action="append",
        help="how headings name the next --extra-home (repeatable, in order; default: its path)",
    )
    serve.add_argument("--database-url", help="default: SQLite file under the runtime home")
    serve.add_argument(
        "--sqlite-synchronous",
        help="FULL (default: an acknowledged write survives a power loss) or NORMAL (faster commits)",
    )
    serve.add_argument("--max-message-bytes", type=int)
    serve.add_argument("--token", help="require 'authorization: Bearer TOKEN' on every RPC but health")
    serve.add_argument(
        "--tenants",
        dest="tenants_file",
        help="TOML file of token digests, tenants, roles and rate limits, reloaded on SIGHUP "
        "(instead of --token; docs/operating.md)",
    )
    serve.add_argument("--tls-cert", help="PEM certificate chain")
    serve.add_argument("--tls-key", help="PEM private key")
    serve.add_argument("--grace-seconds", type=float, help="graceful stop period (default 5)")
    serve.add_argument("--heartbeat-seconds", type=float, help="manifest stream heartbeat (default 15)")
    serve.add_argument("--summarizer", help="extractive (default) or openai")
    serve.add_argument(
        "--summarizer-base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    serve.add_argument("--summarizer-api-key-env", help="environment variable holding the API key")
    serve.add_argument(
        "--count-tokens-anthropic-base-url",
        help="ask Anthropic for Claude counts, e.g. https://api.anthropic.com (default: off)",
    )
    serve.add_argument("--count-tokens-anthropic-api-key-env", help="variable holding the Anthropic key")
    serve.add_argument(
        "--count-tokens-gemini-base-url",
        help="ask Gemini for counts, e.g. https://generativelanguage.googleapis.com",
    )
    serve.add_argument("--count-tokens-gemini-api-key-env", help="variable holding the Gemini key")
    serve.add_argument("--count-tokens-timeout-seconds", type=float, help="per request (default 5)")
    serve.add_argument("--log-level")
    serve.add_argument("--log-format", help="text (default) or json: one JSON object per line")
    serve.add_argument("--otlp-endpoint", help="export traces over OTLP/gRPC, e.g. http://127.0.0.1:4317")
    serve.add_argument("--metrics-listen", help="serve Prometheus metrics on HOST:PORT (default: off)")
    serve.add_argument(
        "--http-listen",
        help="serve the contract over HTTP/JSON (Connect) and the console page on HOST:PORT (default: off)",
    )
    serve.add_argument(
        "--http-allowed-host",
        dest="http_allowed_hosts",
        action="append",
        help="a Host the HTTP listener answers: a name, *.domain or * (repeatable; default: the "
        "--http-listen host and localhost names)",
    )
    serve.add_argument(
        "--http-header-timeout-seconds", help="an HTTP request's headers must be in within this (default 10)"
    )
    serve.add_argument(
        "--http-body-timeout-seconds", help="an HTTP request's body must be in within this (default 60)"
    )
    serve.add_argument(
        "--http-idle-timeout-seconds",
        help="an HTTP connection with no request is closed after this (default 30)",
    )
    serve.add_argument(
        "--keep-rendered-requests",
        action="store_const",
        const=True,
        help="keep each round's rendered request for the console (default: off; docs/console.md)",
    )
    serve.add_argument("--kept-rounds-per-thread", help="rounds kept per thread (default 50)")
    serve.add_argument("--kept-bytes-total", help="bytes kept in all (default 67108864)")
    serve.add_argument("--kept-max-age-seconds", help="a kept round expires after this (default 86400)")
    serve.add_argument(
        "--retention-days",
        help="delete threads without a write for this many days, with all they hold (default 0: keep "
        "forever; a thread's own retention_days wins; docs/operating.md)",
    )
    serve.add_argument(
        "--retention-sweep-seconds", help="how often expired threads are looked for (default 600; 0: never)"
    )
    serve.add_argument(
        "--metrics-require-token",
        action="store_true",
        default=None,
        help="scrapes of /metrics must send 'Authorization: Bearer TOKEN' (the --token)",
    )
    serve.add_argument(
        "--max-connections",
        help="open connections each listener holds (gRPC: RPCs on new ones beyond it get "
        "RESOURCE_EXHAUSTED; default: the descriptor limit minus 256, shared by the listeners)",
    )
    serve.add_argument("--workers", help="processes serving the one port: a number, or auto (one per core)")
    serve.add_argument(
        "--seed-bootstrap-files",
        action="store_const",
        const=True,
        help="create Pioneer's SOUL.md and IDENTITY.md in the home when missing "
        "(default: only at the default home, ~/.pioneer)",
    )
    serve.set_defaults(func=_serve)


async def _run_until_signal(config: Config) -> int:
    from pioneer_grpc.server.app import start_server
    from pioneer_grpc.server.heap import freeze_start_up

    # One start-up line on stdout (a JSON line with --log-format json); logged too where logs are
    # read by machines (json), with the home.
    running = await start_server(config, announce=config.log_format == "json")
    freeze_start_up()
    announce(
        config.log_format,
        f"pioneer-grpc {__version__} serving on {running.address}",
        event="serving",
        address=running.address,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, running.reload_tenants)
    await stop.wait()
    log = logging.getLogger(__name__)
    log.info("stopping: draining for up to %ss", config.grace_seconds, extra={"event": "stopping"})
    await running.stop()
    log.info("stopped", extra={"event": "stopped"})
    return exits.OK


def _serve(args: argparse.Namespace) -> int:
    flags = {k: v for k, v in vars(args).items() if k not in ("func", "command", "config")}
    try:
        config = load_config(flags, config_file=args.config)
    except ConfigError as exc:
        return exits.fail("serve", f"configuration error: {exc}", exits.USAGE)
    if config.seed_bootstrap_files is None:
        # Pioneer's own SOUL.md and IDENTITY.md are a first run's at the default home, not a team's.
        config = replace(config, seed_bootstrap_files=config.home == Config().home)
    from pioneer_grpc.server.app import StartupError
    from pioneer_grpc.server.logs import configure_logging

    configure_logging(config.log_level, log_handler(config.log_format))
    if config.workers > 1:
        from pioneer_grpc.server.workers import serve_workers

        if is_sqlite(config.effective_database_url):
            logging.getLogger(__name__).warning(
                "%d workers on SQLite: every write of every worker queues for SQLite's single writer, and "
                "each worker polls for the others' manifest events; use PostgreSQL (--database-url) for "
                "more than one",
                config.workers,
            )
        try:
            return serve_workers(config)
        except (StartupError, OSError) as exc:
            return exits.fail("serve", f"cannot start: {exc}", exits.FAILURE)
    try:
        return asyncio.run(_run_until_signal(config))
    except (StartupError, OSError) as exc:
        return exits.fail("serve", f"cannot start: {exc}", exits.FAILURE)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pioneer-grpc", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_serve(subparsers)
    cli_compile.add_parser(subparsers)
    cli_render.add_parser(subparsers)
    cli_history.add_parser(subparsers)
    cli_threads.add_parser(subparsers)
    cli_watch.add_parser(subparsers)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Reported by the subcommand's parser: its usage line, and `pioneer-grpc <cmd>: error: ...`.
        subcommand: argparse.ArgumentParser = _subparsers(parser).choices[args.command]
        subcommand.error(f"unrecognized arguments: {' '.join(unknown)}")
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
