"""Builds the HTTP listener's ASGI app from the running server's context and servicers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pioneer_grpc.server.web.asgi import App, WebApp, console_assets
from pioneer_grpc.server.web.edge import Answering, EdgeInterceptor
from pioneer_grpc.server.web.gate import AllowedHosts, Gate, default_allowed_hosts
from pioneer_grpc.server.web.services import connect_applications
from pioneer_grpc.server.web.transcode import JsonInThreads
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.tenants import Authority


def web_app(
    ctx: ServiceContext,
    servicers: dict[str, Any],
    on_database_failure: Callable[[], None],
    known_methods: frozenset[str],
    authority: Authority | None = None,
) -> App:
    """`servicers`: full service name -> the instance the gRPC server also serves; `authority`: who
    each token is (None: no token required)."""
    config = ctx.config
    edge = EdgeInterceptor(ctx.telemetry, authority)
    services = connect_applications(
        servicers,
        Answering(ctx.telemetry, on_database_failure),
        [edge],
        read_max_bytes=config.max_message_bytes,
    )
    app = WebApp(dict(services), console_assets())
    hosts = AllowedHosts(config.http_allowed_hosts or default_allowed_hosts(config.http_listen))
    return Gate(JsonInThreads(app, authority, config.max_message_bytes), hosts, ctx.telemetry, known_methods)
