"""Subscriber and StateFollower (the late-joiner / Clone recipe) against a fake daemon."""

from __future__ import annotations

import time

import pytest
from fakes import fail, matched, unary

from earshot_client import Methods, StateFollower, StatusCode, Subscriber, Topics, pb, predict_offset


@pytest.fixture
def subscriber(publisher):
    s = Subscriber(publisher.endpoint)
    publisher.wait_subscribed(Topics.ALL)
    yield s
    s.close()


def serve_snapshots(server, publisher, **fields):
    """GetSnapshot answers as the daemon does, from the publisher's heads at call time."""
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: unary(publisher.snapshot(**fields))


def next_update(follower, kind=None, timeout=3.0):
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {kind or 'update'} within {timeout} s"
        update = follower.poll(remaining)
        if update is not None and (kind is None or update.kind == kind):
            return update


def test_subscriber_receives_events_and_drops_garbage(publisher, subscriber):
    publisher.session()
    publisher.socket.send_multipart([b"earshot.v1/session/", b"\xff\xff\xff"])
    publisher.socket.send_multipart([b"earshot.v1/session/"])
    publisher.socket.send_multipart(
        [b"earshot.v1/match/", pb.EventEnvelope(topic="earshot.v1/session/").SerializeToString()]
    )
    publisher.match(matched("ep1"))
    first = subscriber.recv(timeout=2)
    assert first.topic == Topics.SESSION and first.seq == 1 and first.epoch == publisher.epoch
    second = subscriber.recv(timeout=2)
    assert second.topic == Topics.MATCH and second.match.items[0].media_item.id == "ep1"
    assert subscriber.dropped == 3
    assert subscriber.recv(timeout=0.05) is None


def test_subscriber_filters_topics(publisher):
    with Subscriber(publisher.endpoint, topics=Topics.MATCH) as s:
        publisher.wait_subscribed([Topics.MATCH])
        publisher.session()
        publisher.match(matched("x"))
        assert s.recv(timeout=2).topic == Topics.MATCH
        assert s.receives("earshot.v1/match/") and not s.receives(Topics.SESSION)


def test_late_joiner_drops_events_before_the_snapshot_and_applies_the_rest(server, publisher, subscriber, client):
    serve_snapshots(server, publisher, state=pb.SESSION_STATE_MATCHING)
    for _ in range(3):
        publisher.session(pb.SESSION_STATE_PRERECORDING)  # already in the SUB queue, older than the snapshot
    publisher.match(matched("old"))
    time.sleep(0.1)
    follower = StateFollower(client, subscriber)

    update = next_update(follower)
    assert update.kind == "snapshot" and update.reason == "start"
    assert follower.synced
    state = update.state
    assert state.epoch == publisher.epoch
    assert state.state == pb.SESSION_STATE_MATCHING and state.state_name == "MATCHING"
    assert dict(state.session.topic_seq) == {Topics.SESSION: 3, Topics.MATCH: 1}

    publisher.session(pb.SESSION_STATE_PRERECORDING)  # seq 4: newer
    update = next_update(follower)
    assert update.kind == "session"
    assert update.event.seq == 4
    assert follower.state.state == pb.SESSION_STATE_PRERECORDING
    assert follower.stale_dropped == 4  # 3 session + 1 match before the snapshot
    assert follower.state.last_match is None

    publisher.match(matched("ep2", offset=100.0))
    update = next_update(follower)
    assert update.kind == "match"
    assert follower.state.current_item.media_item.id == "ep2"
    assert follower.resyncs == 1


def test_event_published_while_the_snapshot_is_taken_is_applied_after_it(server, publisher, subscriber, client):
    def snapshot_then_event(env):
        snapshot = publisher.snapshot(state=pb.SESSION_STATE_PRERECORDING)  # heads read first
        publisher.session(pb.SESSION_STATE_MATCHING)  # a change lands before the reply
        yield ("end", StatusCode.OK, "", snapshot)

    server.handlers[Methods.GET_SNAPSHOT] = snapshot_then_event
    follower = StateFollower(client, subscriber)
    assert next_update(follower).kind == "snapshot"
    update = next_update(follower)
    assert update.kind == "session" and update.event.seq == 1
    assert follower.state.state == pb.SESSION_STATE_MATCHING


