"""The blocking client: one typed method per RPC (calls.py), errors raised as RpcFailure subclasses.

with Client.connect("127.0.0.1:50051", token="secret") as client:
    thread = client.create_thread(thread_id="t1", config=ThreadConfig(model="gpt-4.1")).thread
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from pioneer_grpc.client.calls import SyncCalls
from pioneer_grpc.client.connect import ConnectOptions
from pioneer_grpc.client.errors import UnavailableError, failure_from
from pioneer_grpc.client.methods import DEFAULT, RPCS, Metadata, Rpc, Timeout

R = TypeVar("R", bound=Message)


class Client(SyncCalls):
    def __init__(self, channel: grpc.Channel, options: ConnectOptions) -> None:
        self.channel = channel
        self.options = options
        self._calls: dict[str, Any] = {}
        for rpc in RPCS.values():
            make = channel.unary_stream if rpc.server_streaming else channel.unary_unary
            if rpc.client_streaming:
                make = channel.stream_unary
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

    def _unary(
        self,
        rpc: Rpc,
        returns: type[R],
        request: Message | None,
        fields: dict[str, Any],
        deadline: Timeout,
        metadata: Metadata,
    ) -> R:
        message = rpc.build(request, fields)
        seconds = self.options.timeout if deadline is DEFAULT else deadline
        try:
            response: R = self._calls[rpc.name](
                message, timeout=seconds, metadata=self.options.call_metadata(metadata)
            )
        except grpc.RpcError as error:
            raise failure_from(error, rpc.path) from None
        return response

    def _upload(
        self,
        rpc: Rpc,
        returns: type[R],
        requests: Iterable[Message],
        deadline: Timeout,
        metadata: Metadata,
    ) -> R:
        # No deadline unless given: an upload takes as long as its stream.
        seconds = None if deadline is DEFAULT else deadline
        try:
            response: R = self._calls[rpc.name](
                iter(requests), timeout=seconds, metadata=self.options.call_metadata(metadata)
            )
        except grpc.RpcError as error:
            raise failure_from(error, rpc.path) from None
        return response

    def _stream(
        self,
        rpc: Rpc,
        returns: type[R],
        request: Message | None,
        fields: dict[str, Any],
        deadline: Timeout,
        metadata: Metadata,
    ) -> Iterator[R]:
        message = rpc.build(request, fields)
        return self._responses(rpc, message, None if deadline is DEFAULT else deadline, metadata)

    def _responses(self, rpc: Rpc, message: Message, deadline: Timeout, metadata: Metadata) -> Iterator[Any]:
        call = self._calls[rpc.name](message, timeout=deadline, metadata=self.options.call_metadata(metadata))
        try:
            yield from call
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                raise failure_from(error, rpc.path) from None
        finally:
            call.cancel()
