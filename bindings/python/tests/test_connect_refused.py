"""A connect where nothing listens fails at once, naming the address (issue 30)."""

from __future__ import annotations

import socket
import time

import pytest
import zklock


def free_port() -> int:
    """A loopback port that nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_said_at_once_with_the_address() -> None:
    port = free_port()
    began = time.monotonic()
    with pytest.raises(zklock.ConnectionLoss) as info:
        zklock.Client("127.0.0.1:%d" % port, connect_timeout=30.0)
    took = time.monotonic() - began
    assert info.value.code == "CONNECTION_LOSS"
    assert isinstance(info.value, ConnectionError)
    assert "connection refused by 127.0.0.1:%d" % port in str(info.value)
    assert took < 10.0, "refused, yet it waited %.1f s of the 30 s connect timeout" % took
