"""Wiring: build the context, register every servicer, health and reflection, serve.

This is the one place that knows which implementation serves which service.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.adapters import build_summarizer
from pioneer_grpc.adapters.count_tokens import build_token_counter
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.config import Config
from pioneer_grpc.events.pg_listener import asyncpg_dsn
from pioneer_grpc.events.wiring import start_manifest_events
from pioneer_grpc.models.registry import load_registry
from pioneer_grpc.server.certificates import validity
from pioneer_grpc.server.connections import Connections, raise_descriptor_limit
from pioneer_grpc.server.health import DatabaseHealth
from pioneer_grpc.server.interceptors import AuthInterceptor, RequestInterceptor, TenantInterceptor
from pioneer_grpc.server.logs import quiet_drivers
from pioneer_grpc.server.methods import method_names
from pioneer_grpc.server.observability import ObservabilityInterceptor
from pioneer_grpc.server.reflection import V1 as REFLECTION_V1
from pioneer_grpc.server.reflection import V1ALPHA as REFLECTION_V1ALPHA
from pioneer_grpc.server.reflection import Reflection
from pioneer_grpc.server.retention import RetentionSweeper
from pioneer_grpc.server.servicers.compiler import PromptCompilerServicer
from pioneer_grpc.server.servicers.echo import EchoServicer
from pioneer_grpc.server.servicers.history import HistoryServicer
from pioneer_grpc.server.servicers.manifest import ManifestServicer
from pioneer_grpc.server.servicers.provider import ProviderServicer
from pioneer_grpc.server.servicers.turn import TurnServicer
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store.engine import POOL_WAIT_SECONDS, create_engine
from pioneer_grpc.store.migrate import migrate
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.telemetry import Metrics, Telemetry, tracing
from pioneer_grpc.tenants import Authority
from pioneer_grpc.v1 import (
    echo_service_pb2,
    echo_service_pb2_grpc,
    history_service_pb2,
    history_service_pb2_grpc,
    manifest_service_pb2,
    manifest_service_pb2_grpc,
    prompt_compiler_service_pb2,
    prompt_compiler_service_pb2_grpc,
    provider_service_pb2,
    provider_service_pb2_grpc,
    turn_service_pb2,
    turn_service_pb2_grpc,
)

if TYPE_CHECKING:
    from pioneer_grpc.server.web.serve import HttpListener

log = logging.getLogger(__name__)
# Field tags and lengths around the largest content a message may carry (e.g. Echo's 16 MiB payload).
MESSAGE_FRAMING_BYTES = 4096

# Descriptors kept free beyond the connection caps' default (database, files, the metrics port's 64).
CONNECTION_RESERVE = 256
# gRPC connections accepted past max_connections, to be answered RESOURCE_EXHAUSTED (health still
# served) rather than closed at accept; taken from the reserve.
CONNECTION_OVERFLOW = 32
# A gRPC connection without an RPC for this long is closed (GOAWAY: clients reconnect as they need).
GRPC_IDLE_SECONDS = 300

# How often a worker's hub reads manifest events other SQLite workers committed.
WORKER_POLL_SECONDS = 0.05

# (full service name, add-to-server function, servicer factory taking the context).
SERVICES: list[tuple[str, Callable[[Any, grpc.aio.Server], None], Callable[[ServiceContext], Any]]] = [
    (
        prompt_compiler_service_pb2.DESCRIPTOR.services_by_name["PromptCompilerService"].full_name,
        prompt_compiler_service_pb2_grpc.add_PromptCompilerServiceServicer_to_server,
        PromptCompilerServicer,
    ),
    (
        history_service_pb2.DESCRIPTOR.services_by_name["HistoryService"].full_name,
        history_service_pb2_grpc.add_HistoryServiceServicer_to_server,
        HistoryServicer,
    ),
    (
        manifest_service_pb2.DESCRIPTOR.services_by_name["ManifestService"].full_name,
        manifest_service_pb2_grpc.add_ManifestServiceServicer_to_server,
        ManifestServicer,
    ),
    (
        provider_service_pb2.DESCRIPTOR.services_by_name["ProviderService"].full_name,
        provider_service_pb2_grpc.add_ProviderServiceServicer_to_server,
        ProviderServicer,
    ),
    (
        turn_service_pb2.DESCRIPTOR.services_by_name["TurnService"].full_name,
        turn_service_pb2_grpc.add_TurnServiceServicer_to_server,
        TurnServicer,
    ),
    (
        echo_service_pb2.DESCRIPTOR.services_by_name["EchoService"].full_name,
        echo_service_pb2_grpc.add_EchoServiceServicer_to_server,
        lambda ctx: EchoServicer(),
    ),
]
SERVICE_NAMES = [name for name, _, _ in SERVICES]
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
# Every method the server answers; metrics, spans and access lines name no other.
KNOWN_METHODS = method_names([*SERVICE_NAMES, HEALTH_SERVICE, REFLECTION_V1ALPHA]) | {
    f"/{REFLECTION_V1}/ServerReflectionInfo"
}


@dataclass
class RunningServer:
    server: grpc.aio.Server
    ctx: ServiceContext
    health: health.aio.HealthServicer
    port: int
    database_health: DatabaseHealth
    # The contract over HTTP/JSON and the console (--http-listen); None when off.
    http: HttpListener | None = None
    # Who each token is (--token or --tenants); None: a server that requires no token.
    authority: Authority | None = None
    # Deletes expired threads in the background (--retention-days, ThreadConfig.retention_days).
    sweeper: RetentionSweeper | None = None

    def reload_tenants(self) -> bool:
        """What SIGHUP calls: reads the tenants file again (a bad one leaves the old one in effect)."""
        if self.authority is None:
            log.info("nothing to reload: the server requires no token")
            return False
        return self.authority.reload()

    @property
    def address(self) -> str:
        host = self.ctx.config.listen.rpartition(":")[0]
        return f"{host}:{self.port}"

    @property
    def http_address(self) -> str:
        """HOST:PORT of the HTTP/JSON listener and console; empty when it is off."""
        return self.http.address if self.http is not None else ""

    @property
    def metrics_address(self) -> str:
        """HOST:PORT of the Prometheus endpoint; empty when it is off."""
        port = self.ctx.telemetry.metrics_port
        return f"{self.ctx.config.metrics_listen.rpartition(':')[0]}:{port}" if port else ""

    async def stop(self, grace: float | None = None) -> None:
        """NOT_SERVING first, so load balancers drain; then stop, then release resources."""
        await self.database_health.close()
        if self.sweeper is not None:
            await self.sweeper.close()
        await self.health.enter_graceful_shutdown()
        # Watch streams never finish by themselves: end them now, each with
        # its resume id, instead of holding them until the grace runs out.
        await self.ctx.hub.close()
        grace = self.ctx.config.grace_seconds if grace is None else grace
        if self.http is not None:
            await asyncio.gather(self.server.stop(grace), self.http.stop(grace))
        else:
            await self.server.stop(grace)
        for hook in reversed(self.ctx.on_shutdown):
            await hook()
        # Work of cancelled RPCs may still be finishing: the store waits for it, then closes.
        await self.ctx.root_store.close()


def _passing_bytes(serializer: Callable[[Any], bytes] | None) -> Callable[[Any], bytes]:
    def serialize(response: Any) -> bytes:
        if isinstance(response, bytes) or serializer is None:
            return bytes(response)
        return serializer(response)

    return serialize


class _EncodedAnswers:
    """Registers a generated servicer so that its methods may also answer with a response already encoded.

    The generated `add_*_to_server` functions hand their method handlers to the
    server twice (generic and registered); both are rebuilt here around a
    serializer that passes bytes through (see pioneer_grpc/wire.py for why).
    """

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, _handlers: Any) -> None:
        """Replaced by the rebuilt handlers in add_registered_method_handlers."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        rebuilt = {
            name: handler._replace(response_serializer=_passing_bytes(handler.response_serializer))
            for name, handler in handlers.items()
        }
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, rebuilt),))
        self._server.add_registered_method_handlers(service, rebuilt)


