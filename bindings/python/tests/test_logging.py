"""The core's log records reach logging.getLogger("zklock"): a connect at
INFO with the session id; set_log_level filters them; bad levels are
refused."""

from __future__ import annotations

import logging
import threading
from typing import List

import pytest
import zklock
from support import wait_for


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self.mu = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self.mu:
            self.records.append(record)

    def messages(self) -> List[str]:
        with self.mu:
            return [r.getMessage() for r in self.records]


def test_connects_reach_the_zklock_logger_and_the_level_filters(hosts: str) -> None:
    logger = logging.getLogger("zklock")
    handler = _Collect()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with zklock.Client(hosts) as zk:
            session = "%#x" % zk.session_id
            wait_for(lambda: any("connected to" in m and session in m for m in handler.messages()), what="the record")
            record = next(r for r in handler.records if session in r.getMessage())
            assert record.levelno == logging.INFO and record.name == "zklock"
        zklock.set_log_level("OFF")
        with zklock.Client(hosts) as zk:
            session = "%#x" % zk.session_id
        zklock.set_log_level(logging.DEBUG)
        with zklock.Client(hosts) as zk:
            with zk.lock("/logging-debug"):
                wait_for(lambda: any("granted /logging-debug" in m for m in handler.messages()), what="a grant")
        assert not any(session in m for m in handler.messages()), "a record while OFF"
    finally:
        zklock.set_log_level("INFO")
        logger.removeHandler(handler)
        logger.setLevel(old)


@pytest.mark.parametrize("level", ["LOUD", ""])
def test_unknown_levels_are_refused(level: str) -> None:
    with pytest.raises(zklock.InvalidArgument, match="log level"):
        zklock.set_log_level(level)


def test_levels_of_a_wrong_type_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        zklock.set_log_level(True)
    with pytest.raises(TypeError):
        zklock.set_log_level(1.5)  # type: ignore[arg-type]
