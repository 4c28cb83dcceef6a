"""The Library methods' requests and LibraryMirror against a fake library (tests/fakes.py)."""

from __future__ import annotations

import json

import pytest
from fakes import FakeLibrary, matched, unary

from earshot_client import Client, LibraryMirror, Methods, RawJson, RpcError, StatusCode, pb

CALL = pb.RequestEnvelope.CONTROL_CALL
ADDED, REMOVED, CLEARED = pb.LibraryChange.KIND_ADDED, pb.LibraryChange.KIND_REMOVED, pb.LibraryChange.KIND_CLEARED
RESYNC, CURRENT = pb.LibraryChange.KIND_RESYNC, pb.LibraryChange.KIND_CURRENT


def requests_of(server, method, request_type):
    return [request_type.FromString(e.payload) for e in server.envelopes(CALL, method)]


@pytest.fixture
def library(server):
    return FakeLibrary(server)


def test_library_add_accepts_items_pairs_new_items_and_match_results(server, client, library):
    top = matched("ep1").items[0]
    result = matched("ep2", made_at_ms=1_700_000_000_000)
    reply = client.library_add(
        [top, (top, 1_600_000_000_000), pb.NewLibraryItem(item=top, matched_at_unix_ms=5), result]
    )
    assert reply.version == 1 and reply.item_count == 4 and len(reply.items) == 4
    assert reply.owner_hash == FakeLibrary.OWNER_HASH
    client.library_add(top)  # one item alone
    client.library_add((top, 7))  # one pair alone
    first, second, third = requests_of(server, Methods.LIBRARY_ADD, pb.AddLibraryItemsRequest)
    assert [n.matched_at_unix_ms for n in first.items] == [0, 1_600_000_000_000, 5, 1_700_000_000_000]
    assert first.items[3].item.media_item.id == "ep2"
    assert len(second.items) == 1 and second.items[0].item == top
    assert len(third.items) == 1 and third.items[0].matched_at_unix_ms == 7
    with pytest.raises(TypeError):
        client.library_add(["not an item"])
    with pytest.raises(ValueError):
        client.library_add(pb.MatchResult(outcome=pb.MATCH_OUTCOME_NO_MATCH))


def test_library_items_sends_filters_and_property_values_as_json(server, client):
    server.handlers[Methods.LIBRARY_ITEMS] = lambda env: unary(pb.LibraryItemsResponse(version=3))
    assert client.library_items().version == 3
    client.library_items(
        7, "tok", catalog="news", matched_from_ms=10, matched_before_ms=20, property=("genre", "jazz"), owner="tv"
    )
    client.library_items(property=("season", 3))
    client.library_items(property=("live", True))
    client.library_items(property=("tags", ["a", "b"]))
    client.library_items(property=("season", RawJson('"3"')))
    plain, full, number, boolean, array, raw = requests_of(server, Methods.LIBRARY_ITEMS, pb.LibraryItemsRequest)
    assert plain == pb.LibraryItemsRequest(page_size=50)
    assert full == pb.LibraryItemsRequest(
        page_size=7,
        page_token="tok",
        catalog="news",
        matched_from_unix_ms=10,
        matched_before_unix_ms=20,
        property_key="genre",
        property_value_json='"jazz"',
        owner="tv",
    )
    assert (number.property_key, number.property_value_json) == ("season", "3")
    assert boolean.property_value_json == "true"
    assert json.loads(array.property_value_json) == ["a", "b"]
    assert raw.property_value_json == '"3"'
    for bad in (("genre", RawJson("jazz")), ("", 1), ("x", object()), "genre"):
        with pytest.raises(ValueError):
            client.library_items(property=bad)


