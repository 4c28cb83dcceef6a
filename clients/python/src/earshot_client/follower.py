"""A consistent view of the daemon's session from events plus snapshots (zguide's "Clone").

The recipe (reference/rpc.md §5):

1. subscribe (the SUB filter is set before connecting — :class:`Subscriber` does that);
2. call ``Session/GetSnapshot``; events arriving meanwhile wait in the SUB queue;
3. drop events whose ``seq`` ≤ the snapshot's ``topic_seq[topic]``, or of another ``epoch``;
   apply the rest in order;
4. on a ``seq`` gap, an epoch change, a heartbeat whose heads show lost events, or 3 s without a
   heartbeat: take a new snapshot (rate-limited).

Events carry the full state of their key, so applying one twice is harmless.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Dict, Iterator, Optional, Set

from . import pb
from .client import Client
from .errors import RpcError
from .events import Subscriber
from .protocol import DEFAULT_EVENTS, DEFAULT_SERVER, Topics

#: ``catalog`` events whose summary is the catalog's state now (REMOVED drops it; UPLOADED
#: carries the upload, not a catalog).
_CATALOG_SUMMARY_KINDS = frozenset(
    (
        pb.CatalogEvent.KIND_LOADED,
        pb.CatalogEvent.KIND_FAILED,
        pb.CatalogEvent.KIND_INSTALLED,
        pb.CatalogEvent.KIND_REPLACED,
        pb.CatalogEvent.KIND_ENABLED,
        pb.CatalogEvent.KIND_DISABLED,
    )
)


def predict_offset(item: pb.MatchedMediaItem, at_unix_ms: int, now_unix_ms: Optional[float] = None) -> float:
    """Where in the reference the programme is now: the item's ``predicted_current_match_offset``
    (valid at ``at_unix_ms``) moved on by the wall clock at the measured speed,
    ``offset + (now − at) × (1 + time_skew)``. ``at_unix_ms`` 0 (unknown) leaves it as sent."""
    offset = item.predicted_current_match_offset
    if not at_unix_ms:
        return offset
    now = time.time() * 1000 if now_unix_ms is None else now_unix_ms
    return offset + (now - at_unix_ms) / 1000.0 * (1.0 + item.time_skew)


@dataclasses.dataclass(frozen=True)
class FollowerState:
    """What a dashboard shows. Replaced (never changed in place) on every update."""

    #: The session: the last snapshot or ``session`` event (state, capture problem, window…).
    session: pb.SessionSnapshot
    #: The daemon start this state belongs to.
    epoch: int
    #: The last ``match`` event (any outcome) since the snapshot; None before one.
    last_match: Optional[pb.MatchResult] = None
    #: The item being followed, from the latest snapshot, session event or match event.
    current_item: Optional[pb.MatchedMediaItem] = None
    #: Wall-clock Unix ms at which ``current_item.predicted_current_match_offset`` held.
    current_item_at_ms: int = 0
    #: The last ``health`` event's status (``pb.SERVING_STATUS_…``); None before one.
    health: Optional[int] = None
    #: Catalogs as ``catalog`` events of this epoch announced them (name → summary: loaded,
    #: installed, replaced, enabled, disabled or failed; removed ones are dropped).
    catalogs: Dict[str, pb.CatalogSummary] = dataclasses.field(default_factory=dict)
    #: Library notices of this epoch: owner hash → its last ``pb.LibraryNotice`` (version,
    #: item count, the kind of change and how many items it changed — never what they are),
    #: the owner that changed most recently last.
    library: Dict[str, pb.LibraryNotice] = dataclasses.field(default_factory=dict)

    @property
    def state(self) -> int:
        """The session state (``pb.SESSION_STATE_…``)."""
        return self.session.state

    @property
    def state_name(self) -> str:
        """``"PRERECORDING"``, ``"MATCHING"``, ``"IDLE"``…"""
        return pb.enum_name(pb.SessionState, self.session.state)

    @property
    def capture_problem(self) -> str:
        return self.session.capture_problem

    @property
    def last_library_notice(self) -> Optional[pb.LibraryNotice]:
        """The latest library notice (any owner), or None before one."""
        return next(reversed(self.library.values())) if self.library else None

    def offset_now(self, now_unix_ms: Optional[float] = None) -> Optional[float]:
        """The current item's offset advanced to now (None without a current item)."""
        if self.current_item is None:
            return None
        return predict_offset(self.current_item, self.current_item_at_ms, now_unix_ms)


