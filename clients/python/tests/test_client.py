"""Client against the in-test fake server: unary calls, streams, errors, deadlines, PING."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import zmq
from fakes import fail, matched, silence, unary

from earshot_client import SIGNATURE, Client, Methods, RpcError, StatusCode, pb

CALL = pb.RequestEnvelope.CONTROL_CALL
CANCEL = pb.RequestEnvelope.CONTROL_CANCEL
PING = pb.RequestEnvelope.CONTROL_PING


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unary_call_sends_the_envelope_and_returns_the_result(server, client):
    server.handlers[Methods.MATCH] = lambda env: unary(matched("ep2", offset=42.5))
    result = client.match(timeout=2.5)
    assert result.outcome == pb.MATCH_OUTCOME_MATCH
    assert result.items[0].media_item.id == "ep2"
    assert result.items[0].predicted_current_match_offset == 42.5

    [received] = [r for r in server.received if r.envelope.control == CALL]
    assert received.frames[0] == SIGNATURE == b"EARSHOT/1"
    envelope = received.envelope
    assert envelope.request_id == 1
    assert envelope.method == "/earshot.v1.Recognizer/Match"
    assert 2000 < envelope.timeout_ms <= 2500
    assert pb.MatchRequest.FromString(envelope.payload) == pb.MatchRequest()


def test_request_ids_increase_and_every_method_has_its_path(server, client):
    server.handlers[Methods.PREPARE] = lambda env: unary(pb.PrepareResponse(state=pb.SESSION_STATE_PRERECORDING))
    server.handlers[Methods.CANCEL] = lambda env: unary(pb.CancelResponse(state=pb.SESSION_STATE_IDLE))
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: unary(
        pb.SessionSnapshot(state=pb.SESSION_STATE_MATCHING, epoch=7)
    )
    server.handlers[Methods.LIST_CATALOGS] = lambda env: unary(
        pb.ListCatalogsResponse(catalogs=[pb.CatalogSummary(name="demo", active=True)])
    )
    server.handlers[Methods.DESCRIBE_CATALOG] = lambda env: unary(
        pb.CatalogDescription(summary=pb.CatalogSummary(name=pb.DescribeCatalogRequest.FromString(env.payload).name))
    )
    server.handlers[Methods.HEALTH_CHECK] = lambda env: unary(
        pb.HealthCheckResponse(
            status=pb.SERVING_STATUS_SERVING
            if pb.HealthCheckRequest.FromString(env.payload).service == ""
            else pb.SERVING_STATUS_SERVICE_UNKNOWN
        )
    )
    server.handlers[Methods.GET_STATS] = lambda env: unary(pb.Stats(counters={"matches": 3}, version="0.3.0"))
    server.handlers[Methods.MATCH_SIGNATURE] = lambda env: unary(
        pb.MatchResult(
            outcome=pb.MATCH_OUTCOME_NO_MATCH,
            stream_time=len(pb.MatchSignatureRequest.FromString(env.payload).signature),
        )
    )

    assert client.prepare().state == pb.SESSION_STATE_PRERECORDING
    assert client.cancel().state == pb.SESSION_STATE_IDLE
    assert client.snapshot().epoch == 7
    assert [c.name for c in client.catalogs()] == ["demo"]
    assert client.describe_catalog("demo").summary.name == "demo"
    assert client.health() == pb.SERVING_STATUS_SERVING
    assert client.health("earshot.v1.Nope") == pb.SERVING_STATUS_SERVICE_UNKNOWN
    assert client.stats().counters["matches"] == 3
    assert client.match_signature(b"EARSIG12345").stream_time == 11

    calls = server.envelopes(CALL)
    assert [e.request_id for e in calls] == list(range(1, len(calls) + 1))
    assert [e.method for e in calls] == [
        "/earshot.v1.Recognizer/Prepare",
        "/earshot.v1.Recognizer/Cancel",
        "/earshot.v1.Session/GetSnapshot",
        "/earshot.v1.Catalogs/List",
        "/earshot.v1.Catalogs/Describe",
        "/earshot.v1.Health/Check",
        "/earshot.v1.Health/Check",
        "/earshot.v1.Health/GetStats",
        "/earshot.v1.Recognizer/MatchSignature",
    ]


def test_match_signature_reads_a_file(server, client, tmp_path):
    path = tmp_path / "q.earsig"
    path.write_bytes(b"\x01\x02\x03")
    server.handlers[Methods.MATCH_SIGNATURE] = lambda env: unary(
        pb.MatchResult(stream_time=len(pb.MatchSignatureRequest.FromString(env.payload).signature))
    )
    assert client.match_signature(path).stream_time == 3
    assert client.match_signature(str(path)).stream_time == 3


def test_generic_call_with_raw_payload_and_metadata(server, client):
    server.handlers["/earshot.v1.Session/GetSnapshot"] = lambda env: unary(pb.SessionSnapshot(epoch=9))
    raw = client.call("/earshot.v1.Session/GetSnapshot", b"", None, metadata={"x-trace-id": "abc"})
    assert pb.SessionSnapshot.FromString(raw).epoch == 9
    [envelope] = server.envelopes(CALL)
    assert dict(envelope.metadata) == {"x-trace-id": "abc"}
    with pytest.raises(ValueError):
        client.call(Methods.GET_SNAPSHOT, b"", None, metadata={"X-Upper": "no"})
    with pytest.raises(ValueError):
        client.call("not-a-path", b"", None)


@pytest.mark.parametrize(
    "code,name",
    [
        (StatusCode.NOT_FOUND, "NOT_FOUND"),
        (StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
        (StatusCode.RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"),
        (StatusCode.UNAVAILABLE, "UNAVAILABLE"),
        (StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
        (42, "CODE_42"),
    ],
)
def test_error_status_becomes_rpc_error(server, client, code, name):
    server.handlers[Methods.DESCRIBE_CATALOG] = lambda env: fail(code, 'no catalog named "x"')
    with pytest.raises(RpcError) as info:
        client.describe_catalog("x")
    error = info.value
    assert error.code == int(code)
    assert error.code_name == name
    assert error.message == 'no catalog named "x"'
    assert error.method == Methods.DESCRIBE_CATALOG
    assert name in str(error)


def test_unknown_method_is_unimplemented(server, client):
    with pytest.raises(RpcError) as info:
        client.call("/earshot.v1.Nope/Nothing", pb.GetSnapshotRequest(), pb.SessionSnapshot)
    assert info.value.code == StatusCode.UNIMPLEMENTED


def test_deadline_when_the_server_is_silent(server, client):
    server.handlers[Methods.MATCH] = lambda env: silence()
    start = time.monotonic()
    with pytest.raises(RpcError) as info:
        client.match(timeout=0.3)
    elapsed = time.monotonic() - start
    assert 0.29 <= elapsed < 1.5
    assert info.value.code == StatusCode.DEADLINE_EXCEEDED
    assert server.endpoint in info.value.message
    # The client tells the server to stop working on it.
    assert server.wait_for(lambda: len(server.envelopes(CANCEL)) == 1)
    assert server.envelopes(CANCEL)[0].request_id == server.envelopes(CALL)[0].request_id
    # And the client still works; the late END of the cancelled call is dropped.
    server.handlers[Methods.MATCH] = lambda env: unary(matched("ep1"))
    assert client.match().items[0].media_item.id == "ep1"


def test_deadline_when_the_server_answers_nothing_at_all(server):
    server.silent = True
    with Client(server.endpoint, timeout=0.4) as c:
        with pytest.raises(RpcError) as info:
            c.snapshot()
        assert info.value.code == StatusCode.DEADLINE_EXCEEDED
        assert server.endpoint in str(info.value)
        with pytest.raises(RpcError) as info:
            c.ping(timeout=0.2)
        assert info.value.code == StatusCode.DEADLINE_EXCEEDED


def test_deadline_when_nothing_listens():
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    with Client(endpoint, timeout=0.5) as c:
        start = time.monotonic()
        with pytest.raises(RpcError) as info:
            c.health()
        assert time.monotonic() - start < 2
        assert info.value.code == StatusCode.DEADLINE_EXCEEDED
        assert endpoint in info.value.message and "no connection" in info.value.message
        # A stream without a deadline still gives up on connecting after the client's timeout.
        with pytest.raises(RpcError) as info:
            c.stream_matches()
        assert info.value.code == StatusCode.DEADLINE_EXCEEDED


def test_ping(server, client):
    rtt = client.ping()
    assert 0 <= rtt < 1
    [ping] = server.envelopes(PING)
    assert ping.request_id >= 1


def _stream_forever(interval=0.02):
    def handler(env):
        n = 0
        while True:
            n += 1
            yield ("message", matched(f"item{n}"))
            yield ("sleep", interval)

    return handler


def test_stream_yields_items_and_closing_sends_cancel(server, client):
    server.handlers[Methods.STREAM_MATCHES] = _stream_forever()
    stream = client.stream_matches(include_repeats=True)
    ids = []
    for result in stream:
        ids.append(result.items[0].media_item.id)
        if len(ids) == 3:
            break
    assert ids == ["item1", "item2", "item3"]
    [call] = server.envelopes(CALL)
    assert pb.StreamMatchesRequest.FromString(call.payload).include_repeats is True
    assert call.timeout_ms == 0xFFFFFFFF  # no deadline
    stream.close()
    assert stream.code == StatusCode.CANCELLED
    assert server.wait_for(lambda: server.cancelled == [call.request_id])
    assert server.wait_for(lambda: server.active_calls == 0)
    stream.close()  # idempotent
    assert list(stream) == []
    assert client.ping() >= 0


def test_stream_as_context_manager_and_generator_close(server, client):
    server.handlers[Methods.STREAM_MATCHES] = _stream_forever()
    with client.stream_matches() as stream:
        assert next(stream).items[0].media_item.id == "item1"
    assert server.wait_for(lambda: len(server.cancelled) == 1)
    # Dropping an open stream cancels it too.
    stream = client.stream_matches()
    next(stream)
    del stream
    assert server.wait_for(lambda: len(server.cancelled) == 2)


def test_stream_ends_with_ok_or_raises_the_status(server, client):
    def three(env):
        for _ in range(3):
            yield ("message", pb.HealthCheckResponse(status=pb.SERVING_STATUS_SERVING))
        yield ("end", StatusCode.OK, "", None)

    server.handlers[Methods.HEALTH_WATCH] = three
    stream = client.watch_health()
    assert list(stream) == [pb.SERVING_STATUS_SERVING] * 3
    assert stream.code == StatusCode.OK

    def exhausted(env):
        yield ("message", matched("a"))
        yield ("end", StatusCode.RESOURCE_EXHAUSTED, "slow consumer", None)

    server.handlers[Methods.STREAM_MATCHES] = exhausted
    stream = client.stream_matches()
    assert next(stream).items[0].media_item.id == "a"
    with pytest.raises(RpcError) as info:
        next(stream)
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert info.value.message == "slow consumer"
    assert stream.done and stream.code == StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(StopIteration):
        next(stream)
    assert server.envelopes(CANCEL) == []  # the server ended them: nothing to cancel


def test_stream_deadline(server, client):
    server.handlers[Methods.STREAM_MATCHES] = lambda env: silence()
    stream = client.stream_matches(timeout=0.3)
    assert server.wait_for(lambda: server.envelopes(CALL))
    assert 200 < server.envelopes(CALL)[0].timeout_ms <= 300
    with pytest.raises(RpcError) as info:
        next(stream)
    assert info.value.code == StatusCode.DEADLINE_EXCEEDED
    assert server.wait_for(lambda: len(server.cancelled) == 1)


def test_quiet_stream_pings_and_a_dead_server_ends_it(server):
    with Client(server.endpoint, timeout=2, ping_interval=0.1) as c:

        def quiet_then_item(env):
            yield ("sleep", 0.45)
            yield ("message", matched("late"))
            yield ("end", StatusCode.OK, "", None)

        server.handlers[Methods.STREAM_MATCHES] = quiet_then_item
        assert [r.items[0].media_item.id for r in c.stream_matches()] == ["late"]
        assert len(server.envelopes(PING)) >= 3  # kept alive while waiting

        server.handlers[Methods.STREAM_MATCHES] = lambda env: silence()
        stream = c.stream_matches()
        server.silent = True  # the daemon "dies": no more PONGs
        start = time.monotonic()
        with pytest.raises(RpcError) as info:
            next(stream)
        assert info.value.code == StatusCode.UNAVAILABLE
        assert time.monotonic() - start < 1.5


def test_interleaved_stream_and_unary_calls(server, client):
    server.handlers[Methods.STREAM_MATCHES] = _stream_forever(0.05)
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: unary(pb.SessionSnapshot(epoch=5))
    with client.stream_matches() as stream:
        got = []
        for result in stream:
            got.append(result.items[0].media_item.id)
            assert client.snapshot().epoch == 5  # replies of the stream meanwhile are kept
            if len(got) == 4:
                break
    assert got == ["item1", "item2", "item3", "item4"]


def test_malformed_and_stale_replies_are_dropped(server, client):
    def garbage_then_result(env):
        yield ("raw", [b"EARSHOT/2", b"whatever"])
        yield ("raw", [SIGNATURE, b"\xff\xff\xff\xff"])
        yield ("raw", [b"only one frame"])
        other = pb.ResponseEnvelope(request_id=999, kind=pb.ResponseEnvelope.KIND_END)
        yield ("raw", [SIGNATURE, other.SerializeToString()])
        yield ("end", StatusCode.OK, "", pb.SessionSnapshot(epoch=3))

    server.handlers[Methods.GET_SNAPSHOT] = garbage_then_result
    assert client.snapshot().epoch == 3
    assert client.dropped_replies == 3
    assert client.stale_replies == 1


def raw_end(env, payload: bytes):
    """A handler body sending an END without a status, carrying ``payload`` as it is."""
    reply = pb.ResponseEnvelope(request_id=env.request_id, kind=pb.ResponseEnvelope.KIND_END, payload=payload)
    return iter([("raw", [SIGNATURE, reply.SerializeToString()]), ("sleep", 3600)])


def test_undecodable_result_is_internal(server, client):
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: raw_end(env, b"\xff\xff")
    with pytest.raises(RpcError) as info:
        client.snapshot()
    assert info.value.code == StatusCode.INTERNAL


def test_end_without_status_is_ok(server, client):
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: raw_end(env, pb.SessionSnapshot(epoch=4).SerializeToString())
    assert client.snapshot().epoch == 4


def test_two_threads_on_one_client_are_refused(server, client):
    server.handlers[Methods.MATCH] = lambda env: iter([("sleep", 0.5), ("end", StatusCode.OK, "", matched())])
    errors = []
    t = threading.Thread(target=lambda: client.match())
    t.start()
    time.sleep(0.1)
    try:
        client.ping()
    except RuntimeError as e:
        errors.append(e)
    t.join()
    assert errors and "one Client per thread" in str(errors[0])


def test_close_cancels_open_streams_and_refuses_calls(server):
    server.handlers[Methods.STREAM_MATCHES] = _stream_forever()
    c = Client(server.endpoint, timeout=2)
    stream = c.stream_matches()
    next(stream)
    with c:
        pass
    assert c.closed
    assert stream.done
    assert server.wait_for(lambda: len(server.cancelled) == 1)
    with pytest.raises(RuntimeError):
        c.ping()
    c.close()  # idempotent


def test_bad_arguments():
    with pytest.raises(ValueError):
        Client("nowhere")
    with pytest.raises(ValueError):
        Client(timeout=0)
    c = Client("127.0.0.1:1", timeout=1)
    assert c.server == "tcp://127.0.0.1:1"
    with pytest.raises(ValueError):
        c.match(timeout=-1)
    c.close()


def test_curve_encryption(server):
    """CURVE keys are passed to the socket: a CURVE server with the client's server key answers."""
    if not zmq.has("curve"):
        pytest.skip("libzmq without CURVE")
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.curve_server = True
    router.curve_secretkey = server_secret
    router.bind("tcp://127.0.0.1:*")
    endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
    try:
        with Client(endpoint, timeout=2, curve=(server_public, client_public, client_secret)) as c:
            done = threading.Event()

            def answer():
                if router.poll(3000):
                    identity, sig, body = router.recv_multipart()
                    request = pb.RequestEnvelope.FromString(body)
                    pong = pb.ResponseEnvelope(request_id=request.request_id, kind=pb.ResponseEnvelope.KIND_PONG)
                    router.send_multipart([identity, sig, pong.SerializeToString()])
                done.set()

            t = threading.Thread(target=answer)
            t.start()
            assert c.ping() >= 0
            t.join()
    finally:
        router.close(0)
        context.term()