def test_a_gap_triggers_a_new_snapshot(server, publisher, subscriber, client):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber)
    assert next_update(follower).kind == "snapshot"
    publisher.session()  # seq 1: applied
    assert next_update(follower).kind == "session"

    publisher.session(seq=4)  # 2 and 3 lost
    update = next_update(follower)
    assert update.kind == "snapshot"
    assert "gap on earshot.v1/session/" in update.reason and "expected seq 2, got 4" in update.reason
    assert server.calls_of(Methods.GET_SNAPSHOT) == 2
    assert follower.gaps == 1
    assert dict(follower.state.session.topic_seq)[Topics.SESSION] == 4

    publisher.session(pb.SESSION_STATE_IDLE)  # seq 5 follows the new snapshot
    update = next_update(follower)
    assert update.kind == "session" and update.event.seq == 5
    assert follower.resyncs == 2


def test_an_epoch_change_triggers_a_new_snapshot_and_old_epoch_events_are_dropped(
    server, publisher, subscriber, client
):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber)
    assert next_update(follower).kind == "snapshot"
    old_epoch = publisher.epoch

    # The daemon restarts: new epoch, sequences from 1.
    publisher.epoch = 0xE2
    publisher.heads.clear()
    publisher.session(pb.SESSION_STATE_MATCHING)
    update = next_update(follower)
    assert update.kind == "snapshot" and "epoch changed" in update.reason
    assert follower.state.epoch == 0xE2
    assert follower.state.state == pb.SESSION_STATE_MATCHING

    # A straggler of the old epoch is dropped without another snapshot.
    publisher.publish(Topics.SESSION, epoch=old_epoch, seq=99, session=pb.SessionSnapshot(state=pb.SESSION_STATE_IDLE))
    publisher.session(pb.SESSION_STATE_PRERECORDING)
    update = next_update(follower)
    assert update.kind == "session" and update.event.epoch == 0xE2
    assert follower.state.state == pb.SESSION_STATE_PRERECORDING
    assert server.calls_of(Methods.GET_SNAPSHOT) == 2


def test_an_event_of_a_stale_epoch_is_recognised_after_one_snapshot(server, publisher, subscriber, client):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber, min_resync_interval=0)
    assert next_update(follower).kind == "snapshot"
    publisher.publish(Topics.SESSION, epoch=0xDEAD, seq=1, session=pb.SessionSnapshot())
    update = next_update(follower)
    assert update.kind == "snapshot" and "epoch changed" in update.reason
    assert follower.state.epoch == publisher.epoch  # the daemon did not restart
    publisher.publish(Topics.SESSION, epoch=0xDEAD, seq=2, session=pb.SessionSnapshot())
    publisher.session()
    assert next_update(follower).kind == "session"
    assert server.calls_of(Methods.GET_SNAPSHOT) == 2


def test_heartbeat_timeout_triggers_a_new_snapshot(server, publisher, subscriber, client):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber, heartbeat_timeout=0.3, min_resync_interval=0)
    assert next_update(follower).kind == "snapshot"
    beat = time.monotonic()
    publisher.heartbeat()
    assert follower.poll(0.2) is None  # a heartbeat changes nothing visible
    update = next_update(follower, timeout=2)
    assert update.kind == "snapshot" and "no heartbeat" in update.reason
    assert 0.3 <= time.monotonic() - beat < 1.5


