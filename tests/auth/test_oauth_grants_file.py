"""The grants file and the scopes, without a server: what two processes sharing the file see,
what is on disk, and what a scope allows."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from jupyter_mcp.auth.scopes import Access, ScopeError, access_of, parse_scopes
from jupyter_mcp.auth.store import Grant, GrantStore, digest


def grant(grant_id: str = "g1", **changes: object) -> Grant:
    fields: dict[str, object] = {
        "id": grant_id,
        "client_id": "https://client.example/c.json",
        "client_name": "Client",
        "registration": "metadata",
        "redirect_uri": "http://127.0.0.1:1/cb",
        "scopes": ["mcp"],
        "user": "alice",
        "resource": "http://127.0.0.1:8888/mcp",
        "issuer": "http://127.0.0.1:8888",
        "server": "port 8888 / root /home/alice",
        "created": 1000.0,
    }
    fields.update(changes)
    return Grant(**fields)  # type: ignore[arg-type]


def add(store: GrantStore, g: Grant) -> tuple[str, str]:
    issued = store.add_grant(g, access_lifetime=3600, refresh_lifetime=86400)
    return issued.access_token, issued.refresh_token


def test_the_file_holds_digests_only_and_only_its_user_reads_it(tmp_path: Path) -> None:
    store = GrantStore(tmp_path / "d" / "oauth.json")
    access, refresh = add(store, grant())

    text = store.path.read_text()
    assert access not in text and refresh not in text
    assert digest(access) in text and digest(refresh) in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert [p.name for p in store.path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_another_process_sees_a_new_grant_and_a_revocation_at_once(tmp_path: Path) -> None:
    server = GrantStore(tmp_path / "oauth.json")
    command_line = GrantStore(tmp_path / "oauth.json")
    access, _ = add(server, grant())

    found = command_line.find(access)
    revoked = command_line.revoke("g1")

    assert found is not None and found[0].id == "g1" and found[1] == "access"
    assert revoked
    assert server.find(access) is None


def test_two_writers_keep_each_others_changes(tmp_path: Path) -> None:
    first = GrantStore(tmp_path / "oauth.json")
    second = GrantStore(tmp_path / "oauth.json")
    add(first, grant("g1"))
    add(second, grant("g2"))
    add(first, grant("g3"))

    assert sorted(g.id for g in GrantStore(tmp_path / "oauth.json").grants()) == ["g1", "g2", "g3"]


def test_a_rotated_refresh_token_is_known_as_spent(tmp_path: Path) -> None:
    store = GrantStore(tmp_path / "oauth.json")
    access, refresh = add(store, grant())

    issued = store.rotate("g1", refresh, ["mcp"], access_lifetime=3600, refresh_lifetime=86400)
    again = store.rotate("g1", refresh, ["mcp"], access_lifetime=3600, refresh_lifetime=86400)

    assert issued is not None and again is None
    assert store.find(refresh)[1] == "spent"  # type: ignore[index]
    assert store.find(issued.refresh_token)[1] == "refresh"  # type: ignore[index]
    # The access token of before stays good until it expires (a request may be on its way).
    assert store.find(access)[1] == "access"  # type: ignore[index]


def test_revoking_an_unknown_grant_writes_nothing(tmp_path: Path) -> None:
    store = GrantStore(tmp_path / "missing" / "oauth.json")

    assert store.revoke("nope") is False
    assert not (tmp_path / "missing").exists()


def test_last_uses_are_written_by_the_next_flush(tmp_path: Path) -> None:
    times = iter([2000.0, 2000.0, 3000.0, 3000.0, 3000.0])
    store = GrantStore(tmp_path / "oauth.json", clock=lambda: next(times, 3000.0))
    add(store, grant())

    store.touch("g1")
    store.flush()

    stored = json.loads(store.path.read_text())["grants"]["g1"]
    assert stored["last_used"] == 3000.0


def test_an_unreadable_file_is_moved_aside_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    path.write_text("{not json")

    store = GrantStore(path)

    assert store.grants() == []
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("oauth.json.unreadable-")]
    assert len(aside) == 1 and aside[0].read_text() == "{not json"


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_file_others_could_read_is_made_private(tmp_path: Path) -> None:
    store = GrantStore(tmp_path / "oauth.json")
    add(store, grant())
    os.chmod(store.path, 0o644)

    GrantStore(store.path).grants()

    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


# --- scopes ----------------------------------------------------------------------------


def test_scopes_narrow_and_never_widen() -> None:
    assert access_of(["mcp"]) == Access()
    assert access_of(["mcp", "mcp:read"]) == Access(read_only=True)
    assert access_of(["mcp:toolsets:files", "mcp:toolsets:git"]) == Access(
        toolsets=frozenset({"files", "git"})
    )
    everything, read = Access(), Access(read_only=True)
    files = Access(toolsets=frozenset({"files"}))
    assert read.within(everything) and files.within(everything)
    assert not everything.within(read) and not everything.within(files)
    assert Access(read_only=True, toolsets=frozenset({"files"})).within(read)


def test_scopes_are_checked_and_made_canonical() -> None:
    assert parse_scopes([]) == ["mcp"]
    assert parse_scopes(["offline_access"]) == ["mcp"]
    assert parse_scopes(["mcp:toolsets:git,files", "mcp:read", "mcp"]) == [
        "mcp",
        "mcp:read",
        "mcp:toolsets:files,git",
    ]
    with pytest.raises(ScopeError, match="Unknown scope 'openid'"):
        parse_scopes(["mcp", "openid"])
    with pytest.raises(ScopeError, match="nope"):
        parse_scopes(["mcp:toolsets:nope"])


def test_uses_noted_while_changes_are_written_are_neither_lost_nor_in_the_way(
    tmp_path: Path,
) -> None:
    # The event loop notes uses and reads on every request while a worker thread writes.
    store = GrantStore(tmp_path / "oauth.json")
    _, refresh = add(store, grant())
    stop = threading.Event()
    errors: list[BaseException] = []

    def requests() -> None:
        try:
            while not stop.is_set():
                store.touch("g1")
                assert store.grant("g1") is not None
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    reader = threading.Thread(target=requests)
    reader.start()
    try:
        for _ in range(20):
            issued = store.rotate(
                "g1", refresh, ["mcp"], access_lifetime=3600, refresh_lifetime=86400
            )
            assert issued is not None
            refresh = issued.refresh_token
            store.flush()
    finally:
        stop.set()
        reader.join()
    store.flush()

    assert errors == []
    assert GrantStore(store.path).grant("g1").last_used is not None  # type: ignore[union-attr]