@dataclasses.dataclass(frozen=True)
class Update:
    """One change seen by :class:`StateFollower`.

    ``kind``: ``"snapshot"`` (a new snapshot was taken; ``reason`` says why: ``"start"``, a gap,
    an epoch change, a heartbeat timeout…), ``"session"``, ``"match"``, ``"catalog"``,
    ``"health"``, ``"library"`` (an event applied; ``event`` is it), or ``"error"`` (the snapshot call failed:
    ``error``; the follower retries, ``state`` is the last known one or None).
    """

    kind: str
    state: Optional[FollowerState]
    event: Optional[pb.EventEnvelope] = None
    reason: str = ""
    error: Optional[RpcError] = None


class StateFollower:
    """Keeps the session snapshot and current match consistent from a :class:`Client` (for
    snapshots) and a :class:`Subscriber` (for events), re-snapshotting when events were lost.

    ``poll(timeout)`` returns the next :class:`Update` (or None when nothing changed in
    ``timeout`` seconds); ``updates(tick)`` iterates them. ``state`` is the current
    :class:`FollowerState` (None until the first snapshot succeeds).

    The subscriber is made to receive the session, match and heartbeat topics (added if
    missing). Counters: ``resyncs`` (snapshots taken), ``stale_dropped`` (events at or below the
    snapshot, or of a dead epoch), ``gaps`` (losses detected).
    """

    REQUIRED_TOPICS = (Topics.SESSION, Topics.MATCH, Topics.HEARTBEAT)

    def __init__(
        self,
        client: Client,
        subscriber: Subscriber,
        *,
        heartbeat_timeout: float = 3.0,
        min_resync_interval: float = 0.5,
        retry_interval: float = 1.0,
        snapshot_timeout: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.subscriber = subscriber
        for topic in self.REQUIRED_TOPICS:
            if not subscriber.receives(topic):
                subscriber.subscribe(topic)
        self.heartbeat_timeout = heartbeat_timeout
        self.min_resync_interval = min_resync_interval
        self.retry_interval = retry_interval
        self.snapshot_timeout = snapshot_timeout
        self._clock = clock
        self.state: Optional[FollowerState] = None
        self.resyncs = 0
        self.stale_dropped = 0
        self.gaps = 0
        self.last_error: Optional[RpcError] = None
        self._owned: list = []
        self._epoch: Optional[int] = None
        self._applied: Dict[str, int] = {}
        self._dead_epochs: Set[int] = set()
        self._suspect_epoch: Optional[int] = None
        self._lagging: Dict[str, int] = {}
        self._resync_reason: Optional[str] = "start"
        self._next_snapshot_at = 0.0
        self._last_heartbeat = 0.0

    @classmethod
    def open(
        cls,
        server: str = DEFAULT_SERVER,
        events: str = DEFAULT_EVENTS,
        *,
        timeout: float = 10.0,
        topics=Topics.ALL,
        **options,
    ) -> "StateFollower":
        """A follower with its own Subscriber (created first) and Client; ``close()`` closes
        both. ``options`` go to the constructor (``heartbeat_timeout``…)."""
        subscriber = Subscriber(events, topics)
        try:
            client = Client(server, timeout)
        except BaseException:
            subscriber.close()
            raise
        follower = cls(client, subscriber, **options)
        follower._owned = [client, subscriber]
        return follower

    def close(self) -> None:
        """Closes the client and subscriber if :meth:`open` made them."""
        for owned in self._owned:
            owned.close()
        self._owned = []

    def __enter__(self) -> "StateFollower":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def synced(self) -> bool:
        """Whether the state is current (a snapshot succeeded and no loss is pending)."""
        return self.state is not None and self._resync_reason is None

    def resync(self, reason: str = "requested") -> None:
        """Asks for a new snapshot at the next ``poll`` (rate-limited)."""
        if self._resync_reason is None:
            self._resync_reason = reason

    def poll(self, timeout: Optional[float] = None) -> Optional[Update]:
        """Reads events (and takes snapshots when needed) until something changes; returns that
        :class:`Update`, or None when ``timeout`` seconds pass without one (None = wait)."""
        deadline = None if timeout is None else self._clock() + timeout
        while True:
            now = self._clock()
            if self._resync_reason is not None and now >= self._next_snapshot_at:
                return self._take_snapshot(now)
            if self._resync_reason is None and now - self._last_heartbeat >= self.heartbeat_timeout:
                self.gaps += 1
                self._resync_reason = f"no heartbeat for {self.heartbeat_timeout:g} s"
                continue
            # Sleep until an event, the deadline, the next allowed snapshot or the heartbeat limit.
            wake = (
                self._next_snapshot_at
                if self._resync_reason is not None
                else self._last_heartbeat + self.heartbeat_timeout
            )
            if deadline is not None:
                if now >= deadline:
                    return None
                wake = min(wake, deadline)
            event = self.subscriber.recv(timeout=max(0.0, wake - now))
            if event is None:
                continue
            update = self._handle(event)
            if update is not None:
                return update

    def updates(self, tick: Optional[float] = None) -> Iterator[Optional[Update]]:
        """Iterates updates for ever. With ``tick`` (seconds), yields None whenever that long
        passes without one — a cue to redraw an advancing offset."""
        while True:
            update = self.poll(tick)
            if update is not None or tick is not None:
                yield update

    # -- internals ---------------------------------------------------------------------------

    def _take_snapshot(self, now: float) -> Update:
        reason = self._resync_reason or "requested"
        self._next_snapshot_at = now + self.min_resync_interval
        try:
            snapshot = self.client.snapshot(timeout=self.snapshot_timeout)
        except RpcError as error:
            self.last_error = error
            self._next_snapshot_at = self._clock() + self.retry_interval
            return Update("error", self.state, reason=reason, error=error)
        self.last_error = None
        self.resyncs += 1
        previous = self.state
        if self._suspect_epoch is not None and self._suspect_epoch != snapshot.epoch:
            # An event of an epoch the daemon is not in: left over from an earlier start.
            self._dead_epochs.add(self._suspect_epoch)
        if self._epoch is not None and self._epoch != snapshot.epoch:
            self._dead_epochs.add(self._epoch)  # the daemon restarted: the old epoch is over
        self._dead_epochs.discard(snapshot.epoch)
        self._suspect_epoch = None
        same_epoch = previous is not None and previous.epoch == snapshot.epoch
        self._epoch = snapshot.epoch
        self._applied = dict(snapshot.topic_seq)
        self._lagging = {}
        self._resync_reason = None
        self._last_heartbeat = self._clock()
        item = snapshot.current_match if snapshot.HasField("current_match") else None
        self.state = FollowerState(
            session=snapshot,
            epoch=snapshot.epoch,
            last_match=previous.last_match if same_epoch else None,
            current_item=item,
            current_item_at_ms=snapshot.taken_at_unix_ms if item is not None else 0,
            health=previous.health if same_epoch else None,
            catalogs=dict(previous.catalogs) if same_epoch else {},
            library=dict(previous.library) if same_epoch else {},
        )
        return Update("snapshot", self.state, reason=reason)

    def _handle(self, event: pb.EventEnvelope) -> Optional[Update]:
        if self._resync_reason is not None:
            # Received before the coming snapshot is asked for: that snapshot includes it.
            self.stale_dropped += 1
            return None
        if event.epoch != self._epoch:
            if event.epoch in self._dead_epochs:
                self.stale_dropped += 1
                return None
            self._suspect_epoch = event.epoch
            self._resync_reason = f"epoch changed ({self._epoch:#x} → {event.epoch:#x})"
            return None
        topic = event.topic
        # A heartbeat is known by its topic: other topics may carry a Heartbeat body too (the
        # daemon's load-test events do), and must not keep the heartbeat clock going.
        if topic == Topics.HEARTBEAT:
            return self._heartbeat(event) if event.WhichOneof("body") == "heartbeat" else None
        last = self._applied.get(topic, 0)
        if event.seq <= last:
            self.stale_dropped += 1
            return None
        if event.seq != last + 1:
            self.gaps += 1
            self._resync_reason = f"gap on {topic}: expected seq {last + 1}, got {event.seq}"
            return None
        self._applied[topic] = event.seq
        return self._apply(event)

    def _heartbeat(self, event: pb.EventEnvelope) -> None:
        self._last_heartbeat = self._clock()
        if event.seq > self._applied.get(event.topic, 0):
            self._applied[event.topic] = event.seq
        # A head beyond what was applied means lost events — unless the event is still on its
        # way, so a topic counts as lost only when it is still behind at the next heartbeat.
        lagging = {}
        for topic, head in event.heartbeat.heads.items():
            if topic == Topics.HEARTBEAT or not self.subscriber.receives(topic):
                continue
            applied = self._applied.get(topic, 0)
            if head > applied:
                lagging[topic] = head
                earlier = self._lagging.get(topic)
                if earlier is not None and earlier > applied:
                    self.gaps += 1
                    self._resync_reason = f"heartbeat: {topic} is at seq {head}, applied {applied}"
                    return None
        self._lagging = lagging
        return None

    def _apply(self, event: pb.EventEnvelope) -> Optional[Update]:
        state = self.state
        assert state is not None
        body = event.WhichOneof("body")
        if body == "session":
            session = event.session
            item = session.current_match if session.HasField("current_match") else None
            at = (session.taken_at_unix_ms or event.ts_unix_ms) if item is not None else 0
            state = dataclasses.replace(state, session=session, current_item=item, current_item_at_ms=at)
        elif body == "match":
            match = event.match
            state = dataclasses.replace(state, last_match=match)
            if match.outcome == pb.MATCH_OUTCOME_MATCH and len(match.items) > 0:
                state = dataclasses.replace(
                    state, current_item=match.items[0], current_item_at_ms=match.made_at_unix_ms or event.ts_unix_ms
                )
            elif match.outcome == pb.MATCH_OUTCOME_NO_MATCH:
                state = dataclasses.replace(state, current_item=None, current_item_at_ms=0)
        elif body == "health":
            state = dataclasses.replace(state, health=event.health.status)
        elif body == "catalog":
            catalogs = dict(state.catalogs)
            change = event.catalog
            if change.HasField("catalog") and change.catalog.name:
                if change.kind == pb.CatalogEvent.KIND_REMOVED:
                    catalogs.pop(change.catalog.name, None)
                elif change.kind in _CATALOG_SUMMARY_KINDS:
                    catalogs[change.catalog.name] = change.catalog
            state = dataclasses.replace(state, catalogs=catalogs)
        elif body == "library":
            library = dict(state.library)
            notice = event.library
            library.pop(notice.owner_hash, None)  # re-inserted last: the most recent change
            library[notice.owner_hash] = notice
            state = dataclasses.replace(state, library=library)
        else:
            return None  # a body this client does not know (added later): nothing to apply
        self.state = state
        return Update(body, state, event=event)
