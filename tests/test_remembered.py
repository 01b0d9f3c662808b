"""Remembered, the one small cache pure results share: bounded by its keys' bytes, least recent out first."""

from __future__ import annotations

import threading

from pioneer_grpc.remembered import Remembered


def test_a_value_is_found_by_its_key_bytes_and_nothing_else() -> None:
    kept: Remembered[int] = Remembered(1024)
    assert kept.get(b"a") is None
    kept.put(b"a", 1)
    assert kept.get(b"a") == 1
    assert kept.get(bytes(bytearray(b"a"))) == 1  # equal bytes, another object
    assert kept.get(b"b") is None


def test_the_least_recently_used_key_goes_first_when_the_bytes_run_over() -> None:
    kept: Remembered[str] = Remembered(80)  # keys up to 10 bytes kept
    for name in (b"k1", b"k2", b"k3", b"k4"):
        kept.put(name * 5, name.decode())  # 10 bytes each: 40
    assert kept.get(b"k1" * 5) == "k1"  # k1 is now the most recent
    for name in (b"k5", b"k6", b"k7", b"k8", b"k9"):
        kept.put(name * 5, name.decode())  # 90 bytes in all: the least recent (k2) goes
    assert kept.get(b"k2" * 5) is None
    assert kept.get(b"k1" * 5) == "k1"
    assert [kept.get(name * 5) for name in (b"k3", b"k4", b"k9")] == ["k3", "k4", "k9"]


def test_a_key_over_an_eighth_of_the_bound_is_not_kept() -> None:
    kept: Remembered[int] = Remembered(800)
    kept.put(b"x" * 101, 1)
    assert kept.get(b"x" * 101) is None
    kept.put(b"x" * 100, 2)
    assert kept.get(b"x" * 100) == 2


def test_the_first_value_put_for_a_key_stays() -> None:
    """What is kept depends only on the key: a second put of the same key is the same answer."""
    kept: Remembered[int] = Remembered(1024)
    kept.put(b"k", 1)
    kept.put(b"k", 2)
    assert kept.get(b"k") == 1


def test_puts_from_many_threads_keep_the_bound() -> None:
    kept: Remembered[int] = Remembered(8 * 1024)
    errors: list[BaseException] = []

    def put_many(start: int) -> None:
        try:
            for i in range(start, start + 2000):
                kept.put(b"%08d" % i, i)
                kept.get(b"%08d" % (i - 7))
        except BaseException as exc:  # pragma: no cover: the test fails on it
            errors.append(exc)

    threads = [threading.Thread(target=put_many, args=(n * 10_000,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # Full to the byte (every key is 8 bytes), and counted right: no put lost or counted twice.
    assert kept._bytes == 8 * 1024
    assert kept._bytes == sum(len(key) for key in kept._items)
    # Which thread put last is the scheduler's choice; a put after them all is kept.
    kept.put(b"%08d" % 99_999, 99_999)
    assert kept.get(b"%08d" % 99_999) == 99_999
    assert kept._bytes == 8 * 1024