def test_remove_watch_and_admin_methods_send_their_requests(server, client):
    for method in (Methods.LIBRARY_REMOVE, Methods.LIBRARY_DELETE_OWNER):
        server.handlers[method] = lambda env: unary(pb.LibraryWriteResponse(version=9))
    server.handlers[Methods.LIBRARY_LIST_OWNERS] = lambda env: unary(
        pb.ListLibraryOwnersResponse(owners=[pb.LibraryOwner(name="tv", item_count=2, allowed=True)])
    )
    server.handlers[Methods.LIBRARY_BACKUP] = lambda env: unary(pb.LibraryBackupResponse(path="/b.db", bytes=4))
    server.handlers[Methods.WATCH_LIBRARY] = lambda env: iter(
        [("message", pb.LibraryChange(kind=CURRENT, version=4))]
    )

    assert client.library_remove("a").version == 9
    client.library_remove(["a", "b", pb.LibraryItem(id="c")])
    assert [o.name for o in client.library_owners()] == ["tv"]
    assert client.library_delete_owner("tv").version == 9
    assert client.library_backup().path == "/b.db"
    with client.watch_library(from_version=4) as stream:
        assert next(stream).kind == CURRENT

    assert [r.ids for r in requests_of(server, Methods.LIBRARY_REMOVE, pb.RemoveLibraryItemsRequest)] == [
        ["a"],
        ["a", "b", "c"],
    ]
    assert requests_of(server, Methods.LIBRARY_DELETE_OWNER, pb.DeleteLibraryOwnerRequest)[0].owner == "tv"
    assert requests_of(server, Methods.WATCH_LIBRARY, pb.WatchLibraryRequest)[0].from_version == 4
    assert server.calls_of(Methods.LIBRARY_LIST_OWNERS) == server.calls_of(Methods.LIBRARY_BACKUP) == 1


def test_match_and_stream_matches_ask_to_add_only_when_told(server, client):
    result = matched("ep1")
    result.library.CopyFrom(pb.LibraryAddStatus(code=0, item_ids=["ab"], version=1))
    server.handlers[Methods.MATCH] = lambda env: unary(result)
    server.handlers[Methods.STREAM_MATCHES] = lambda env: iter([("message", result)])
    client.match()
    assert client.match(add_to_library=True).library.item_ids == ["ab"]
    for options in ({}, {"add_to_library": True}):
        with client.stream_matches(**options) as stream:
            next(stream)
    assert [r.add_to_library for r in requests_of(server, Methods.MATCH, pb.MatchRequest)] == [False, True]
    assert [r.add_to_library for r in requests_of(server, Methods.STREAM_MATCHES, pb.StreamMatchesRequest)] == [
        False,
        True,
    ]
    # Without the option the request is as before (empty): older daemons see no difference.
    assert server.envelopes(CALL, Methods.MATCH)[0].payload == b""


def test_library_all_items_pages_through_everything_newest_first(server, client, library):
    for n in range(5):
        library.add(pb.NewLibraryItem(item=matched(f"ep{n}").items[0], matched_at_unix_ms=1_000 + n))
    pages = []
    items = list(client.library_all_items(page_size=2, pages=pages))
    assert [i.item.media_item.id for i in items] == ["ep4", "ep3", "ep2", "ep1", "ep0"]
    assert [len(p.items) for p in pages] == [2, 2, 1] and pages[-1].next_page_token == ""
    tokens = [r.page_token for r in requests_of(server, Methods.LIBRARY_ITEMS, pb.LibraryItemsRequest)]
    assert tokens[0] == "" and all(tokens[1:]) and len(tokens) == 3


def change(kind, version, ids=(), items=(), count=0):
    return pb.LibraryChange(kind=kind, version=version, item_ids=list(ids), items=list(items), item_count=count)


def test_mirror_applies_changes_in_order_and_skips_repeats():
    a, b, c = (pb.LibraryItem(id=i) for i in "abc")
    mirror = LibraryMirror()
    assert mirror.apply(change(ADDED, 1, "ab", [a, b], 2))
    assert mirror.apply(change(ADDED, 2, "c", [], 2))  # c already removed again: no item sent
    assert mirror.apply(change(REMOVED, 3, "a", count=1))
    assert not mirror.apply(change(ADDED, 2, "c", [c]))  # a repeat: skipped
    assert mirror.apply(change(CURRENT, 3, count=1))
    assert set(mirror.items) == {"b"} and mirror.version == 3 and mirror.current and mirror.item_count == 1
    assert mirror.apply(change(CLEARED, 4))
    assert len(mirror) == 0 and mirror.version == 4
    assert (mirror.applied, mirror.skipped, mirror.gaps, mirror.reloads) == (4, 1, 0, 0)
    with pytest.raises(ValueError):  # a gap needs a reload, which needs a client
        mirror.apply(change(ADDED, 9, "a", [a]))


