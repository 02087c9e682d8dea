"""The run queue shared by the Live benchmark and the load generator: one run at a time, fair between people
(the person served longest ago goes next), one waiting run per person."""

from __future__ import annotations

import threading
import time

import pytest

from specviz.app.queues import RunQueue


def _start(queue: RunQueue, user: str, order: list, hold_s: float = 0.05) -> threading.Thread:
    def run():
        with queue.hold(user, poll_s=0.01, user=user):
            order.append(user)
            time.sleep(hold_s)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait_until(test, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not test():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_the_person_served_longest_ago_goes_next():
    queue, order = RunQueue(), []
    first = _start(queue, "a", order, hold_s=0.3)
    _wait_until(lambda: order == ["a"])
    threads = [_start(queue, "a", order)]  # a queues a second run while their first holds
    _wait_until(lambda: len(queue._waiting) == 1)
    threads.append(_start(queue, "b", order))  # b arrives later, but has not been served yet
    _wait_until(lambda: len(queue._waiting) == 2)
    for t in (first, *threads):
        t.join()
    assert order == ["a", "b", "a"]


@pytest.mark.slow
def test_one_waiting_run_per_person_and_the_local_user_is_not_limited():
    queue, order = RunQueue(), []
    holder = _start(queue, "x", order, hold_s=0.3)
    _wait_until(lambda: order == ["x"])
    waiting = _start(queue, "a", order)
    _wait_until(lambda: len(queue._waiting) == 1)
    with pytest.raises(ValueError, match="already have a run waiting"), queue.hold("a again", user="a"):
        pass
    local = [_start(queue, "", order), _start(queue, "", order)]  # "" is the local user: not limited
    for t in (holder, waiting, *local):
        t.join()
    assert sorted(order) == ["", "", "a", "x"] and not queue._waiting and queue.busy() is None


@pytest.mark.slow
def test_a_waiter_that_gives_up_leaves_the_queue():
    queue, order = RunQueue(), []
    holder = _start(queue, "x", order, hold_s=0.2)
    _wait_until(lambda: order == ["x"])
    calls = []

    def on_wait(message):
        calls.append(message)
        raise KeyboardInterrupt  # a Stop while queued

    with pytest.raises(KeyboardInterrupt), queue.hold("b", on_wait=on_wait, poll_s=0.01, user="b"):
        pass
    holder.join()
    assert calls and not queue._waiting and queue.busy() is None
