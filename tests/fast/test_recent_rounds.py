"""Each thread's last rounds for its usage: a retry is the same round, and the bodies stay bounded."""

from __future__ import annotations

from pioneer_grpc.service.recent_rounds import RecentRounds, SeenRound


def _seen(turn: str, messages: int, size: int = 10) -> SeenRound:
    return SeenRound(turn, messages, 1, 3, "gpt-5", None, {"turn": turn, "messages": messages}, size)


def test_the_round_before_and_a_retry_of_the_same_round() -> None:
    rounds = RecentRounds()
    assert rounds.swap("t", _seen("u1", 1)) is None
    previous = rounds.swap("t", _seen("u1", 3))
    assert previous is not None and previous.turn_message_count == 1
    again = rounds.swap("t", _seen("u1", 3))  # the same round sent again: the same round before it
    assert again is not None and again.turn_message_count == 1
    last = rounds.last("t")
    assert last is not None and last.body_before == {"turn": "u1", "messages": 1}


def test_at_most_two_bodies_a_thread_and_the_total_bounded() -> None:
    rounds = RecentRounds(max_bytes=100)
    for n in range(1, 6):
        rounds.swap("t", _seen("u1", n, size=10))
    assert rounds.kept_bytes == 20  # this round's body and the one before it
    previous = rounds.swap("t", _seen("u1", 6, size=10))
    # The round before comes with its own round before (what its expected side is reckoned from)...
    assert previous is not None and previous.body_before == {"turn": "u1", "messages": 4}
    # ... but is kept without it: a retry of round 6 finds round 5 alone.
    again = rounds.swap("t", _seen("u1", 6, size=10))
    assert again is not None and again.turn_message_count == 5 and again.body_before is None
    assert rounds.kept_bytes == 20
    for thread in ("a", "b", "c", "d"):
        rounds.swap(thread, _seen("u1", 1, size=30))
    assert rounds.kept_bytes <= 100
    assert rounds.last("t") is None and rounds.last("d") is not None  # the least recently used went first
