"""The blocking client: one method per RPC (see methods.py), errors raised as RpcFailure subclasses.

with Client.connect("127.0.0.1:50051", token="secret") as client:
    thread = client.create_thread(thread_id="t1", config=ThreadConfig(model="gpt-4.1")).thread
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import grpc
from google.protobuf.message import Message

from pioneer_grpc.client.connect import ConnectOptions
from pioneer_grpc.client.errors import UnavailableError, failure_from
from pioneer_grpc.client.methods import RPCS, Rpc

_DEFAULT: Any = object()


class Client:
    def __init__(self, channel: grpc.Channel, options: ConnectOptions) -> None:
        self.channel = channel
        self.options = options
        self._calls: dict[str, Any] = {}
        for rpc in RPCS.values():
            make = channel.unary_stream if rpc.server_streaming else channel.unary_unary
            self._calls[rpc.name] = make(
                rpc.path,
                request_serializer=rpc.request.SerializeToString,
                response_deserializer=rpc.response.FromString,
            )

    @classmethod
    def connect(cls, address: str | None = None, **settings: Any) -> Client:
        """Opens a channel and waits (connect_timeout) until the server answers; see ConnectOptions."""
        options = ConnectOptions(**settings)
        if address is not None:
            options = replace(options, address=address)
        credentials = options.credentials()
        if credentials is None:
            channel = grpc.insecure_channel(options.address, options=options.channel_options())
        else:
            channel = grpc.secure_channel(options.address, credentials, options=options.channel_options())
        if options.connect_timeout is not None:
            try:
                grpc.channel_ready_future(channel).result(timeout=options.connect_timeout)
            except grpc.FutureTimeoutError:
                channel.close()
                raise UnavailableError(grpc.StatusCode.UNAVAILABLE, options.unreachable()) from None
        return cls(channel, options)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _invoke(self, rpc: Rpc, request: Message, timeout: Any, metadata: Any) -> Any:
        if rpc.server_streaming:
            return self._stream(rpc, request, None if timeout is _DEFAULT else timeout, metadata)
        deadline = self.options.timeout if timeout is _DEFAULT else timeout
        try:
            return self._calls[rpc.name](
                request, timeout=deadline, metadata=self.options.call_metadata(metadata)
            )
        except grpc.RpcError as error:
            raise failure_from(error, rpc.path) from None

    def _stream(self, rpc: Rpc, request: Message, timeout: float | None, metadata: Any) -> Iterator[Any]:
        call = self._calls[rpc.name](request, timeout=timeout, metadata=self.options.call_metadata(metadata))
        try:
            yield from call
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                raise failure_from(error, rpc.path) from None
        finally:
            call.cancel()


def _method(rpc: Rpc) -> Any:
    def call(
        self: Client,
        request: Message | None = None,
        /,
        *,
        timeout: Any = _DEFAULT,
        metadata: Any = (),
        **fields: Any,
    ) -> Any:
        return self._invoke(rpc, rpc.build(request, fields), timeout, metadata)

    call.__name__ = call.__qualname__ = rpc.name
    shape = "a stream of " if rpc.server_streaming else ""
    call.__doc__ = f"{rpc.path}: {rpc.request.__name__} (or its fields) -> {shape}{rpc.response.__name__}"
    return call


for _rpc in RPCS.values():
    setattr(Client, _rpc.name, _method(_rpc))
