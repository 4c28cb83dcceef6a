"""The Library service against the real earshotd, with CURVE keys and roles.

One daemon for the module, with an allow-list of several keys; each test uses owners (allow-list
names) of its own, so the tests do not depend on each other's items or order.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from daemon_env import run_earshotd

from earshot_client import LibraryMirror, RpcError, StatusCode, Topics, pb

pytestmark = pytest.mark.integration

ADDED, REMOVED, CLEARED = pb.LibraryChange.KIND_ADDED, pb.LibraryChange.KIND_REMOVED, pb.LibraryChange.KIND_CLEARED
CURRENT = pb.LibraryChange.KIND_CURRENT
MATCH_TIMEOUT = 40.0

CLIENTS = {
    "py-admin": "admin",
    "alice": "viewer",  # round trip, paging, filters
    "bob": "operator",  # match(add_to_library=True)
    "carol": "viewer",  # isolation from dave, and refusals
    "dave": "operator",
    "erin": "viewer",  # watch and resume
    "frank": "viewer",  # notices
    "grace": "viewer",  # admin: list, delete, export
    "heidi": "viewer",
    "ivan": "viewer",  # LibraryMirror
    "judy": "viewer",  # refusals
}


@pytest.fixture(scope="module")
def library_daemon(tmp_path_factory):
    with run_earshotd(tmp_path_factory.mktemp("earshotd-library"), clients=CLIENTS) as daemon:
        yield daemon


def media(title: str, *, catalog: str = "py-lib", **properties) -> pb.MatchedMediaItem:
    return pb.MatchedMediaItem(
        media_item=pb.MediaItem(id=title, title=title.title(), custom_properties_json=json.dumps(properties)),
        catalog=catalog,
        catalog_version=1,
        match_offset=12.5,
        predicted_current_match_offset=14.0,
        confidence=0.8,
    )


def expect_code(code, call):
    with pytest.raises(RpcError) as info:
        call()
    assert info.value.code == code, info.value
    return info.value


def next_change(stream, timeout: float = 5.0) -> pb.LibraryChange:
    start = time.monotonic()
    change = next(stream)
    assert time.monotonic() - start < timeout
    return change


def test_add_items_remove_round_trip_with_paging_and_filters(library_daemon):
    now = int(time.time() * 1000)
    with library_daemon.client("alice") as alice:  # a viewer: enough for its own library
        empty = alice.library_items()
        assert (empty.version, empty.item_count, list(empty.items), empty.next_page_token) == (0, 0, [], "")
        new = [
            (media("jazz-1", genre="jazz", season=3), now - 5000),
            (media("jazz-2", genre="jazz", season="3"), now - 4000),
            (media("rock-1", genre="rock", live=True), now - 3000),
            (media("news-1", catalog="py-news"), now - 2000),
            (media("news-2", catalog="py-news"), now - 1000),
        ]
        added = alice.library_add(new)
        assert added.version == 1 and added.item_count == 5 and len(added.owner_hash) > 0
        assert [i.item.media_item.id for i in added.items] == ["jazz-1", "jazz-2", "rock-1", "news-1", "news-2"]
        ids = [i.id for i in added.items]
        assert len(set(ids)) == 5 and all(len(i) == 32 for i in ids)
        assert [i.matched_at_unix_ms for i in added.items] == [t for _, t in new]
        assert added.items[0].item == new[0][0]

        # Pages of 2, newest match first, "" after the last.
        pages, token = [], ""
        while True:
            page = alice.library_items(page_size=2, page_token=token)
            pages.append(page)
            token = page.next_page_token
            if not token:
                break
        assert [len(p.items) for p in pages] == [2, 2, 1]
        assert [i.id for p in pages for i in p.items] == ids[::-1]
        assert all(p.version == 1 and p.item_count == 5 and p.owner_hash == added.owner_hash for p in pages)
        assert [i.id for i in alice.library_all_items(page_size=3)] == ids[::-1]

        def titles(**filters):
            return [i.item.media_item.id for i in alice.library_all_items(**filters)]

        assert titles(catalog="py-news") == ["news-2", "news-1"]
        assert titles(matched_from_ms=now - 4000, matched_before_ms=now - 1000) == ["news-1", "rock-1", "jazz-2"]
        assert titles(property=("genre", "jazz")) == ["jazz-2", "jazz-1"]
        assert titles(property=("season", 3)) == ["jazz-1"]  # compared as JSON: 3 is not "3"
        assert titles(property=("season", "3")) == ["jazz-2"]
        assert titles(property=("live", True)) == ["rock-1"]
        expect_code(StatusCode.INVALID_ARGUMENT, lambda: alice.library_items(page_size=1001))
        expect_code(StatusCode.INVALID_ARGUMENT, lambda: alice.library_items(page_token="not-a-token"))

        # All or nothing: one bad item adds none; an unknown id removes none.
        bad = pb.MatchedMediaItem(media_item=pb.MediaItem(id="bad"), catalog="py-lib", confidence=2.0)
        refused = expect_code(StatusCode.INVALID_ARGUMENT, lambda: alice.library_add([media("ok"), bad]))
        assert "item 2" in refused.message
        expect_code(StatusCode.NOT_FOUND, lambda: alice.library_remove([ids[0], "0" * 32]))
        assert alice.library_items(page_size=1).version == 1

        removed = alice.library_remove(ids[:2])
        assert removed.version == 2 and removed.item_count == 3 and removed.owner_hash == added.owner_hash
        left = list(alice.library_all_items())
        assert [i.id for i in left] == ids[:1:-1]
        assert alice.library_items(page_size=1).item_count == 3
        expect_code(StatusCode.NOT_FOUND, lambda: alice.library_remove(ids[0]))  # already gone


def test_owners_cannot_see_or_remove_each_others_items(library_daemon):
    with library_daemon.client("carol") as carol, library_daemon.client("dave") as dave:
        mine = carol.library_add(media("carol-1")).items[0]
        theirs = dave.library_add([media("dave-1"), media("dave-2")])
        assert carol.library_items().owner_hash != theirs.owner_hash
        assert [i.id for i in carol.library_all_items()] == [mine.id]
        assert {i.id for i in dave.library_all_items()} == {i.id for i in theirs.items}

        expect_code(StatusCode.NOT_FOUND, lambda: carol.library_remove(theirs.items[0].id))
        expect_code(StatusCode.NOT_FOUND, lambda: carol.library_remove([mine.id, theirs.items[1].id]))
        expect_code(StatusCode.NOT_FOUND, lambda: dave.library_remove(mine.id))
        assert [i.id for i in carol.library_all_items()] == [mine.id]  # all or nothing: still there
        assert dave.library_items().item_count == 2


def test_only_an_admin_lists_deletes_backs_up_or_exports(library_daemon):
    with library_daemon.client("judy") as viewer, library_daemon.client("dave") as operator:
        viewer.library_add(media("judy-own"))
        assert viewer.library_items(owner="judy").item_count == 1  # naming oneself is fine
        for client in (viewer, operator):
            for call in (
                client.library_owners,
                lambda: client.library_delete_owner("alice"),
                client.library_backup,
                lambda: client.library_items(owner="alice"),
            ):
                expect_code(StatusCode.PERMISSION_DENIED, call)


def test_match_with_add_to_library_adds_the_top_item(library_daemon):
    with library_daemon.client("bob", timeout=MATCH_TIMEOUT) as bob:
        before = bob.library_items().version
        deadline = time.monotonic() + MATCH_TIMEOUT
        while True:
            result = bob.match(add_to_library=True)
            if result.outcome == pb.MATCH_OUTCOME_MATCH or time.monotonic() > deadline:
                break
            assert result.library.code == StatusCode.FAILED_PRECONDITION  # nothing to add
            time.sleep(0.5)
        assert result.outcome == pb.MATCH_OUTCOME_MATCH, result
        status = result.library
        assert status.code == StatusCode.OK, status
        assert len(status.item_ids) == 1 and status.version > before
        [stored] = [i for i in bob.library_all_items() if i.id == status.item_ids[0]]
        assert stored.item == result.items[0]
        assert stored.item.media_item.id == library_daemon.item_id
        assert stored.matched_at_unix_ms == result.made_at_unix_ms
        assert bob.library_items().version == status.version
        # A plain match does not touch the library (and says nothing about it).
        plain = bob.match()
        assert not plain.HasField("library")
        assert bob.library_items().version == status.version


def test_watch_resumes_after_a_disconnect_with_exactly_the_missed_changes(library_daemon):
    with library_daemon.client("erin") as writer:
        first = writer.library_add([media("e1"), media("e2")])
        writer.library_add(media("e3"))
        watcher = library_daemon.client("erin")
        stream = watcher.watch_library(from_version=0)
        backlog = [next_change(stream) for _ in range(3)]
        assert [(c.kind, c.version) for c in backlog] == [(ADDED, 1), (ADDED, 2), (CURRENT, 2)]
        assert [i.item.media_item.id for i in backlog[0].items] == ["e1", "e2"]
        assert backlog[0].item_ids == [i.id for i in first.items]
        assert backlog[2].item_count == 3
        live = writer.library_add(media("e4"))
        change = next_change(stream)
        assert (change.kind, change.version, list(change.item_ids)) == (ADDED, 3, [live.items[0].id])
        last = change.version
        watcher.close()  # the watcher disconnects (its stream is cancelled with it)

        # Meanwhile, from another connection with the same key:
        missed = [
            writer.library_add([media("e5"), media("e6")]),
            writer.library_remove([first.items[0].id, live.items[0].id]),
            writer.library_add(media("e7")),
        ]
        assert [m.version for m in missed] == [4, 5, 6]

        with library_daemon.client("erin") as again:
            with again.watch_library(from_version=last) as resumed:
                got = [next_change(resumed) for _ in range(4)]
                assert [(c.kind, c.version) for c in got] == [(ADDED, 4), (REMOVED, 5), (ADDED, 6), (CURRENT, 6)]
                assert [i.item.media_item.id for i in got[0].items] == ["e5", "e6"]
                assert list(got[1].item_ids) == [first.items[0].id, live.items[0].id]
                assert got[3].item_count == 5
                # Nothing repeated after CURRENT: the next message is the next commit.
                writer.library_remove(missed[0].items[0].id)
                after = next_change(resumed)
                assert (after.kind, after.version) == (REMOVED, 7)
            # A watch from the present has no backlog: CURRENT at once.
            with again.watch_library(from_version=7) as present:
                assert [(c.kind, c.version) for c in [next_change(present)]] == [(CURRENT, 7)]


def test_library_mirror_resumes_on_a_new_connection(library_daemon):
    with library_daemon.client("ivan") as writer:
        writer.library_add([media("i1"), media("i2")])
        mirror = LibraryMirror(library_daemon.client("ivan"))
        mirror.load()
        version = mirror.sync()
        assert set(mirror.items) == {i.id for i in writer.library_all_items()}
        changes = mirror.changes()
        m1 = writer.library_add(media("m1")).items[0].id
        try:
            kinds = []
            while m1 not in mirror.items or CURRENT not in kinds:  # CURRENT before or after m1: a race
                kinds.append(next(changes).kind)
            assert sorted(kinds) == [ADDED, CURRENT] and mirror.version == version + 1
        finally:
            changes.close()
        mirror.client.close()
        gone = writer.library_add([media("m2"), media("m3")])
        writer.library_remove(gone.items[0].id)
        with library_daemon.client("ivan") as again:
            assert mirror.sync(again) == version + 3  # the add and remove while disconnected
        assert set(mirror.items) == {i.id for i in writer.library_all_items()}
        assert len(mirror) == mirror.item_count and mirror.gaps == mirror.skipped == mirror.resyncs == 0


def test_notices_name_the_owner_hash_and_carry_no_contents(library_daemon):
    with library_daemon.subscriber([Topics.LIBRARY, Topics.HEARTBEAT], "frank") as events:
        deadline = time.monotonic() + 5  # a heartbeat: the subscription is in place
        while (e := events.recv(timeout=max(0.0, deadline - time.monotonic()))) is not None:
            if e.topic == Topics.HEARTBEAT:
                break
        else:
            pytest.fail("no heartbeat within 5 s")
        with library_daemon.client("frank") as frank:
            added = frank.library_add([media("secret-title", genre="private")])
            removed = frank.library_remove(added.items[0].id)
        notices, raw = [], []
        while len(notices) < 2:
            frames = None
            if events.socket.poll(5000):
                frames = events.socket.recv_multipart()
            assert frames is not None, f"only {len(notices)} notice(s) within 5 s"
            event = pb.EventEnvelope.FromString(frames[1])
            if event.topic == Topics.LIBRARY and event.library.owner_hash == added.owner_hash:
                notices.append(event.library)
                raw.append(frames[1])
    assert [(n.kind, n.version, n.item_count, n.changed) for n in notices] == [
        (ADDED, added.version, 1, 1),
        (REMOVED, removed.version, 0, 1),
    ]
    assert all(n.owner_hash == added.owner_hash == removed.owner_hash for n in notices)
    for notice, data in zip(notices, raw):
        assert {f.name for f, _ in notice.ListFields()} <= {"owner_hash", "version", "item_count", "kind", "changed"}
        for secret in (b"secret-title", b"Secret-Title", b"private", b"frank", added.items[0].id.encode()):
            assert secret not in data


def test_admin_lists_owners_deletes_one_exports_and_backs_up(library_daemon):
    with library_daemon.client("grace") as grace, library_daemon.client("heidi") as heidi:
        g = grace.library_add([media("g1"), media("g2")])
        h = heidi.library_add(media("h1"))
        watch = grace.watch_library(from_version=g.version)
        assert next_change(watch).kind == CURRENT
        with library_daemon.client("py-admin") as admin:
            owners = {o.name: o for o in admin.library_owners()}
            assert {"grace", "heidi"} <= set(owners)
            assert (owners["grace"].item_count, owners["grace"].version, owners["grace"].owner_hash) == (
                2,
                g.version,
                g.owner_hash,
            )
            assert owners["heidi"].item_count == 1 and owners["heidi"].allowed and owners["grace"].bytes > 0
            exported = list(admin.library_all_items(owner="heidi"))
            assert [i.id for i in exported] == [h.items[0].id] and exported[0].item == media("h1")

            cleared = admin.library_delete_owner("grace")
            assert cleared.item_count == 0 and cleared.version == g.version + 1
            assert cleared.owner_hash == g.owner_hash
            change = next_change(watch)
            assert (change.kind, change.version, change.item_count) == (CLEARED, cleared.version, 0)
            watch.close()
            assert grace.library_items().item_count == 0 and list(grace.library_all_items()) == []
            assert [i.id for i in heidi.library_all_items()] == [h.items[0].id]
            expect_code(StatusCode.NOT_FOUND, lambda: admin.library_delete_owner("nobody"))
            expect_code(StatusCode.INVALID_ARGUMENT, lambda: admin.library_delete_owner(""))
            grace.library_add(media("g3"))  # the library goes on after a reset
            assert grace.library_items().version == cleared.version + 1

            backup = admin.library_backup()
        assert os.path.isfile(backup.path), backup
        assert str(library_daemon.state_directory) in backup.path
        with open(backup.path, "rb") as f:
            data = f.read()
        assert data.startswith(b"SQLite format 3\0")
        assert len(data) == backup.bytes and hashlib.sha256(data).hexdigest() == backup.sha256
        assert backup.owners >= 2 and backup.items >= 2