def test_mirror_follows_backlog_current_then_live_changes(server, client, library):
    first = library.add("one", "two")
    library.remove(first.items[0].id)
    mirror = LibraryMirror(client)
    changes = mirror.changes()
    assert [(c.kind, c.version) for c in (next(changes), next(changes), next(changes))] == [
        (ADDED, 1),
        (REMOVED, 2),
        (CURRENT, 2),
    ]
    assert mirror.current and set(mirror.items) == library.ids() == {first.items[1].id}
    library.add("three")  # from elsewhere
    live = next(changes)
    assert live.kind == ADDED and live.version == 3 and mirror.version == 3
    assert set(mirror.items) == library.ids() and len(mirror) == mirror.item_count == 2
    changes.close()
    assert server.wait_for(lambda: server.cancelled != [])


def test_mirror_resumes_after_a_disconnect_without_missing_or_repeating(server, client, library):
    library.add("one")
    mirror = LibraryMirror(client)
    assert mirror.sync() == 1
    library.drop_watch_after = 2  # the daemon goes away after the next live change
    kinds = []
    with pytest.raises(RpcError) as lost:
        for c in mirror.changes():
            kinds.append(c.kind)
            if c.kind == CURRENT:
                library.add("two")
    assert lost.value.code == StatusCode.UNAVAILABLE and kinds == [CURRENT, ADDED] and mirror.version == 2
    # Changes while disconnected; the watch resumes (on another client) from the last version.
    three = library.add("three", "four")
    library.remove(three.items[0].id)
    library.clear()
    library.add("five")
    with Client(server.endpoint, timeout=3.0) as other:
        seen = []
        for c in mirror.changes(other):
            seen.append((c.kind, c.version))
            if c.kind == CURRENT:
                break
    assert library.watches == [0, 1, 2]
    assert seen == [(ADDED, 3), (REMOVED, 4), (CLEARED, 5), (ADDED, 6), (CURRENT, 6)]
    assert set(mirror.items) == library.ids() and mirror.skipped == 0 and mirror.gaps == 0 and mirror.reloads == 0


def test_mirror_reloads_on_resync_and_goes_on_from_its_version(server, client, library):
    mirror = LibraryMirror(client, page_size=2)
    library.add("one")
    mirror.sync()
    added = library.add("two", "three", "four")
    library.remove(added.items[0].id)
    library.trim(1)  # the log no longer reaches back to the mirror's version 1
    seen = []
    for c in mirror.changes():
        seen.append((c.kind, c.version))
        if c.kind == CURRENT:
            break
    assert seen == [(RESYNC, 3), (CURRENT, 3)]
    assert mirror.resyncs == 1 and mirror.reloads == 1 and mirror.version == 3
    assert set(mirror.items) == library.ids() and len(mirror) == 3
    assert server.calls_of(Methods.LIBRARY_ITEMS) == 2  # 3 items, 2 a page


def test_mirror_load_then_watch_replays_changes_made_between_pages(server, client, library):
    for n in range(4):
        library.add(pb.NewLibraryItem(item=matched(f"ep{n}").items[0], matched_at_unix_ms=1_000 + n))
    serve_page = server.handlers[Methods.LIBRARY_ITEMS]
    pages = []

    def changing(env):
        pages.append(env)
        reply = list(serve_page(env))
        if len(pages) == 1:  # between the first page and the second, the library changes
            ids = [i.id for i in reply[0][3].items]
            library.remove(ids[0])  # seen on page 1, then removed
            library.add(pb.NewLibraryItem(item=matched("new").items[0], matched_at_unix_ms=500))  # lands on page 2
        yield from reply

    server.handlers[Methods.LIBRARY_ITEMS] = changing
    mirror = LibraryMirror(client, page_size=2)
    assert mirror.load() == 4  # the first page's version
    assert len(mirror) == 5  # includes the removed one and the new one: the pages span versions 4…6
    mirror.sync()
    assert mirror.version == 6 and set(mirror.items) == library.ids() and len(mirror) == 4
    assert [i.item.media_item.id for i in mirror.newest_first()][:1] == ["ep2"]


def test_mirror_reloads_when_a_change_is_missing(client, library):
    library.add("one")
    mirror = LibraryMirror(client)
    mirror.load()
    library.add("two")
    third = library.add("three")
    assert mirror.apply(pb.LibraryChange(kind=ADDED, version=3, item_ids=[third.items[0].id], items=third.items))
    assert mirror.gaps == 1 and mirror.version == 3 and set(mirror.items) == library.ids()
