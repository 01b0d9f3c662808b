"""The client's methods carry their request and response types and stay in step with the protos."""

from __future__ import annotations

import importlib.util
import typing
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from pathlib import Path

import pytest

from pioneer_grpc.client import RPCS, AsyncClient, Client, chat_role, entry_role, role_name
from pioneer_grpc.v1 import chat_pb2, history_pb2

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_client_methods", ROOT / "scripts" / "gen_client_methods.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_calls_py_is_what_the_generator_writes_from_the_services():
    assert (ROOT / "pioneer_grpc" / "client" / "calls.py").read_text() == _generator().render()


@pytest.mark.parametrize("client", [Client, AsyncClient])
def test_every_method_returns_its_rpcs_response_class(client):
    for name, rpc in RPCS.items():
        hints = typing.get_type_hints(getattr(client, name))
        if rpc.client_streaming:
            uploads = Iterable[rpc.request]
            if client is AsyncClient:
                uploads = AsyncIterable[rpc.request] | uploads
            assert hints["requests"] == uploads, name
        else:
            assert hints["request"] == rpc.request | None, name
        if rpc.server_streaming:
            stream = Iterator if client is Client else AsyncIterator
            assert hints["return"] == stream[rpc.response], name
        else:
            assert hints["return"] is rpc.response, name


def test_the_package_is_marked_typed():
    assert (ROOT / "pioneer_grpc" / "py.typed").is_file()


def test_roles_print_by_name_and_unknown_values_list_the_names():
    assert role_name(history_pb2.ConversationEntry(role=history_pb2.ENTRY_ROLE_TOOL)) == "ENTRY_ROLE_TOOL"
    assert role_name(chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER)) == "CHAT_ROLE_USER"
    with pytest.raises(ValueError) as entry:
        chat_role(9)
    assert str(entry.value) == (
        "unknown EntryRole 9: one of ENTRY_ROLE_UNSPECIFIED (0), ENTRY_ROLE_USER (1), "
        "ENTRY_ROLE_ASSISTANT (2), ENTRY_ROLE_TOOL (3), ENTRY_ROLE_SYSTEM (4)"
    )
    with pytest.raises(
        ValueError, match=r"unknown ChatRole 7: one of CHAT_ROLE_UNSPECIFIED \(0\), CHAT_ROLE_SYSTEM"
    ):
        entry_role(7)
