"""The asyncio client: the same typed methods as Client (calls.py), awaited; streams are async iterators.

async with await AsyncClient.connect("127.0.0.1:50051") as client:
    prepared = await client.prepare_turn(thread_id="t1", turn_id="u1", new_entries=[...])
    async for event in client.watch_manifests(thread_id="t1"):
        ...
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import replace
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from pioneer_grpc.client.calls import AsyncCalls
from pioneer_grpc.client.connect import ConnectOptions
from pioneer_grpc.client.errors import UnavailableError, failure_from
from pioneer_grpc.client.methods import DEFAULT, RPCS, Metadata, Rpc, Timeout

R = TypeVar("R", bound=Message)


class AsyncClient(AsyncCalls):
    def __init__(self, channel: grpc.aio.Channel, options: ConnectOptions) -> None:
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
    async def connect(cls, address: str | None = None, **settings: Any) -> AsyncClient:
        """Opens a channel and waits (connect_timeout) until the server answers; see ConnectOptions."""
        options = ConnectOptions(**settings)
        if address is not None:
            options = replace(options, address=address)
        credentials = options.credentials()
        if credentials is None:
            channel = grpc.aio.insecure_channel(options.address, options=options.channel_options())
        else:
            channel = grpc.aio.secure_channel(options.address, credentials, options=options.channel_options())
        if options.connect_timeout is not None:
            try:
                await asyncio.wait_for(channel.channel_ready(), options.connect_timeout)
            except TimeoutError:
                await channel.close()
                raise UnavailableError(grpc.StatusCode.UNAVAILABLE, options.unreachable()) from None
        return cls(channel, options)

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _unary(
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
            response: R = await self._calls[rpc.name](
                message, timeout=seconds, metadata=self.options.call_metadata(metadata)
            )
        except grpc.RpcError as error:
            raise failure_from(error, rpc.path) from None
        return response

    async def _upload(
        self,
        rpc: Rpc,
        returns: type[R],
        requests: AsyncIterable[Message] | Iterable[Message],
        deadline: Timeout,
        metadata: Metadata,
    ) -> R:
        # No deadline unless given: an upload takes as long as its stream.
        seconds = None if deadline is DEFAULT else deadline
        stream = requests if isinstance(requests, AsyncIterable) else iter(requests)
        try:
            response: R = await self._calls[rpc.name](
                stream, timeout=seconds, metadata=self.options.call_metadata(metadata)
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
    ) -> AsyncIterator[R]:
        message = rpc.build(request, fields)
        return self._responses(rpc, message, None if deadline is DEFAULT else deadline, metadata)

    async def _responses(
        self, rpc: Rpc, message: Message, deadline: Timeout, metadata: Metadata
    ) -> AsyncIterator[Any]:
        call = self._calls[rpc.name](message, timeout=deadline, metadata=self.options.call_metadata(metadata))
        try:
            async for response in call:
                yield response
        except grpc.RpcError as error:
            raise failure_from(error, rpc.path) from None
        finally:
            call.cancel()
