"""Heartbeats: one thread per process beats for every block, only while it runs."""

from __future__ import annotations

import threading
import time

from arena.heartbeat import heartbeat


def test_a_block_is_beaten_every_interval_and_not_after():
    beats: list[float] = []
    started = time.monotonic()
    with heartbeat(lambda: beats.append(time.monotonic() - started), every_s=0.05, name="t"):
        time.sleep(0.28)
    count = len(beats)
    time.sleep(0.15)
    assert count >= 2
    assert beats[0] >= 0.05  # the first beat comes one interval in
    assert len(beats) == count  # nothing after the block


def test_blocks_share_one_thread_and_keep_their_own_pace():
    fast: list[str] = []
    slow: list[str] = []
    with (
        heartbeat(lambda: fast.append(threading.current_thread().name), every_s=0.03, name="f"),
        heartbeat(lambda: slow.append(threading.current_thread().name), every_s=0.1, name="s"),
    ):
        time.sleep(0.35)
    assert len(fast) > len(slow) >= 1
    assert set(fast) == set(slow) == {"heartbeats"}


def test_a_failing_beat_stops_only_its_own_heartbeat():
    good: list[int] = []

    def bad() -> None:
        raise RuntimeError("the lease is gone")

    with (
        heartbeat(bad, every_s=0.02, name="bad"),
        heartbeat(lambda: good.append(1), every_s=0.02, name="good"),
    ):
        time.sleep(0.15)
    assert len(good) >= 2


def test_the_end_of_a_block_waits_for_its_beat_in_progress():
    calls: list[str] = []
    running = threading.Event()

    def slow_beat() -> None:
        calls.append("start")
        running.set()
        time.sleep(0.1)
        calls.append("end")

    with heartbeat(slow_beat, every_s=0.02, name="slow"):
        assert running.wait(5)  # a beat is running now
    calls.append("after")
    assert calls[-2:] == ["end", "after"]
