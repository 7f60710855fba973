"""animkit.recent.Recent: results kept by key, newest last, the oldest dropped, a stale hit made again."""

from __future__ import annotations

from animkit.recent import Recent


def test_a_kept_result_is_returned_and_the_oldest_is_dropped() -> None:
    made: list[int] = []

    def make(v: int):  # type: ignore[no-untyped-def]
        def f() -> int:
            made.append(v)
            return v
        return f

    r: Recent[int] = Recent(2)
    assert r.fetch("a", (), make(1)) == 1 and r.fetch("a", (), make(9)) == 1  # kept: not made again
    r.fetch("b", (), make(2))
    r.fetch("a", (), make(9))  # a is the newest again: c drops b, not a
    r.fetch("c", (), make(3))
    assert len(r) == 2 and r.fetch("a", (), make(9)) == 1 and r.fetch("b", (), make(4)) == 4
    assert made == [1, 2, 3, 4]


def test_a_hit_that_is_no_longer_valid_is_made_again() -> None:
    r: Recent[list[int]] = Recent()
    first = r.fetch("k", (), lambda: [1])
    first.append(2)  # the result was edited: the caller's check says so
    again = r.fetch("k", (), lambda: [1], valid=lambda v: v == [1])
    assert again == [1] and again is not first
