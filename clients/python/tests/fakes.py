"""In-test stand-ins for earshotd: a ROUTER that speaks the EARSHOT/1 envelope protocol (in a
thread), an XPUB that publishes EventEnvelopes the way the daemon does, and a library with a
change log served on the ROUTER."""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import zmq

from earshot_client import SIGNATURE, Methods, StatusCode, Topics, pb

Action = Tuple


def unary(result=None) -> Iterator[Action]:
    """A handler body: one END with OK and ``result``."""
    yield ("end", StatusCode.OK, "", result)


def fail(code: int, message: str) -> Iterator[Action]:
    yield ("end", code, message, None)


def silence() -> Iterator[Action]:
    while True:
        yield ("sleep", 3600)


class Received:
    def __init__(self, identity: bytes, frames: List[bytes], envelope: Optional[pb.RequestEnvelope]):
        self.identity = identity
        self.frames = frames
        self.envelope = envelope
        self.at = time.monotonic()

    def __repr__(self) -> str:
        e = self.envelope
        if e is None:
            return f"Received(garbage {self.frames!r})"
        return f"Received(id={e.request_id} control={e.control} method={e.method!r})"


class FakeServer:
    """A ROUTER on a random loopback port. ``handlers[method] = f(envelope) -> iterator of
    actions``: ("message", msg), ("sleep", seconds), ("end", code, text, msg_or_None),
    ("raw", [frames…]) sends frames as they are (after the routing id). Unknown methods get
    UNIMPLEMENTED. ``silent``: answer nothing at all (not even PING)."""

    def __init__(self) -> None:
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.handlers: Dict[str, Callable[[pb.RequestEnvelope], Iterator[Action]]] = {}
        self.received: List[Received] = []
        self.cancelled: List[int] = []
        self.silent = False
        self._calls: Dict[Tuple[bytes, int], list] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-earshotd", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.socket.close(0)
        self.context.term()

    # -- test helpers --------------------------------------------------------------------------

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def envelopes(self, control: Optional[int] = None, method: Optional[str] = None) -> List[pb.RequestEnvelope]:
        with self._cond:
            out = [r.envelope for r in self.received if r.envelope is not None]
        if control is not None:
            out = [e for e in out if e.control == control]
        if method is not None:
            out = [e for e in out if e.method == method]
        return out

    def calls_of(self, method: str) -> int:
        return len(self.envelopes(pb.RequestEnvelope.CONTROL_CALL, method))

    @property
    def active_calls(self) -> int:
        with self._cond:
            return len(self._calls)

    # -- the server thread -------------------------------------------------------------------

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        while not self._stop.is_set():
            now = time.monotonic()
            with self._cond:
                wakes = [c[1] for c in self._calls.values()]
            timeout = 50 if not wakes else max(0, min(50, int((min(wakes) - now) * 1000)))
            if poller.poll(timeout):
                while True:
                    try:
                        frames = self.socket.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._incoming(frames)
            self._step()

    def _reply(self, identity: bytes, envelope: pb.ResponseEnvelope) -> None:
        try:
            self.socket.send_multipart([identity, SIGNATURE, envelope.SerializeToString()])
        except zmq.ZMQError:
            pass

    def _incoming(self, frames: List[bytes]) -> None:
        identity, body = frames[0], frames[1:]
        envelope = None
        if len(body) == 2 and body[0] == SIGNATURE:
            try:
                envelope = pb.RequestEnvelope.FromString(body[1])
            except Exception:
                envelope = None
        with self._cond:
            self.received.append(Received(identity, body, envelope))
            self._cond.notify_all()
        if envelope is None or self.silent:
            return
        key = (identity, envelope.request_id)
        if envelope.control == pb.RequestEnvelope.CONTROL_PING:
            self._reply(
                identity, pb.ResponseEnvelope(request_id=envelope.request_id, kind=pb.ResponseEnvelope.KIND_PONG)
            )
        elif envelope.control == pb.RequestEnvelope.CONTROL_CANCEL:
            with self._cond:
                call = self._calls.pop(key, None)
                if call is not None:
                    self.cancelled.append(envelope.request_id)
                self._cond.notify_all()
            if call is not None:
                self._end(identity, envelope.request_id, call, StatusCode.CANCELLED, "cancelled by the client")
        else:
            handler = self.handlers.get(envelope.method)
            if handler is None:
                self._reply(
                    identity,
                    pb.ResponseEnvelope(
                        request_id=envelope.request_id,
                        kind=pb.ResponseEnvelope.KIND_END,
                        status=pb.Status(code=StatusCode.UNIMPLEMENTED, message=f"unknown method {envelope.method}"),
                    ),
                )
                return
            with self._cond:
                self._calls[key] = [handler(envelope), time.monotonic(), 0]

    def _end(self, identity: bytes, request_id: int, call: list, code: int, message: str, result=None) -> None:
        self._reply(
            identity,
            pb.ResponseEnvelope(
                request_id=request_id,
                kind=pb.ResponseEnvelope.KIND_END,
                item_seq=call[2],
                payload=result.SerializeToString() if result is not None else b"",
                status=pb.Status(code=int(code), message=message),
            ),
        )

    def _step(self) -> None:
        now = time.monotonic()
        with self._cond:
            due = [(k, c) for k, c in self._calls.items() if c[1] <= now]
        for key, call in due:
            identity, request_id = key
            while True:
                try:
                    action = next(call[0])
                except StopIteration:
                    action = ("end", StatusCode.OK, "", None)
                kind = action[0]
                if kind == "sleep":
                    call[1] = time.monotonic() + action[1]
                    break
                if kind == "message":
                    self._reply(
                        identity,
                        pb.ResponseEnvelope(
                            request_id=request_id,
                            kind=pb.ResponseEnvelope.KIND_MESSAGE,
                            item_seq=call[2],
                            payload=action[1].SerializeToString(),
                        ),
                    )
                    call[2] += 1
                elif kind == "raw":
                    try:
                        self.socket.send_multipart([identity] + list(action[1]))
                    except zmq.ZMQError:
                        pass
                elif kind == "end":
                    with self._cond:
                        self._calls.pop(key, None)
                        self._cond.notify_all()
                    self._end(identity, request_id, call, action[1], action[2], action[3])
                    break


