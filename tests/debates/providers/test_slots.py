"""The model-call cap: in-process and Redis semaphores with expiring leases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from debates.providers import ModelRequest, ProviderConfig, complete
from debates.providers.slots import (
    Lease,
    LocalSlots,
    RedisSlots,
    Slots,
    SlotUnavailable,
    TooManyWaiting,
    fair_share,
    hold,
    model_slots,
)
from tests.fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def slot_key() -> Iterator[str]:
    """Give each test its own Redis key prefix, removed afterwards, so tests never collide."""
    key = f"test-slots:{uuid.uuid4().hex}"
    yield key
    RedisSlots(settings.REDIS_URL, key=key).clear()


@pytest.fixture(params=["local", "redis"])
def make_slots(request: pytest.FixtureRequest, slot_key: str) -> Callable[..., Slots]:
    """Build either implementation, so both are held to the same contract."""

    def build(cap: int, *, poll_s: float = 0.1, **limits: Any) -> Slots:
        if request.param == "local":
            return LocalSlots(cap, **limits)
        return RedisSlots(settings.REDIS_URL, cap=cap, key=slot_key, poll_s=poll_s, **limits)

    return build


def test_at_most_cap_slots_are_handed_out(make_slots: Callable[..., Slots]) -> None:
    # given
    slots = make_slots(2)

    # when
    first, second = slots.acquire(0), slots.acquire(0)
    third = slots.acquire(0)

    # then
    assert first is not None and second is not None
    assert first.token != second.token
    assert not first.waited and not second.waited
    assert third is None
    assert slots.in_use() == 2


def test_a_released_slot_can_be_taken_again(make_slots: Callable[..., Slots]) -> None:
    # given
    slots = make_slots(1)
    lease = slots.acquire(0)

    # when
    slots.release(lease)
    again = slots.acquire(0)

    # then
    assert again is not None
    assert slots.in_use() == 1


def test_acquire_gives_up_after_wait_s(make_slots: Callable[..., Slots]) -> None:
    # given
    slots = make_slots(1)
    slots.acquire(0)
    started = time.monotonic()

    # when
    lease = slots.acquire(0.3)

    # then
    assert lease is None
    assert 0.3 <= time.monotonic() - started < 0.5


def test_a_waiter_takes_a_freed_slot_at_once(make_slots: Callable[..., Slots]) -> None:
    # given: polling is slowed to 5 s, so only the wake-up can explain a hand-over within
    # a second (the margin allows for a stall of this shared host)
    slots = make_slots(1, poll_s=5.0)
    held = slots.acquire(0)
    got: list[tuple[Lease | None, float]] = []

    def wait() -> None:
        lease = slots.acquire(6)
        got.append((lease, time.monotonic()))

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)

    # when
    released_at = time.monotonic()
    slots.release(held)
    waiter.join()

    # then: the lease says it was waited for, so its holder knows to check again
    [(lease, taken_at)] = got
    assert lease is not None and lease.waited
    assert taken_at - released_at < 1.0


def test_an_unreleased_lease_expires(make_slots: Callable[..., Slots]) -> None:
    # given
    slots = make_slots(1, poll_s=0.02)
    slots.acquire(0, lease_s=0.3)
    started = time.monotonic()

    # when
    lease = slots.acquire(2)

    # then
    assert lease is not None
    assert 0.25 <= time.monotonic() - started < 0.45


def test_releasing_an_expired_lease_frees_nobody_elses_slot(
    make_slots: Callable[..., Slots],
) -> None:
    # given: A's lease expired and B now holds the only slot
    slots = make_slots(1)
    old = slots.acquire(0, lease_s=0.1)
    time.sleep(0.15)
    current = slots.acquire(0)

    # when
    slots.release(old)

    # then
    assert current is not None
    assert slots.acquire(0) is None


def test_hold_raises_when_no_slot_frees_and_releases_after_the_block() -> None:
    # given
    slots = LocalSlots(1)

    # when
    with hold(slots, 0) as lease, pytest.raises(SlotUnavailable):
        assert lease.token
        with hold(slots, 0.05):
            pass

    # then
    assert slots.in_use() == 0


def test_a_renewed_lease_lasts_from_its_renewal(make_slots: Callable[..., Slots]) -> None:
    # given a lease of 1 s
    slots = make_slots(1)
    lease = slots.acquire(0, lease_s=1.0)
    time.sleep(0.5)

    # when it is renewed for 1 s halfway
    renewed = slots.renew(lease, 1.0)
    time.sleep(0.7)  # past the first expiry, 0.3 s before the renewed one

    # then it is still held, and free once the renewed lease runs out
    assert renewed
    assert slots.acquire(0) is None
    assert slots.acquire(2) is not None


def test_an_expired_or_released_lease_is_not_renewed(make_slots: Callable[..., Slots]) -> None:
    # given
    slots = make_slots(2)
    expired = slots.acquire(0, lease_s=0.1)
    released = slots.acquire(0)
    slots.release(released)
    time.sleep(0.15)

    # when / then: renewing them takes no slot back
    assert not slots.renew(expired, 10)
    assert not slots.renew(released, 10)
    assert slots.in_use() == 0


def test_hold_renews_its_lease_until_the_block_ends(make_slots: Callable[..., Slots]) -> None:
    # given: a lease of 0.9 s renewed every 0.3 s
    slots = make_slots(1, poll_s=0.02)

    # when: the block runs more than two leases long
    with hold(slots, 0, lease_s=0.9):
        time.sleep(2.0)
        held_throughout = slots.acquire(0) is None

    # then
    assert held_throughout
    assert slots.in_use() == 0


def test_model_slots_is_in_process_without_redis(settings) -> None:
    # given
    settings.REDIS_URL = ""
    settings.MODEL_CALL_CAP = 4

    # when
    slots = model_slots()

    # then
    assert isinstance(slots, LocalSlots)
    assert (slots.cap, slots.per_owner) == (4, settings.MODEL_CALLS_PER_USER)
    assert model_slots() is slots


def test_model_slots_uses_redis_when_configured(settings, slot_key: str) -> None:
    # given
    settings.MODEL_CALL_CAP = 3
    settings.MODEL_CALLS_PER_USER = 5
    settings.MODEL_SLOT_KEY = slot_key

    # when
    slots = model_slots()

    # then (a user's limit is never above the cap)
    assert isinstance(slots, RedisSlots)
    assert (slots.cap, slots.per_owner, slots.key) == (3, 3, slot_key)


def test_threads_sharing_local_slots_never_exceed_the_cap() -> None:
    # given: 8 threads, a cap of 3, answers taking 100 ms
    slots = LocalSlots(3)

    with FakeLLMServer(latency_s=0.1) as server:
        config, request = _fake_call_parts(server)
        remaining = list(range(20))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    if not remaining:
                        return
                    remaining.pop()
                with hold(slots, 10):
                    complete(config, request)

        # when
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        # then
        stats = server.stats()
    assert (stats["requests"], stats["max_in_flight"]) == (20, 3)


def test_two_processes_of_three_threads_never_exceed_a_cap_of_3(slot_key: str) -> None:
    # given
    with FakeLLMServer(latency_s=0.1) as server:
        command = [
            sys.executable,
            "-m",
            "tests.fakes.cap_worker",
            "run",
            "--redis-url",
            settings.REDIS_URL,
            "--key",
            slot_key,
            "--cap",
            "3",
            "--base-url",
            f"{server.url}/v1",
            "--calls",
            "10",
            "--threads",
            "3",
        ]

        # when
        workers = [
            subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)
        ]
        outputs = [worker.communicate(timeout=60)[0] for worker in workers]

        # then
        stats = server.stats()
    summaries = [json.loads(output) for output in outputs]
    assert summaries == [{"ok": 10, "not_acquired": 0, "errors": []}] * 2
    assert (stats["requests"], stats["max_in_flight"], stats["by_status"]) == (
        20,
        3,
        {"200": 20},
    )


def test_a_killed_holders_slot_comes_back_when_its_lease_expires_not_before(
    slot_key: str,
) -> None:
    # given: another process holds the only slot with a 1 s lease, then dies
    holder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.cap_worker",
            "hold",
            "--redis-url",
            settings.REDIS_URL,
            "--key",
            slot_key,
            "--cap",
            "1",
            "--lease",
            "1.0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = holder.stdout.readline()
    held_at = float(line.split()[1])
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    holder.stdout.close()
    slots = RedisSlots(settings.REDIS_URL, cap=1, key=slot_key, poll_s=0.05)

    # when
    right_after_death = slots.acquire(0)
    lease = slots.acquire(5)
    got_at = time.time()

    # then
    assert right_after_death is None
    assert lease is not None
    assert 1.0 - 0.05 <= got_at - held_at < 1.0 + 0.2


def _fake_call_parts(server: FakeLLMServer) -> tuple[ProviderConfig, ModelRequest]:
    config = ProviderConfig(
        "openai_compatible", "fake-model", base_url=f"{server.url}/v1", timeout_s=10
    )
    return config, ModelRequest(system="Candidates: BTCUSDT.", user="Round 1 of 1.")


# --- Fair shares between owners ----------------------------------------------------------


@pytest.mark.parametrize(
    ("cap", "owners", "share"), [(3, 1, 3), (3, 2, 2), (3, 3, 1), (3, 5, 1), (4, 2, 2), (1, 2, 1)]
)
def test_a_fair_share_is_the_cap_divided_among_contending_owners(cap, owners, share) -> None:
    assert fair_share(cap, owners) == share


def test_with_nobody_else_waiting_one_owner_takes_every_slot(make_slots) -> None:
    slots = make_slots(3)
    leases = [slots.acquire(0, owner="user:1") for _ in range(3)]
    assert all(leases)
    assert slots.holders() == {"user:1": 3}


def _wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(2000):
        if condition():
            return
        time.sleep(0.005)
    raise AssertionError("the slots never reached the state waited for")


def test_a_second_owner_gets_the_next_freed_slot_before_the_first_owners_queue(
    make_slots,
) -> None:
    # given user 1 holding all 3 slots with 20 more calls waiting (its queued debates)
    slots = make_slots(3, poll_s=0.02)
    held = [slots.acquire(0, owner="user:1") for _ in range(3)]
    done = threading.Event()
    got: dict[str, list[Lease]] = {"user:1": [], "user:2": []}

    def wait_for_slot(owner: str) -> None:
        lease = slots.acquire(30, owner=owner)
        if lease is not None:
            got[owner].append(lease)
            if done.is_set():
                slots.release(lease)

    queued = [threading.Thread(target=wait_for_slot, args=("user:1",)) for _ in range(20)]
    for thread in queued:
        thread.start()
    _wait_until(lambda: slots.waiting().get("user:1") == 20)
    # and user 2's one call waiting behind them
    second = threading.Thread(target=wait_for_slot, args=("user:2",))
    second.start()
    _wait_until(lambda: slots.waiting().get("user:2") == 1)
    # when one of user 1's calls ends
    slots.release(held.pop())
    second.join(timeout=30)
    # then the freed slot went to user 2, none to user 1's queue
    assert len(got["user:2"]) == 1
    assert got["user:1"] == []
    assert slots.holders() == {"user:1": 2, "user:2": 1}
    # and once user 2 waits no more, the next freed slot goes back to user 1's queue
    slots.release(held.pop())
    _wait_until(lambda: len(got["user:1"]) == 1)
    assert slots.holders() == {"user:1": 2, "user:2": 1}
    # (the rest drains)
    done.set()
    for lease in [*held, *got["user:1"], *got["user:2"]]:
        slots.release(lease)
    for thread in queued:
        thread.join(timeout=30)
    assert slots.in_use() == 0


def test_a_waiter_that_gave_up_no_longer_holds_anyone_back(make_slots) -> None:
    # given user 1 holding every slot, and user 2 giving up waiting
    slots = make_slots(3, poll_s=0.02)
    held = [slots.acquire(0, owner="user:1") for _ in range(3)]
    assert slots.acquire(0.05, owner="user:2") is None
    assert slots.waiting() == {}
    # when a slot frees, user 1 takes it again
    slots.release(held[0])
    assert slots.acquire(0, owner="user:1") is not None


def test_local_waiters_take_a_freed_slot_in_the_order_they_came() -> None:
    # given the one slot held, and three acquires waiting for it, one after another
    slots = LocalSlots(1)
    held = slots.acquire(0)
    order: list[int] = []

    def wait_then_pass_on(n: int) -> None:
        lease = slots.acquire(30)
        order.append(n)
        slots.release(lease)

    threads = [threading.Thread(target=wait_then_pass_on, args=(n,)) for n in range(3)]
    for n, thread in enumerate(threads):
        thread.start()
        _wait_until(lambda n=n: slots.waiting() == {"-": n + 1})
    # when the slot is released and a newcomer asks for it before any waiter runs again
    # (the waiters need the slots' lock to run, which this thread holds meanwhile)
    with slots._changed:
        slots.release(held)
        newcomer = slots.acquire(0)
    for thread in threads:
        thread.join(timeout=30)
    # then the newcomer got none, and the waiters took the slot in the order they came
    assert newcomer is None
    assert order == [0, 1, 2]
    assert slots.in_use() == 0


def test_an_owner_holds_at_most_per_owner_slots_and_the_others_keep_the_rest(
    make_slots,
) -> None:
    # given a cap of 4, an owner holding the 2 it may, with nobody else around
    slots = make_slots(4, per_owner=2)
    held = [slots.acquire(0, owner="user:1") for _ in range(2)]
    # when it asks for a third, and another owner for two
    third = slots.acquire(0.05, owner="user:1")
    others = [slots.acquire(0, owner="user:2") for _ in range(2)]
    # then the owner got no third slot, and the other owner the two left
    assert all(held) and third is None and all(others)
    assert slots.holders() == {"user:1": 2, "user:2": 2}


def _one_held_and_one_waiting(slots: Slots, owner: str) -> tuple[Lease, threading.Thread]:
    """Take the one slot ``owner`` may hold, and start one more acquire of its, waiting."""
    held = slots.acquire(0, owner=owner)
    waiter = threading.Thread(target=lambda: slots.acquire(1.0, owner=owner))
    waiter.start()
    _wait_until(lambda: slots.waiting() == {owner: 1})
    return held, waiter


def test_while_an_owners_calls_move_its_acquires_wait_beyond_its_waiting_room(
    make_slots,
) -> None:
    # given an owner holding the one slot it may, one more of its calls waiting, and its
    # calls still for less than a minute
    slots = make_slots(2, poll_s=0.02, per_owner=1, still_after_s=60)
    held, waiter = _one_held_and_one_waiting(slots, "user:1")
    # when a third call of the owner asks for a slot, then it waits its time, as the first
    assert slots.acquire(0.1, owner="user:1") is None
    waiter.join(timeout=30)
    slots.release(held)


def test_an_owner_with_still_calls_has_its_acquires_beyond_its_waiting_room_refused(
    make_slots,
) -> None:
    # given an owner holding the one slot it may, one more of its calls waiting, and none
    # of its calls begun or ended for longer than 50 ms
    slots = make_slots(2, poll_s=0.02, per_owner=1, still_after_s=0.05)
    held, waiter = _one_held_and_one_waiting(slots, "user:1")
    time.sleep(0.1)
    # when a third call of the owner asks for a slot, then it is refused
    with pytest.raises(TooManyWaiting):
        slots.acquire(30, owner="user:1")
    # and it was never recorded as waiting, and another owner still takes the free slot
    assert slots.waiting() == {"user:1": 1}
    other = slots.acquire(0, owner="user:2")
    assert other is not None
    assert slots.holders() == {"user:1": 1, "user:2": 1}
    waiter.join(timeout=30)
    for lease in (held, other):
        slots.release(lease)


def test_waiters_beyond_the_room_of_an_owner_whose_calls_became_still_give_up(
    make_slots,
) -> None:
    # given an owner holding the one slot it may, and three more of its calls waiting
    # while its calls moved
    slots = make_slots(2, poll_s=0.02, per_owner=1, still_after_s=0.5)
    held = slots.acquire(0, owner="user:1")
    refused: list[str] = []

    def wait_for_slot() -> None:
        try:
            slots.acquire(30, owner="user:1")
        except TooManyWaiting:
            refused.append("refused")

    waiters = [threading.Thread(target=wait_for_slot) for _ in range(3)]
    for thread in waiters:
        thread.start()
    _wait_until(lambda: slots.waiting() == {"user:1": 3})
    # when its calls stay still past 0.5 s, then all but one of the waiters give up
    _wait_until(lambda: len(refused) == 2)
    assert slots.waiting() == {"user:1": 1}
    # (the one left gets the owner's slot once it is given back)
    slots.release(held)
    for thread in waiters:
        thread.join(timeout=30)
    assert refused == ["refused", "refused"]
    assert slots.holders() == {"user:1": 1}


def test_hold_lets_a_refused_acquire_through_as_a_slot_unavailable(make_slots) -> None:
    # given an owner with still calls whose one slot is held and waiting room of one full
    slots = make_slots(3, poll_s=0.02, per_owner=1, still_after_s=0.05)
    held, waiter = _one_held_and_one_waiting(slots, "user:1")
    time.sleep(0.1)
    # when a step holds a slot for that owner, then the refusal reaches it
    with pytest.raises(TooManyWaiting) as refused, hold(slots, 30, owner="user:1"):
        pass
    assert isinstance(refused.value, SlotUnavailable)
    waiter.join(timeout=30)
    slots.release(held)
