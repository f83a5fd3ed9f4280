"""ACLs and TLS against a real ZooKeeper (issue 18): ``acl=`` gives the
nodes the caller's ACL (read back from the server by a raw kazoo session),
a session of another identity gets :class:`zklock.NoAuth` at once, and
``tls_ca=``/``tls_cert=``/``tls_key=`` connect to a server's TLS port, a
wrong CA failing at once with a message that says why."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterator

import pytest
import zklock
from conftest import Harness


@pytest.fixture(scope="module")
def tls_harness() -> Iterator[Harness]:
    """A server of its own that also serves TLS and lets alice log in with
    SASL (password ``pw-alice``)."""
    h = Harness("--tls", "--sasl", "alice:pw-alice")
    try:
        yield h
    finally:
        h.stop()


def test_creator_acl_shuts_out_other_identities(hosts: str, path: str) -> None:
    alice = zklock.Client(hosts, auth=("alice", "pw-alice"), acl="creator")
    alice2 = zklock.Client(hosts, auth=("alice", "pw-alice"), acl="creator")
    mallory = zklock.Client(hosts, auth=("mallory", "pw"), acl="creator")
    nobody = zklock.Client(hosts)
    try:
        lock = alice.lock(path)
        assert lock.acquire(timeout=10)
        for other in (mallory, nobody):
            began = time.monotonic()
            with pytest.raises(zklock.NoAuth) as info:
                other.lock(path).acquire(timeout=10)
            assert info.value.code == "NO_AUTH"
            assert "NoAuth" in str(info.value)
            assert isinstance(info.value, PermissionError)
            assert time.monotonic() - began < 5
        # The queue cannot even be seen without an identity the ACL names.
        with pytest.raises(zklock.NoAuth):
            nobody.participants(path)
        second = alice2.lock(path)
        assert not second.acquire(blocking=False)
        lock.release()
        assert second.acquire(timeout=10)
        second.release()
    finally:
        for c in (alice, alice2, mallory, nobody):
            c.close()


def test_acl_is_checked_before_connecting(hosts: str) -> None:
    with pytest.raises(zklock.InvalidArgument, match="unknown permission"):
        zklock.Client(hosts, acl="world:anyone:rx")
    with pytest.raises(zklock.InvalidArgument, match="not the password"):
        zklock.Client(hosts, acl="digest:bob:secret:cdrwa")
    with pytest.raises(TypeError):
        zklock.Client(hosts, acl=["creator"])  # type: ignore[arg-type]


def test_tls_with_the_right_ca_locks(tls_harness: Harness, path: str) -> None:
    assert tls_harness.secure and tls_harness.tls_dir
    certs = Path(tls_harness.tls_dir)
    with zklock.Client(
        tls_harness.secure,
        tls_ca=certs / "ca.pem",
        tls_cert=str(certs / "client.pem"),
        tls_key=certs / "client-key.pem",
    ) as zk:
        with zk.lock(path, timeout=10) as held:
            # Seen from outside through the plaintext port.
            with zklock.Client(tls_harness.connect) as plain:
                assert [p.name for p in plain.participants(path)] == [held.node_path.rsplit("/", 1)[1]]


def test_tls_refuses_another_ca_at_once_saying_why(tls_harness: Harness) -> None:
    assert tls_harness.secure and tls_harness.tls_dir
    began = time.monotonic()
    with pytest.raises(zklock.ConnectionLoss, match="UnknownIssuer"):
        zklock.Client(tls_harness.secure, connect_timeout=8, tls_ca=os.path.join(tls_harness.tls_dir, "other-ca.pem"))
    assert time.monotonic() - began < 6
    with pytest.raises(zklock.InvalidArgument, match="needs its key"):
        zklock.Client(tls_harness.secure, tls_ca=os.path.join(tls_harness.tls_dir, "ca.pem"), tls_cert="x.pem")
    with pytest.raises(zklock.InvalidArgument, match="/nonexistent/ca.pem"):
        zklock.Client(tls_harness.secure, tls_ca="/nonexistent/ca.pem")


def test_sasl_digest_md5(tls_harness: Harness, path: str) -> None:
    with pytest.raises(zklock.NoAuth, match="AuthFailed"):
        zklock.Client(tls_harness.connect, sasl=("alice", "wrong"))
    with pytest.raises(TypeError):
        zklock.Client(tls_harness.connect, sasl="alice")  # type: ignore[arg-type]
    with zklock.Client(tls_harness.connect, sasl=("alice", "pw-alice"), acl="sasl:alice:cdrwa") as zk:
        with zk.lock(path, timeout=10):
            pass
