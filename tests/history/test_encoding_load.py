"""An encoding the process has not loaded is loaded off the event loop and off the store's thread,
never inside a unit of work, and the entries are still counted in the thread model's tokenizer."""

from __future__ import annotations

import threading

import pytest

from pioneer_grpc.history import encodings
from pioneer_grpc.history.encodings import O200K_BASE
from pioneer_grpc.history.render import entry_counted_texts
from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.v1 import history_service_pb2, turn_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config, entry
from tests.turn.test_prepare_turn import Client, compile_input

# gpt-4o-mini counts in o200k_base (models/registry.toml); a thread this process has not seen
# is counted in cl100k_base before its transaction, then again in the model's once it is read.
MODEL = "gpt-4o-mini"
# A text the two encodings count apart (o200k_base has more of the non-English vocabulary).
ASKED = "東京の明日の天気と、週末の予報を教えてください。傘は必要ですか？"


@pytest.fixture
def o200k_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """o200k_base not loaded in this process; the name of each thread that loads it."""
    loads: list[str] = []
    load = encodings._LOADERS[O200K_BASE]

    def recorded() -> object:
        loads.append(threading.current_thread().name)
        return load()

    loaded = {name: found for name, found in encodings._loaded.items() if name != O200K_BASE}
    monkeypatch.setattr(encodings, "_loaded", loaded)
    monkeypatch.setitem(encodings._LOADERS, O200K_BASE, recorded)
    return loads


def _loaded_apart(loads: list[str]) -> None:
    # Not the event loop's thread (the test's, where the server runs), nor the SQLite store's.
    assert len(loads) == 1
    assert loads[0] not in (threading.main_thread().name, "pioneer-sqlite-round"), loads


async def test_an_append_loads_the_thread_models_encoding_outside_its_unit(
    database_url, server_factory, o200k_loads
):
    client = Client(await server_factory(database_url=database_url))
    await client.create_thread(
        history_service_pb2.CreateThreadRequest(thread_id="t", config=config(model=MODEL))
    )
    entries = [entry("u0", "turn-0", content=ASKED), *tool_turn(0, lines=6)[1:]]
    reply = await client.append_entries(
        history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries)
    )
    _loaded_apart(o200k_loads)
    expected = [sum(count_blocking(entry_counted_texts(new), O200K_BASE)) for new in entries]
    assert [stored.token_count for stored in reply.entries] == expected
    assert expected != [sum(count_blocking(entry_counted_texts(new))) for new in entries]


async def test_a_round_loads_the_thread_models_encoding_outside_its_unit(
    database_url, server_factory, o200k_loads
):
    client = Client(await server_factory(database_url=database_url))
    await client.create_thread(
        history_service_pb2.CreateThreadRequest(thread_id="t", config=config(model=MODEL))
    )
    user = entry("u0", "turn-0", content=ASKED)
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t", turn_id=user.turn_id, new_entries=[user], compile_input=compile_input()
    )
    await client.prepare_turn(request)
    _loaded_apart(o200k_loads)
    stored = await client.append_entries(
        history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[user])  # a repeat: read back
    )
    counted = sum(count_blocking(entry_counted_texts(user), O200K_BASE))
    assert [found.token_count for found in stored.entries] == [counted]
    assert counted != sum(count_blocking(entry_counted_texts(user)))


async def test_a_load_counting_again_in_a_new_models_tokenizer_loads_it_outside_its_unit(
    database_url, server_factory, o200k_loads
):
    """A thread moved from a model of cl100k_base to one of o200k_base: its first load counts the
    stored entries again, in the encoding it loads first, outside the load's unit."""
    client = Client(await server_factory(database_url=database_url))

    async def completed_thread(thread_id: str, model: str) -> None:
        await client.create_thread(
            history_service_pb2.CreateThreadRequest(thread_id=thread_id, config=config(model=model))
        )
        await client.complete_turn(
            history_service_pb2.CompleteTurnRequest(
                thread_id=thread_id, turn_id="turn-0", entries=[entry("u0", "turn-0", content=ASKED)]
            )
        )

    async def tokens_before(thread_id: str) -> int:
        loaded = await client.load_conversation_history(
            history_service_pb2.LoadConversationHistoryRequest(thread_id=thread_id)
        )
        return loaded.report.tokens_before

    await completed_thread("moved", "gpt-4")  # counted in cl100k_base
    in_cl100k = await tokens_before("moved")
    await client.update_thread(
        history_service_pb2.UpdateThreadRequest(thread_id="moved", config=config(model=MODEL))
    )
    moved = await tokens_before("moved")
    _loaded_apart(o200k_loads)
    await completed_thread("born", MODEL)  # counted in o200k_base when appended
    assert moved == await tokens_before("born") != in_cl100k