def test_a_heartbeat_body_on_another_topic_is_not_a_heartbeat(server, publisher, subscriber, client):
    # The daemon's load-test events carry Heartbeat bodies on earshot.v1/loadtest/.
    serve_snapshots(server, publisher)
    subscriber.subscribe("earshot.v1/loadtest/")
    # A subscription reaches the publisher a moment later; an event sent before would be lost
    # and seen as a gap, which is another reason to resync.
    publisher.wait_subscribed(["earshot.v1/loadtest/"])
    follower = StateFollower(client, subscriber, heartbeat_timeout=0.3, min_resync_interval=0)
    assert next_update(follower).kind == "snapshot"
    beat = time.monotonic()
    publisher.heartbeat()
    deadline = time.monotonic() + 1.0
    update = None
    while update is None and time.monotonic() < deadline:
        publisher.publish("earshot.v1/loadtest/", heartbeat=pb.Heartbeat())
        update = follower.poll(0.05)
    assert update is not None and update.kind == "snapshot" and "no heartbeat" in update.reason
    assert 0.3 <= time.monotonic() - beat < 1.0


def test_heartbeat_heads_reveal_a_lost_tail(server, publisher, subscriber, client):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber, min_resync_interval=0)
    assert next_update(follower).kind == "snapshot"
    publisher.session()
    assert next_update(follower).kind == "session"
    # Match events 1..2 were published but lost (e.g. dropped at the high-water mark).
    publisher.heads[Topics.MATCH] = 2
    publisher.heartbeat()  # may be an event still on its way: not yet a loss
    assert follower.poll(0.2) is None
    publisher.heartbeat()  # still behind one heartbeat later: lost
    update = next_update(follower)
    assert update.kind == "snapshot" and "heartbeat" in update.reason and Topics.MATCH in update.reason
    assert dict(follower.state.session.topic_seq)[Topics.MATCH] == 2


def test_heartbeat_heads_ahead_only_briefly_are_no_loss(server, publisher, subscriber, client):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber)
    assert next_update(follower).kind == "snapshot"
    publisher.heartbeat(heads={Topics.SESSION: 1})  # the event is announced before it arrives
    publisher.session()
    assert next_update(follower).kind == "session"
    publisher.heartbeat()
    assert follower.poll(0.2) is None
    assert follower.resyncs == 1


def test_snapshot_failure_is_reported_and_retried(server, publisher, subscriber, client):
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: fail(StatusCode.UNAVAILABLE, "shutting down")
    follower = StateFollower(client, subscriber, retry_interval=0.1)
    update = next_update(follower)
    assert update.kind == "error" and update.error.code == StatusCode.UNAVAILABLE
    assert update.state is None and not follower.synced
    serve_snapshots(server, publisher)
    update = next_update(follower)
    assert update.kind == "snapshot" and follower.synced


