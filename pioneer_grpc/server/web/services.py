"""Connect ASGI applications of every service, answered by the gRPC servicer instances themselves.

The generated `*ServiceASGIApplication` calls `service.get_turn_manifest(...)`;
`_Delegate` answers it with the servicer's `GetTurnManifest`, wrapped by
edge.Answering. There is no second implementation: the servicers convert and
delegate to the use cases for both edges.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from connectrpc.interceptor import Interceptor
from connectrpc.server import ConnectASGIApplication

from pioneer_grpc.server.web.codec import CODECS
from pioneer_grpc.server.web.edge import Answering
from pioneer_grpc.v1 import (
    echo_service_connect,
    history_service_connect,
    manifest_service_connect,
    prompt_compiler_service_connect,
    provider_service_connect,
    turn_service_connect,
)

# Full service name -> the generated Connect application class.
APPLICATIONS: dict[str, Callable[..., ConnectASGIApplication[Any]]] = {
    "pioneer.v1.PromptCompilerService": prompt_compiler_service_connect.PromptCompilerServiceASGIApplication,
    "pioneer.v1.HistoryService": history_service_connect.HistoryServiceASGIApplication,
    "pioneer.v1.ManifestService": manifest_service_connect.ManifestServiceASGIApplication,
    "pioneer.v1.ProviderService": provider_service_connect.ProviderServiceASGIApplication,
    "pioneer.v1.TurnService": turn_service_connect.TurnServiceASGIApplication,
    "pioneer.v1.EchoService": echo_service_connect.EchoServiceASGIApplication,
}


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


class _Delegate:
    """Answers `snake_case` method lookups with the servicer's `CamelCase` method, wrapped."""

    def __init__(self, service: str, servicer: Any, answering: Answering) -> None:
        self._service = service
        self._servicer = servicer
        self._answering = answering

    def __getattr__(self, snake: str) -> Any:
        name = _camel(snake)
        behavior = getattr(self._servicer, name)
        full = f"{self._service}/{name}"
        wrapped: Callable[..., Any] = (
            self._answering.stream(full, behavior)
            if inspect.isasyncgenfunction(behavior)
            else self._answering.unary(full, behavior)
        )
        setattr(self, snake, wrapped)  # built once per method
        return wrapped


def connect_applications(
    servicers: dict[str, Any],
    answering: Answering,
    interceptors: Iterable[Interceptor],
    read_max_bytes: int,
) -> dict[str, ConnectASGIApplication[Any]]:
    """`/pioneer.v1.Service` -> its Connect application, for every service the gRPC server serves."""
    apps: dict[str, ConnectASGIApplication[Any]] = {}
    chain = list(interceptors)
    for name, servicer in servicers.items():
        application = APPLICATIONS[name](
            _Delegate(name, servicer, answering),
            interceptors=chain,
            read_max_bytes=read_max_bytes,
            codecs=CODECS,
        )
        apps[application.path] = application
    return apps