class StartupError(Exception):
    """The server cannot start as configured; raised before anything is written."""


def _check_tls(config: Config) -> None:
    if config.tls_cert is None or config.tls_key is None:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise StartupError(
                f"TLS key {config.tls_key} does not belong to certificate {config.tls_cert}"
            ) from None
        raise StartupError(
            f"TLS certificate {config.tls_cert} and key {config.tls_key} cannot be loaded as PEM "
            "(a certificate chain and its private key)"
        ) from None
    except OSError as exc:
        raise StartupError(f"TLS files cannot be read: {exc.strerror}") from None
    _check_validity(config.tls_cert)


def _check_validity(cert: Path) -> None:
    """A certificate outside its validity period fails every handshake: refuse to start instead."""
    try:
        not_before, not_after = validity(cert.read_bytes())
    except (OSError, ValueError, IndexError):
        return  # loadable by OpenSSL but not read here: left to the handshake
    now = datetime.now(UTC)
    if now > not_after:
        raise StartupError(f"TLS certificate {cert} expired on {not_after:%Y-%m-%d %H:%M:%S} UTC")
    if now < not_before:
        raise StartupError(f"TLS certificate {cert} is not valid before {not_before:%Y-%m-%d %H:%M:%S} UTC")


def _check_address(listen: str) -> None:
    """Binds each address `listen` names and lets go, as the server's own listener would (SO_REUSEADDR)."""
    host, _, port = listen.rpartition(":")
    if int(port) == 0:
        return
    try:
        infos = socket.getaddrinfo(
            host.strip("[]"), int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise StartupError(f"cannot listen on {listen}: {exc.strerror}") from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                reason = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
                raise StartupError(f"cannot listen on {listen}: {reason}") from None


def _credentials(config: Config) -> grpc.ServerCredentials | None:
    if config.tls_cert is None or config.tls_key is None:
        return None
    return grpc.ssl_server_credentials([(config.tls_key.read_bytes(), config.tls_cert.read_bytes())])


def build_telemetry(config: Config, tracer_provider: TracerProvider | None = None) -> Telemetry:
    """`tracer_provider` overrides --otlp-endpoint (tests give one with an in-memory exporter)."""
    if tracer_provider is None and config.otlp_endpoint:
        tracer_provider = tracing.otlp_tracer_provider(config.otlp_endpoint)
    telemetry = Telemetry(tracer_provider, Metrics() if config.metrics_listen else None)
    if isinstance(telemetry.metrics, Metrics):
        token = config.token if config.metrics_require_token else ""
        telemetry.metrics_port = telemetry.metrics.serve(config.metrics_listen, token)
        log.info("metrics on http://%s/metrics", config.metrics_listen)
    return telemetry


async def migrate_reachable(engine: AsyncEngine) -> None:
    """Migrates; a database that cannot be reached is a StartupError naming it (password hidden)."""
    try:
        await migrate(engine)
    except OSError as exc:  # refused, unreachable, unknown host: the driver's socket error
        await engine.dispose()
        where = engine.url.render_as_string(hide_password=True)
        if isinstance(exc, socket.gaierror) or not exc.errno:
            reason = exc.strerror or str(exc)
        else:
            reason = os.strerror(exc.errno)
        raise StartupError(f"cannot reach the database {where}: {reason}") from None


async def build_context(config: Config, telemetry: Telemetry | None = None) -> ServiceContext:
    await asyncio.to_thread(config.home.mkdir, parents=True, exist_ok=True)
    if config.seeds_bootstrap_files:
        created = await asyncio.to_thread(ensure_bootstrap_files, config.home)
        for name, path, was_created in created:
            if was_created:
                log.info("seeded %s at %s", name, path)
    engine = create_engine(config.effective_database_url, config.sqlite_synchronous)
    await migrate_reachable(engine)
    models = load_registry(config.models_file)
    store = open_store(engine, models.tokenizer_of)
    # Other workers' SQLite commits reach this process only by reading the events table; on
    # PostgreSQL every replica's commits are announced on a connection of the listener's own.
    postgres = engine.dialect.name == "postgresql"
    poll = WORKER_POLL_SECONDS if config.workers > 1 and not postgres else None
    dsn = asyncpg_dsn(engine.url.render_as_string(hide_password=False)) if postgres else None
    try:
        events = await start_manifest_events(store.manifests, listen_dsn=dsn, poll_seconds=poll)
    except BaseException:
        await store.close()
        raise
    telemetry = telemetry or Telemetry()
    telemetry.metrics.watch_observers(lambda: events.hub.observer_count, events.hub.observer_lags)
    ctx = ServiceContext(
        config=config,
        models=models,
        root_store=store,
        hub=events.hub,
        summarizer=build_summarizer(
            config.summarizer,
            base_url=config.summarizer_base_url,
            api_key_env=config.summarizer_api_key_env,
            timeout_seconds=config.summarizer_timeout_seconds,
            retries=config.summarizer_retries,
        ),
        telemetry=telemetry,
        token_counter=build_token_counter(
            anthropic_base_url=config.count_tokens_anthropic_base_url,
            anthropic_api_key_env=config.count_tokens_anthropic_api_key_env,
            gemini_base_url=config.count_tokens_gemini_base_url,
            gemini_api_key_env=config.count_tokens_gemini_api_key_env,
            timeout_seconds=config.count_tokens_timeout_seconds,
        ),
    )
    if ctx.token_counter is not None:
        ctx.on_shutdown.append(ctx.token_counter.close)
    ctx.on_shutdown.append(telemetry.close)
    ctx.on_shutdown.append(events.close)
    return ctx


async def _release(ctx: ServiceContext) -> None:
    for hook in reversed(ctx.on_shutdown):
        await hook()
    await ctx.root_store.close()


async def start_server(
    config: Config, *, tracer_provider: TracerProvider | None = None, announce: bool = True
) -> RunningServer:
    """Checks what can fail without side effects (TLS files, addresses) first, then migrates and serves.

    `announce` logs the address (the CLI prints it itself in text mode).
    """
    _check_tls(config)
    if config.workers <= 1:
        # Workers share a port their parent reserved (SO_REUSEPORT): theirs is taken on purpose.
        _check_address(config.listen)
    http_socket = _http_socket(config)
    try:
        return await _start(config, tracer_provider, announce, http_socket)
    except BaseException:
        if http_socket is not None:
            http_socket.close()
        raise


async def _start_http(
    ctx: ServiceContext,
    servicers: dict[str, Any],
    on_database_failure: Callable[[], None],
    sock: socket.socket,
    max_connections: int,
    authority: Authority | None,
) -> HttpListener:
    from pioneer_grpc.server.web import serve as web_serve
    from pioneer_grpc.server.web.app import web_app
    from pioneer_grpc.server.web.connections import HttpLimits
    from pioneer_grpc.server.web.gate import LOCAL_NAMES, listens_everywhere

    config = ctx.config
    limits = HttpLimits(
        max_connections=max_connections,
        header_seconds=config.http_header_timeout_seconds,
        body_seconds=config.http_body_timeout_seconds,
        idle_seconds=config.http_idle_timeout_seconds,
    )
    tls = (config.tls_cert, config.tls_key) if config.tls_cert and config.tls_key else None
    app = web_app(ctx, servicers, on_database_failure, KNOWN_METHODS, authority)
    listener = await web_serve.start_listener(app, sock, config.grace_seconds, limits, ctx.telemetry, tls)
    log.info("HTTP/JSON (Connect) and console on %s", listener.url)
    if listens_everywhere(config.http_listen) and not config.http_allowed_hosts:
        log.warning(
            "the HTTP listener answers only requests naming %s as their host: name the others this "
            "server is reached by with --http-allowed-host",
            ", ".join(LOCAL_NAMES),
        )
    return listener


def _http_socket(config: Config) -> socket.socket | None:
    if not config.http_listen:
        return None
    # Imported only when asked for: a gRPC-only server loads no HTTP stack.
    from pioneer_grpc.server.web import serve as web_serve

    try:
        return web_serve.bind(config.http_listen, reuse_port=config.workers > 1)
    except OSError as exc:
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise StartupError(f"cannot listen on {config.http_listen} (--http-listen): {reason}") from None


async def _start(
    config: Config,
    tracer_provider: TracerProvider | None,
    announce: bool,
    http_socket: socket.socket | None,
) -> RunningServer:
    quiet_drivers()
    before, after = raise_descriptor_limit()
    if after > before:
        log.info("descriptor limit raised from %d to %d", before, after)
    # The metrics port is bound first: a port in use stops the start before anything is written.
    telemetry = build_telemetry(config, tracer_provider)
    try:
        ctx = await build_context(config, telemetry)
    except BaseException:
        await telemetry.close()
        raise
    health_servicer = health.aio.HealthServicer()
    database_health = DatabaseHealth(
        ctx.root_store.probe,
        health_servicer,
        ["", *SERVICE_NAMES],
        config.health_probe_seconds,
        # As long as any RPC may wait for a connection.
        probe_wait_seconds=float(POOL_WAIT_SECONDS),
    )
    # Bound below the descriptor limit, so a connection beyond it can still be answered.
    per_listener = config.max_connections or max(
        32, (after - CONNECTION_RESERVE) // (2 if config.http_listen else 1)
    )
    connections = Connections(0, per_listener)
    interceptors: list[grpc.aio.ServerInterceptor] = []
    if telemetry.enabled:
        # Outermost, so it sees the code the client gets, auth rejections included.
        interceptors.append(ObservabilityInterceptor(telemetry, KNOWN_METHODS))
    # Outside auth, so rejected calls get an id and an access line too.
    interceptors.append(RequestInterceptor(database_health.poke, KNOWN_METHODS, connections.admit))
    # Loaded and checked with the configuration; read again here, as a reload would.
    authority = Authority.of(config.token, config.tenants_file)
    if authority is not None:
        interceptors.append(AuthInterceptor(authority))
        ctx.quota_of = authority.quota_of
    interceptors.append(TenantInterceptor())
    server = grpc.aio.server(
        interceptors=interceptors,
        options=[
            # A message carrying max_message_bytes of content also carries its own framing.
            ("grpc.max_receive_message_length", config.max_message_bytes + MESSAGE_FRAMING_BYTES),
            ("grpc.max_send_message_length", config.max_message_bytes + MESSAGE_FRAMING_BYTES),
            # Several workers (`serve --workers N`) share the port; a lone server owns it.
            ("grpc.so_reuseport", 1 if config.workers > 1 else 0),
            # Descriptors: connections past these are closed at accept, a handshake (TLS, HTTP/2
            # preface) is bounded as HTTP's headers are, and an idle connection is let go.
            ("grpc.max_allowed_incoming_connections", per_listener + CONNECTION_OVERFLOW),
            ("grpc.server_handshake_timeout_ms", round(config.http_header_timeout_seconds * 1000)),
            ("grpc.max_connection_idle_ms", GRPC_IDLE_SECONDS * 1000),
        ],
    )
    servicers: dict[str, Any] = {}
    for name, add, factory in SERVICES:
        servicers[name] = factory(ctx)
        add(servicers[name], _EncodedAnswers(server))
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    Reflection([*SERVICE_NAMES, HEALTH_SERVICE], extra_files=[health_pb2.DESCRIPTOR]).add_to(server)
    credentials = _credentials(config)
    try:
        if credentials is None:
            port = server.add_insecure_port(config.listen)
        else:
            port = server.add_secure_port(config.listen, credentials)
    except RuntimeError:
        port = 0
    if port == 0:
        await _release(ctx)
        raise StartupError(f"cannot listen on {config.listen}")
    await server.start()
    connections.port = port
    telemetry.metrics.watch_connections(connections.count)
    telemetry.metrics.watch_serving(lambda: database_health.serving)
    await database_health.set_all(True)
    database_health.start()
    sweeper = RetentionSweeper(ctx)
    running = RunningServer(
        server=server,
        ctx=ctx,
        health=health_servicer,
        port=port,
        database_health=database_health,
        authority=authority,
        sweeper=sweeper,
    )
    if http_socket is not None:
        running.http = await _start_http(
            ctx, servicers, database_health.poke, http_socket, per_listener, authority
        )
    sweeper.start()
    if announce:
        log.info("pioneer-grpc serving on %s (home %s)", running.address, config.home)
    return running