def test_current_item_follows_matches_and_session_events(server, publisher, subscriber, client):
    taken = int(time.time() * 1000)
    current = matched("ep1", offset=20.0, time_skew=0.04).items[0]
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: unary(
        pb.SessionSnapshot(epoch=publisher.epoch, current_match=current, taken_at_unix_ms=taken)
    )
    follower = StateFollower(client, subscriber)
    state = next_update(follower).state
    assert state.current_item.media_item.id == "ep1"
    assert state.offset_now(taken + 10_000) == pytest.approx(20.0 + 10 * 1.04)

    publisher.match(matched("ep2", offset=5.0, made_at_ms=taken))
    assert next_update(follower).state.current_item.media_item.id == "ep2"
    publisher.match(pb.MatchResult(outcome=pb.MATCH_OUTCOME_ERROR))
    assert next_update(follower).state.current_item.media_item.id == "ep2"  # an error loses nothing
    publisher.match(pb.MatchResult(outcome=pb.MATCH_OUTCOME_NO_MATCH))
    state = next_update(follower).state
    assert state.current_item is None and state.offset_now() is None
    assert state.last_match.outcome == pb.MATCH_OUTCOME_NO_MATCH

    publisher.publish(
        Topics.SESSION,
        session=pb.SessionSnapshot(state=pb.SESSION_STATE_MATCHING, current_match=current, taken_at_unix_ms=taken),
    )
    state = next_update(follower).state
    assert state.current_item.media_item.id == "ep1" and state.current_item_at_ms == taken

    publisher.publish(Topics.HEALTH, health=pb.HealthEvent(status=pb.SERVING_STATUS_NOT_SERVING))
    assert next_update(follower).state.health == pb.SERVING_STATUS_NOT_SERVING
    publisher.publish(
        Topics.CATALOG,
        catalog=pb.CatalogEvent(kind=pb.CatalogEvent.KIND_LOADED, catalog=pb.CatalogSummary(name="demo")),
    )
    assert list(next_update(follower).state.catalogs) == ["demo"]
    # Uploads: UPLOADED carries no catalog; INSTALLED, REPLACED, DISABLED… are the summary now.
    publisher.publish(
        Topics.CATALOG,
        catalog=pb.CatalogEvent(kind=pb.CatalogEvent.KIND_UPLOADED, upload=pb.UploadStatus(name="news")),
    )
    assert list(next_update(follower).state.catalogs) == ["demo"]
    for kind, version in ((pb.CatalogEvent.KIND_INSTALLED, 1), (pb.CatalogEvent.KIND_REPLACED, 2)):
        publisher.publish(
            Topics.CATALOG, catalog=pb.CatalogEvent(kind=kind, catalog=pb.CatalogSummary(name="news", version=version))
        )
        assert next_update(follower).state.catalogs["news"].version == version
    publisher.publish(
        Topics.CATALOG,
        catalog=pb.CatalogEvent(
            kind=pb.CatalogEvent.KIND_DISABLED,
            catalog=pb.CatalogSummary(name="news", version=2, state=pb.CATALOG_STATE_DISABLED),
        ),
    )
    assert next_update(follower).state.catalogs["news"].state == pb.CATALOG_STATE_DISABLED
    publisher.publish(
        Topics.CATALOG,
        catalog=pb.CatalogEvent(kind=pb.CatalogEvent.KIND_REMOVED, catalog=pb.CatalogSummary(name="demo")),
    )
    assert list(next_update(follower).state.catalogs) == ["news"]


def test_library_notices_are_kept_per_owner_the_latest_last(server, publisher, subscriber, client):
    serve_snapshots(server, publisher)
    follower = StateFollower(client, subscriber)
    assert next_update(follower).kind == "snapshot" and follower.state.last_library_notice is None
    added = pb.LibraryChange.KIND_ADDED
    for owner, version, count in (("aaaa", 1, 2), ("bbbb", 1, 1), ("aaaa", 2, 1)):
        kind = added if version == 1 else pb.LibraryChange.KIND_REMOVED
        publisher.publish(
            Topics.LIBRARY,
            library=pb.LibraryNotice(owner_hash=owner, version=version, item_count=count, kind=kind, changed=1),
        )
        update = next_update(follower)
        assert update.kind == "library" and update.event.library.owner_hash == owner
    state = follower.state
    assert list(state.library) == ["bbbb", "aaaa"]  # the owner that changed last, last
    assert state.last_library_notice.version == 2 and state.last_library_notice.item_count == 1
    assert follower.gaps == 0


def test_predict_offset():
    item = pb.MatchedMediaItem(predicted_current_match_offset=10.0, time_skew=-0.5)
    assert predict_offset(item, 1_000, 3_000) == pytest.approx(11.0)
    assert predict_offset(item, 0, 3_000) == 10.0


def test_updates_ticks_and_open_closes_what_it_made(server, publisher):
    serve_snapshots(server, publisher)
    follower = StateFollower.open(server.endpoint, publisher.endpoint, timeout=2)
    with follower:
        publisher.wait_subscribed(Topics.ALL)
        ticks = follower.updates(tick=0.05)
        assert next(ticks).kind == "snapshot"
        assert next(ticks) is None  # nothing happened for a tick
    assert follower.client.closed and follower.subscriber.closed
