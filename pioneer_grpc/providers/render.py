"""`render`: one validated ChatRequest to the exact JSON body of one provider API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.models.registry import Registry, packaged_registry
from pioneer_grpc.providers import model_fit
from pioneer_grpc.providers.common import JSON, encoded_body
from pioneer_grpc.providers.conversation import Notice, RenderedPrefix
from pioneer_grpc.providers.prefix import continues
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.providers.validate import prepare
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2


@dataclass(frozen=True)
class RenderedRequest:
    # The body's JSON text, UTF-8 encoded (as it goes on the wire).
    body: bytes
    path: str
    cache_breakpoints: int
    # What was adapted so the provider accepts the body (RenderNotice).
    notices: tuple[Notice, ...] = ()

    @property
    def body_json(self) -> str:
        return self.body.decode("utf-8")


@dataclass(frozen=True)
class RenderedBody:
    """A body rendered and accepted, its JSON text not written yet: `encoded()` writes it and
    cannot fail (a caller may write it after committing to the body)."""

    body: JSON
    path: str
    cache_breakpoints: int
    notices: tuple[Notice, ...]
    # The encoded size of what the body was rendered from (common.encoded_body).
    source_bytes: int

    def encoded(self) -> RenderedRequest:
        encoded = encoded_body(self.body, source_bytes=self.source_bytes)
        return RenderedRequest(encoded, self.path, self.cache_breakpoints, self.notices)


def path_for(provider: int, model: str) -> str:
    """The path of a provider the request was validated for (a KeyError for any other)."""
    return SPECS[provider].path(model)


def render_body(
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None = None,
    *,
    path: str = "chat_request",
    options_path: str = "options",
) -> tuple[JSON, int]:
    """The body as a dict (keys in send order) and the number of cache breakpoints placed."""
    body, breakpoints, _ = render_prepared(provider, request, options, path=path, options_path=options_path)
    return body, breakpoints


def render_prepared(
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None = None,
    *,
    path: str = "chat_request",
    options_path: str = "options",
    capped_parts: bool = False,
    prefix: RenderedPrefix | None = None,
    models: Registry | None = None,
) -> tuple[JSON, int, tuple[Notice, ...]]:
    """render_body, plus the notices of what the provider rules adapted.

    `capped_parts`, `prefix`: see `validate.prepare`. `models`: the registry whose
    minimum cacheable tokens decide the cache breakpoints (providers/cache_points.py)
    and whose entries say what a model takes; the packaged one when None.
    """
    prepared = prepare(provider, request, options, path, options_path, capped_parts, prefix, models)
    body, breakpoints = SPECS[provider].render(prepared)
    return body, breakpoints, prepared.notices


def render(
    provider: provider_service_pb2.Provider,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None = None,
    *,
    path: str = "chat_request",
    options_path: str = "options",
    capped_parts: bool = False,
    models: Registry | None = None,
) -> RenderedRequest:
    """Validate, then render.

    Raises InvalidArgument whose violations name `provider`, fields under `path`
    (`chat_request.tools[1].name`) and under `options_path`; a caller whose
    request names them differently (a turn's `render_options`) passes its own.
    """
    body, breakpoints, notices = render_prepared(
        provider,
        request,
        options,
        path=path,
        options_path=options_path,
        capped_parts=capped_parts,
        models=models,
    )
    encoded = encoded_body(body, source_bytes=request.ByteSize())
    return RenderedRequest(encoded, path_for(provider, request.model), breakpoints, notices)


def render_after(
    prefix: RenderedPrefix | None,
    provider: provider_service_pb2.Provider,
    request: chat_pb2.ChatRequest,
    whole: Callable[[], chat_pb2.ChatRequest],
    options: provider_service_pb2.RenderOptions | None = None,
    *,
    source_bytes: int,
    path: str = "chat_request",
    options_path: str = "options",
    models: Registry | None = None,
) -> RenderedBody:
    """`render(provider, whole(), ...)` with capped parts, rendering only what follows `prefix`;
    the body not written as JSON text yet (`.encoded()`).

    `request` is `whole()` without the prefix's messages (providers/prefix.py built
    `prefix` from them); `source_bytes` is `whole()`'s encoded size. The body and
    notices are those of rendering `whole()`: where `request` may not follow the
    prefix (prefix.continues), or where a violation must be named (by its index
    in the whole conversation), `whole()` is rendered.
    """
    spec = SPECS.get(provider)
    rendering = partial(
        render_prepared,
        provider,
        options=options,
        path=path,
        options_path=options_path,
        capped_parts=True,
        models=models,
    )
    if (
        prefix is not None
        and spec is not None
        and continues(prefix, provider, path, request)
        # Media the model does not read is left out message by message: not in a prefix.
        and prefix.media_kinds
        <= model_fit.takes_for(spec, models or packaged_registry(), request.model).media
    ):
        try:
            body, breakpoints, notices = rendering(request, prefix=prefix)
        except InvalidArgument:
            pass
        else:
            return RenderedBody(body, path_for(provider, request.model), breakpoints, notices, source_bytes)
    body, breakpoints, notices = rendering(whole())
    return RenderedBody(body, path_for(provider, request.model), breakpoints, notices, source_bytes)
