"""SignalStop: a stop signal ends the main thread's wait at once, whichever thread the kernel gave it
to. These run in pytest's main thread, where signal handlers are installed and run."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from greenops.common.stopping import SignalStop


def other_thread() -> tuple[threading.Thread, threading.Event]:
    """A thread that does not block signals (as gRPC's and an HTTP server's do not), idling."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait, daemon=True)
    thread.start()
    return thread, done


def signal_later(thread: threading.Thread, sig: signal.Signals, after: float = 0.3) -> None:
    threading.Timer(after, signal.pthread_kill, (thread.ident, sig)).start()


def test_a_sigterm_taken_by_another_thread_ends_the_main_threads_wait_at_once():
    said: list[str] = []
    thread, done = other_thread()
    with SignalStop(said=lambda sig: said.append(sig.name)) as stop:
        signal_later(thread, signal.SIGTERM)
        started = time.monotonic()
        assert stop.wait(60) is True
        waited = time.monotonic() - started
    done.set()
    assert waited < 5, f"the wait went on {waited:.1f} s after the signal"
    assert said == ["SIGTERM"]


def test_a_plain_event_would_sleep_through_it():
    """The fault SignalStop exists for, shown with CPython itself: the handler runs only when the
    main thread's Event.wait times out."""
    thread, done = other_thread()
    event = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: event.set())
    try:
        signal_later(thread, signal.SIGTERM)
        started = time.monotonic()
        event.wait(3)
        waited = time.monotonic() - started
    finally:
        signal.signal(signal.SIGTERM, previous)
        done.set()
    assert waited >= 2.9


def test_sigint_too_and_a_set_from_another_thread():
    thread, done = other_thread()
    with SignalStop() as stop:
        signal_later(thread, signal.SIGINT)
        assert stop.wait(60) is True
    with SignalStop() as stop:
        threading.Timer(0.3, stop.set).start()
        started = time.monotonic()
        assert stop.wait(60) is True and time.monotonic() - started < 5
    done.set()


def test_a_wait_times_out_unset_and_other_threads_wait_as_on_an_event():
    with SignalStop() as stop:
        started = time.monotonic()
        assert stop.wait(0.3) is False
        assert 0.25 <= time.monotonic() - started < 3
        seen: list[bool] = []
        waiter = threading.Thread(target=lambda: seen.append(stop.wait(60)))
        waiter.start()
        stop.set()
        waiter.join(5)
        assert seen == [True]


def test_close_puts_back_the_handlers_and_the_wake_up_descriptor():
    def mine(*_: object) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        before = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(before)
        stop = SignalStop()
        assert signal.getsignal(signal.SIGTERM) != mine
        stop.close()
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.set_wakeup_fd(before) == before
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_signal_to_the_main_thread_itself_ends_the_wait(timeout):
    with SignalStop() as stop:
        main = threading.main_thread()
        signal_later(main, signal.SIGTERM)
        assert stop.wait(timeout) is True


def test_a_handler_line_that_cannot_be_printed_still_stops():
    """The handler's print can interrupt a print of the main thread's to the same stream, which
    raises "reentrant call": the stop must stand."""

    def reentrant(_sig: signal.Signals) -> None:
        raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stdout>'>")

    with SignalStop(said=reentrant) as stop:
        signal_later(threading.main_thread(), signal.SIGTERM)
        assert stop.wait(30) is True
