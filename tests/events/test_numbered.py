"""A provisional event id takes the id its own commit drew, never another transaction's."""

from __future__ import annotations

import pytest

from pioneer_grpc.store.manifests import numbered
from pioneer_grpc.store.port import Recorded
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2


def provisional(event_id: int) -> Recorded:
    return Recorded(event_id, service_pb2.ManifestEvent(event_id=event_id, thread_id="t", turn_id="u"))


def test_the_commit_s_own_id_replaces_the_provisional_one() -> None:
    before = provisional(-7)
    after = numbered(before, "-7 42")
    assert (after.event_id, after.event.event_id if after.event else None) == (42, 42)
    assert after.event is not None
    assert after.event.thread_id == "t"
    assert before.event is not None
    assert before.event.event_id == -7


@pytest.mark.parametrize("left", [None, "", "-6 41", "-7", "-7 x"])
def test_a_value_left_by_another_transaction_or_none_is_refused(left: str | None) -> None:
    with pytest.raises(RuntimeError, match="without an id drawn"):
        numbered(provisional(-7), left)


def test_final_ids_and_repeats_pass_unchanged() -> None:
    final = provisional(5)
    repeat = Recorded(9, None)
    assert numbered(final, "-1 2") is final
    assert numbered(repeat, None) is repeat
