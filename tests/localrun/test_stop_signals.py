"""SIGINT and SIGTERM while a local try runs (localrun/stop.py): a request that the pods'
loop answers, or, where nothing can be lost, an end there and then."""

import signal

import pytest

from localrun.stop import Stop, Stopped


def test_a_signal_asks_to_stop_and_a_second_one_to_hurry() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with Stop() as stop:
        signal.raise_signal(signal.SIGTERM)
        assert stop.requested.is_set() and not stop.hurry.is_set()
        signal.raise_signal(signal.SIGINT)
        assert stop.hurry.is_set()
        assert (stop.name, stop.exit_code) == ("SIGTERM", 143)
    assert signal.getsignal(signal.SIGTERM) is before, "the caller's handler is back"


def test_a_signal_where_nothing_is_kept_ends_the_work_at_once() -> None:
    with Stop() as stop:
        with pytest.raises(Stopped), stop.at_once():
            signal.raise_signal(signal.SIGINT)
        assert stop.exit_code == 130


def test_work_that_ends_at_once_does_not_begin_after_a_signal() -> None:
    with Stop() as stop:
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(Stopped), stop.at_once():
            pytest.fail("began")
