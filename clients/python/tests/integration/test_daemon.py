"""The Python client against the real earshotd (see conftest.py for the environment it needs).

After every test an autouse fixture checks that the daemon still answers a well-behaved client,
so the abusive tests (garbage, oversized, disconnect mid-stream) assert that as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import wave

import pytest
import zmq

from earshot_client import SIGNATURE, Client, Methods, RpcError, StateFollower, StatusCode, Subscriber, Topics, pb

pytestmark = pytest.mark.integration

MATCH_TIMEOUT = 40.0  # the daemon may need a loop of the file and a query's worth of audio
DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dashboard.py")


def audio_duration(path: str):
    try:
        with wave.open(path) as w:
            return w.getnframes() / w.getframerate()
    except Exception:
        return None


def raw_dealer(endpoint: str) -> zmq.Socket:
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    return s


def test_health_serving_and_stats(client):
    assert client.health() == pb.SERVING_STATUS_SERVING
    for service in ("earshot.v1.Recognizer", "earshot.v1.Session", "earshot.v1.Catalogs", "earshot.v1.Health"):
        assert client.health(service) == pb.SERVING_STATUS_SERVING
    with pytest.raises(RpcError) as info:
        client.health("earshot.v1.NoSuchService")
    assert info.value.code == StatusCode.NOT_FOUND
    stats = client.stats()
    assert stats.version and stats.uptime_ms >= 0
    assert len(stats.counters) > 0
    assert client.ping() < 1.0


def test_catalogs(client, earshotd):
    catalogs = client.catalogs()
    assert [c.name for c in catalogs] == [earshotd.catalog]
    assert catalogs[0].active and catalogs[0].reference_count >= 1
    description = client.describe_catalog(earshotd.catalog)
    assert description.summary.name == earshotd.catalog
    ids = [item.id for reference in description.references for item in reference.media_items]
    assert earshotd.item_id in ids, f"EARSHOT_TEST_ITEM {earshotd.item_id!r} is not in the catalog ({ids})"
    with pytest.raises(RpcError) as info:
        client.describe_catalog("no-such-catalog")
    assert info.value.code == StatusCode.NOT_FOUND


def test_prepare_then_match_finds_the_playing_item(client, earshotd):
    prepared = client.prepare()
    assert prepared.state in (pb.SESSION_STATE_PRERECORDING, pb.SESSION_STATE_MATCHING)
    deadline = time.monotonic() + MATCH_TIMEOUT
    while True:
        result = client.match(timeout=MATCH_TIMEOUT)
        if result.outcome == pb.MATCH_OUTCOME_MATCH or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # e.g. the window held the file's loop point: ask again
    assert result.outcome == pb.MATCH_OUTCOME_MATCH, result
    best = result.items[0]
    assert best.media_item.id == earshotd.item_id
    assert best.catalog == earshotd.catalog
    assert 0 < best.confidence <= 1
    assert result.made_at_unix_ms > 0 and abs(result.made_at_unix_ms / 1000 - time.time()) < 60
    duration = audio_duration(earshotd.audio)
    if duration is not None:
        assert -1 <= best.predicted_current_match_offset <= duration + 2


def test_stream_matches_yields_a_match_and_close_cancels(client, earshotd):
    start = time.monotonic()
    with client.stream_matches(include_repeats=True) as stream:
        for result in stream:
            if result.outcome == pb.MATCH_OUTCOME_MATCH:
                assert result.items[0].media_item.id == earshotd.item_id
                break
            assert time.monotonic() - start < MATCH_TIMEOUT, "no match from the stream in time"
    assert stream.code == StatusCode.CANCELLED
    # The same client goes on working after its stream was cancelled.
    assert client.health() == pb.SERVING_STATUS_SERVING


def test_stream_deadline(client):
    stream = client.stream_matches(timeout=1.0)
    start = time.monotonic()
    with pytest.raises(RpcError) as info:
        for _ in stream:
            pass
    assert info.value.code == StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - start < 5


def test_snapshot_and_events_are_consistent(client, earshotd):
    raw = Subscriber(earshotd.events)
    follower = StateFollower(client, Subscriber(earshotd.events))
    try:
        time.sleep(0.3)  # let both subscriptions reach the daemon
        update = follower.poll(10)
        assert update is not None and update.kind == "snapshot", update
        snapshot = update.state.session
        assert snapshot.epoch != 0
        assert abs(snapshot.taken_at_unix_ms / 1000 - time.time()) < 10
        assert snapshot.state in (pb.SESSION_STATE_PRERECORDING, pb.SESSION_STATE_MATCHING)
        assert snapshot.capture.source.startswith("file:")

        # The follower reaches the playing item (from the snapshot or a match event) and sees
        # heartbeats, without losing anything on the way.
        deadline = time.monotonic() + MATCH_TIMEOUT
        while time.monotonic() < deadline:
            follower.poll(0.5)
            state = follower.state
            if state.current_item is not None and state.current_item.media_item.id == earshotd.item_id:
                break
        state = follower.state
        assert state.current_item is not None and state.current_item.media_item.id == earshotd.item_id
        offset = state.offset_now()
        duration = audio_duration(earshotd.audio)
        if duration is not None:
            assert -1 <= offset <= duration + 5
        end = time.monotonic() + 2.5  # at least two heartbeats
        while time.monotonic() < end:
            follower.poll(end - time.monotonic())
        assert follower.synced
        assert follower.resyncs == 1 and follower.gaps == 0, (follower.resyncs, follower.gaps)
        assert follower.state.epoch == snapshot.epoch

        # Every event on the wire: one epoch, per-topic seq increasing by 1, heartbeat heads
        # never behind what was delivered.
        events = []
        while True:
            event = raw.recv(timeout=0)
            if event is None:
                break
            events.append(event)
        assert any(e.topic == Topics.HEARTBEAT for e in events), "no heartbeat in several seconds"
        assert {e.epoch for e in events} == {snapshot.epoch}
        last = {}
        global_seq = 0
        for e in events:
            if e.topic in last:
                assert e.seq == last[e.topic] + 1, f"{e.topic}: seq {e.seq} after {last[e.topic]}"
            last[e.topic] = e.seq
            assert e.global_seq > global_seq
            global_seq = e.global_seq
            if e.topic == Topics.HEARTBEAT:
                for topic, head in e.heartbeat.heads.items():
                    if topic in last and topic != Topics.HEARTBEAT:
                        assert head >= last[topic]
        assert raw.dropped == 0
    finally:
        raw.close()
        follower.subscriber.close()


def test_unknown_method_is_unimplemented(client):
    for method in ("/earshot.v1.Nope/Nothing", "/earshot.v1.Recognizer/Nothing"):
        with pytest.raises(RpcError) as info:
            client.call(method, pb.GetSnapshotRequest(), pb.SessionSnapshot)
        assert info.value.code == StatusCode.UNIMPLEMENTED, method


def test_undecodable_payload_is_invalid_argument(client):
    with pytest.raises(RpcError) as info:
        client.call(Methods.DESCRIBE_CATALOG, b"\xff\xff\xff\xff", pb.CatalogDescription)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    with pytest.raises(RpcError) as info:
        client.match_signature(b"this is not an earsig file")
    assert info.value.code == StatusCode.INVALID_ARGUMENT


def test_garbage_frames_do_not_stop_the_daemon(earshotd):
    valid = pb.RequestEnvelope(request_id=1, method=Methods.HEALTH_CHECK, payload=b"").SerializeToString()
    garbage = [
        [b"garbage"],
        [b""],
        [SIGNATURE],
        [SIGNATURE, b"\xff\xff\xff\xff\xff"],
        [SIGNATURE, b"\x0a\xff\xff\xff\xff\x0f"],
        [SIGNATURE, valid, b"extra frame"],
        [b"EARSHOT/9", valid],
        [b"", SIGNATURE, valid],
        [SIGNATURE, pb.RequestEnvelope(request_id=0, method=Methods.HEALTH_CHECK).SerializeToString()],
        [SIGNATURE, pb.RequestEnvelope(request_id=2, method="x" * 1000).SerializeToString()],
        [SIGNATURE, pb.RequestEnvelope(request_id=3, control=7).SerializeToString()],
        [os.urandom(64), os.urandom(256)],
    ]
    s = raw_dealer(earshotd.rpc)
    try:
        for frames in garbage:
            s.send_multipart(frames)
        time.sleep(0.5)
    finally:
        s.close()
    with Client(earshotd.rpc, timeout=5) as c:
        assert c.health() == pb.SERVING_STATUS_SERVING
        assert c.ping() < 1


def test_oversized_message_does_not_stop_the_daemon(earshotd):
    s = raw_dealer(earshotd.rpc)
    try:
        big = pb.RequestEnvelope(request_id=1, method=Methods.MATCH_SIGNATURE, payload=b"\0" * (5 << 20))
        s.send_multipart([SIGNATURE, big.SerializeToString()])
        time.sleep(0.5)
    finally:
        s.close()
    with Client(earshotd.rpc, timeout=5) as c:
        assert c.health() == pb.SERVING_STATUS_SERVING


def test_client_that_disconnects_mid_stream(earshotd):
    s = raw_dealer(earshotd.rpc)
    request = pb.RequestEnvelope(
        request_id=1,
        method=Methods.STREAM_MATCHES,
        timeout_ms=60_000,
        payload=pb.StreamMatchesRequest(include_repeats=True).SerializeToString(),
    )
    s.send_multipart([SIGNATURE, request.SerializeToString()])
    time.sleep(1.5)
    s.close()  # gone without a CANCEL
    time.sleep(0.5)
    with Client(earshotd.rpc, timeout=5) as c:
        assert c.health() == pb.SERVING_STATUS_SERVING
        with c.stream_matches(include_repeats=True, timeout=MATCH_TIMEOUT) as stream:
            assert next(stream).outcome in (pb.MATCH_OUTCOME_MATCH, pb.MATCH_OUTCOME_NO_MATCH, pb.MATCH_OUTCOME_ERROR)


def test_dashboard_once(earshotd):
    result = subprocess.run(
        [sys.executable, DASHBOARD, "--once", "--server", earshotd.rpc, "--events", earshotd.events],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.split()[0] in ("PRERECORDING", "MATCHING", "IDLE"), line
    assert "\n" not in line


def test_cues_set_stream_and_clear(client, earshotd):
    """The controller sets cues on the playing reference; StreamCues starts with the state, then
    fires them in timeline order as the audio plays; the second-screen example shows them;
    clear_cues goes back to the catalog's (none)."""
    from pathlib import Path

    schedule = client.cue_schedule(media_item_id=earshotd.item_id)
    assert schedule.source == pb.CueSchedule.SOURCE_CATALOG and len(schedule.cues) == 0
    length = schedule.reference_duration
    cues = [pb.Cue(id=f"c{i}", cue_class="com.example.card", start=float(s)) for i, s in enumerate(range(1, int(length), 2))]
    bad = cues + [pb.Cue(id="late", start=length + 10)]
    with pytest.raises(RpcError) as refused:
        client.set_cues(bad, media_item_id=earshotd.item_id)
    assert refused.value.code == StatusCode.INVALID_ARGUMENT
    set_ = client.set_cues(cues, media_item_id=earshotd.item_id)
    assert set_.source == pb.CueSchedule.SOURCE_CONTROLLER and [c.id for c in set_.cues] == [c.id for c in cues]

    started = []
    segment = 0
    with client.stream_cues(timeout=30) as stream:
        first = next(stream)
        assert first.kind == pb.CueEvent.KIND_STATE
        deadline = time.monotonic() + 20
        for event in stream:
            if event.kind == pb.CueEvent.KIND_SEEK:  # the test audio loops: a new pass
                segment += 1
            if event.kind == pb.CueEvent.KIND_STARTED:
                started.append((event.cue.start, time.monotonic(), event.lateness_seconds, segment))
            if len(started) >= 4 or time.monotonic() > deadline:
                break
    assert len(started) >= 4, started
    # In timeline order, and as far apart in time as on the timeline (2 s).
    # In timeline order within each pass of the looping audio.
    for k in {seg for *_, seg in started}:
        starts = [s for s, _, _, seg in started if seg == k]
        assert starts == sorted(starts), started
    # Cues started on time (not joined late) are as far apart in time as on the timeline.
    on_time = [(s, t, seg) for s, t, late, seg in started if late < 0.05]
    for (a, ta, ka), (b, tb, kb) in zip(on_time, on_time[1:]):
        if ka == kb and b - a == 2.0:
            assert abs((tb - ta) - 2.0) < 0.3
    assert client.current_cues().phase in (pb.CueState.PHASE_FOLLOWING, pb.CueState.PHASE_HELD)

    example = Path(__file__).resolve().parents[2] / "examples" / "second_screen.py"
    shown = subprocess.run(
        [sys.executable, str(example), "--server", earshotd.rpc, "--duration", "6"],
        capture_output=True, text=True, timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    assert "joined:" in shown.stdout and "show c" in shown.stdout, shown.stdout

    cleared = client.clear_cues(media_item_id=earshotd.item_id)
    assert cleared.source == pb.CueSchedule.SOURCE_CATALOG and len(cleared.cues) == 0