class FakePublisher:
    """An XPUB on a random loopback port that publishes like earshotd: per-topic seq from 1,
    a global seq, one epoch. Thread-safe (a snapshot handler may publish from the server
    thread)."""

    def __init__(self, epoch: int = 0xE1) -> None:
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.XPUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.epoch = epoch
        self.heads: Dict[str, int] = {}
        self.global_seq = 0
        self.subscriptions: set = set()
        self.state = pb.SESSION_STATE_PRERECORDING  # the session state last published
        self._lock = threading.Lock()

    def close(self) -> None:
        self.socket.close(0)
        self.context.term()

    def wait_subscribed(self, topics, timeout: float = 5.0) -> None:
        """Waits until a subscriber has subscribed to every one of ``topics`` (so nothing
        published from now on is lost to it)."""
        deadline = time.monotonic() + timeout
        wanted = set(topics)
        while not wanted <= self.subscriptions:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no subscription to {wanted - self.subscriptions}"
            with self._lock:
                if self.socket.poll(int(remaining * 1000) + 1):
                    message = self.socket.recv()
                    if message[:1] == b"\x01":
                        self.subscriptions.add(message[1:].decode())

    def publish(
        self, topic: str, *, epoch: Optional[int] = None, seq: Optional[int] = None, **body
    ) -> pb.EventEnvelope:
        """Publishes one event with ``body`` (session=…, match=…, heartbeat=…). ``seq`` forces
        a sequence number (the head moves to it), for gaps; ``epoch`` another epoch."""
        with self._lock:
            if seq is None:
                seq = self.heads.get(topic, 0) + 1
            if epoch is None or epoch == self.epoch:  # an event of another epoch is not ours
                self.heads[topic] = max(self.heads.get(topic, 0), seq)
            self.global_seq += 1
            event = pb.EventEnvelope(
                topic=topic,
                epoch=self.epoch if epoch is None else epoch,
                seq=seq,
                global_seq=self.global_seq,
                ts_unix_ms=int(time.time() * 1000),
                **body,
            )
            self.socket.send_multipart([topic.encode(), event.SerializeToString()])
            return event

    def session(self, state: int = pb.SESSION_STATE_PRERECORDING, **kwargs) -> pb.EventEnvelope:
        self.state = state
        return self.publish(Topics.SESSION, session=pb.SessionSnapshot(state=state, epoch=self.epoch), **kwargs)

    def match(self, result: pb.MatchResult, **kwargs) -> pb.EventEnvelope:
        return self.publish(Topics.MATCH, match=result, **kwargs)

    def heartbeat(self, heads: Optional[Dict[str, int]] = None, **kwargs) -> pb.EventEnvelope:
        with self._lock:
            current = dict(self.heads) if heads is None else heads
            global_seq = self.global_seq
        return self.publish(Topics.HEARTBEAT, heartbeat=pb.Heartbeat(heads=current, global_seq=global_seq), **kwargs)

    def snapshot(self, state: Optional[int] = None, **fields) -> pb.SessionSnapshot:
        """A snapshot as the daemon makes it: heads read first, then the state (by default the
        last one published)."""
        with self._lock:
            heads = dict(self.heads)
        return pb.SessionSnapshot(
            state=self.state if state is None else state,
            epoch=self.epoch,
            topic_seq=heads,
            taken_at_unix_ms=int(time.time() * 1000),
            **fields,
        )


def matched(
    item_id: str = "ep1", offset: float = 10.0, time_skew: float = 0.0, made_at_ms: Optional[int] = None
) -> pb.MatchResult:
    item = pb.MatchedMediaItem(
        media_item=pb.MediaItem(id=item_id, title=item_id.upper()),
        match_offset=offset - 3,
        predicted_current_match_offset=offset,
        time_skew=time_skew,
        confidence=0.9,
        catalog="demo",
    )
    return pb.MatchResult(
        outcome=pb.MATCH_OUTCOME_MATCH,
        items=[item],
        made_at_unix_ms=int(time.time() * 1000) if made_at_ms is None else made_at_ms,
    )


class FakeLibrary:
    """One owner's library as earshotd keeps it — items, a version, a change log that may be
    trimmed (``trim(n)`` keeps the last n changes) — served on a :class:`FakeServer` (Add,
    Items, Remove, WatchLibrary). ``add``/``remove``/``clear`` change it from the test (as
    another connection would); a watch sends the backlog, CURRENT, then live changes.
    ``drop_watch_after = n``: the next watch ends with UNAVAILABLE after n messages (a lost
    daemon)."""

    OWNER_HASH = "0123456789abcdef01234567"

    def __init__(self, server: Optional[FakeServer] = None) -> None:
        self.items: Dict[str, Tuple[int, pb.LibraryItem]] = {}  # id -> (sequence, item)
        self.version = 0
        self.log: List[pb.LibraryChange] = []  # kept changes, oldest first
        self.watches: List[int] = []  # from_version of each watch asked for
        self.drop_watch_after: Optional[int] = None
        self._sequence = 0
        self._lock = threading.Lock()
        if server is not None:
            self.serve(server)

    def serve(self, server: FakeServer) -> None:
        server.handlers[Methods.LIBRARY_ADD] = lambda env: unary(
            self.add(*pb.AddLibraryItemsRequest.FromString(env.payload).items)
        )
        server.handlers[Methods.LIBRARY_REMOVE] = self._remove_handler
        server.handlers[Methods.LIBRARY_ITEMS] = lambda env: unary(
            self.page(pb.LibraryItemsRequest.FromString(env.payload))
        )
        server.handlers[Methods.WATCH_LIBRARY] = self._watch

    # -- changes, as the daemon commits them ---------------------------------------------------

    def add(self, *new) -> pb.LibraryWriteResponse:
        """Adds items (``pb.NewLibraryItem``, or titles as str) in one change."""
        with self._lock:
            now = int(time.time() * 1000)
            stored = []
            for n in new:
                if isinstance(n, str):
                    media = pb.MatchedMediaItem(media_item=pb.MediaItem(id=n, title=n), catalog="demo")
                    n = pb.NewLibraryItem(item=media)
                self._sequence += 1
                item = pb.LibraryItem(
                    id=f"{self._sequence:032x}",
                    item=n.item,
                    matched_at_unix_ms=n.matched_at_unix_ms or now,
                    added_at_unix_ms=now,
                )
                self.items[item.id] = (self._sequence, item)
                stored.append(item)
            change = self._record(pb.LibraryChange.KIND_ADDED, [i.id for i in stored])
            return self._reply(change, stored)

    def remove(self, *ids: str) -> pb.LibraryWriteResponse:
        with self._lock:
            missing = [i for i in ids if i not in self.items]
            if missing:
                raise KeyError(missing[0])
            for i in ids:
                del self.items[i]
            return self._reply(self._record(pb.LibraryChange.KIND_REMOVED, list(ids)))

    def clear(self) -> pb.LibraryWriteResponse:
        with self._lock:
            self.items.clear()
            return self._reply(self._record(pb.LibraryChange.KIND_CLEARED, []))

    def trim(self, keep: int) -> None:
        """Keeps only the last ``keep`` changes in the log (a watch from before gets RESYNC)."""
        with self._lock:
            self.log = self.log[-keep:] if keep else []

    def ids(self) -> set:
        with self._lock:
            return set(self.items)

    # -- reads -------------------------------------------------------------------------------

    def page(self, request: pb.LibraryItemsRequest) -> pb.LibraryItemsResponse:
        with self._lock:
            ordered = sorted(self.items.values(), key=lambda e: (e[1].matched_at_unix_ms, e[0]), reverse=True)
            if request.page_token:
                matched, sequence = (int(x) for x in request.page_token.split(":"))
                ordered = [e for e in ordered if (e[1].matched_at_unix_ms, e[0]) < (matched, sequence)]
            size = request.page_size or 50
            page, rest = ordered[:size], ordered[size:]
            token = f"{page[-1][1].matched_at_unix_ms}:{page[-1][0]}" if rest else ""
            return pb.LibraryItemsResponse(
                items=[e[1] for e in page],
                next_page_token=token,
                version=self.version,
                item_count=len(self.items),
                owner_hash=self.OWNER_HASH,
            )

    # -- internals ---------------------------------------------------------------------------

    def _record(self, kind: int, ids: List[str]) -> pb.LibraryChange:
        self.version += 1
        change = pb.LibraryChange(kind=kind, version=self.version, item_ids=ids, at_unix_ms=int(time.time() * 1000))
        self.log.append(change)
        return change

    def _reply(self, change: pb.LibraryChange, items=()) -> pb.LibraryWriteResponse:
        return pb.LibraryWriteResponse(
            version=change.version, items=list(items), item_count=len(self.items), owner_hash=self.OWNER_HASH
        )

    def _remove_handler(self, env) -> Iterator[Action]:
        try:
            reply = self.remove(*pb.RemoveLibraryItemsRequest.FromString(env.payload).ids)
        except KeyError as missing:
            yield ("end", StatusCode.NOT_FOUND, f"no item {missing.args[0]} in your library", None)
            return
        yield ("end", StatusCode.OK, "", reply)

    def _changes_after(self, version: int):
        """(changes as sent, item count), or (None, count) when the log does not reach back."""
        with self._lock:
            count = len(self.items)
            if version == self.version:
                return [], count
            kept = [c for c in self.log if c.version > version]
            if version > self.version or not kept or kept[0].version != version + 1:
                return None, count
            out = []
            for c in kept:
                m = pb.LibraryChange()
                m.CopyFrom(c)
                m.item_count = count
                if c.kind == pb.LibraryChange.KIND_ADDED:
                    m.items.extend(self.items[i][1] for i in c.item_ids if i in self.items)
                out.append(m)
            return out, count

    def _watch(self, env) -> Iterator[Action]:
        at = pb.WatchLibraryRequest.FromString(env.payload).from_version
        self.watches.append(at)
        drop_after, self.drop_watch_after = self.drop_watch_after, None
        sent = 0
        caught_up = False
        while True:
            changes, count = self._changes_after(at)
            if changes is None:
                with self._lock:
                    at = self.version
                changes = [pb.LibraryChange(kind=pb.LibraryChange.KIND_RESYNC, version=at, item_count=count)]
            else:
                if changes:
                    at = changes[-1].version
                if not caught_up:
                    caught_up = True
                    changes.append(pb.LibraryChange(kind=pb.LibraryChange.KIND_CURRENT, version=at, item_count=count))
            for m in changes:
                yield ("message", m)
                sent += 1
                if drop_after is not None and sent >= drop_after:
                    yield ("end", StatusCode.UNAVAILABLE, "the daemon went away", None)
                    return
            yield ("sleep", 0.01)
