"""The event subscriber: a ZeroMQ SUB on earshotd's PUB socket.

Frames are ``topic`` | ``EventEnvelope``. Topics end with ``/`` (``earshot.v1/match/``), so a
subscription is an exact prefix. For a consistent view of the session (late joiners, lost
events, daemon restarts) use :class:`earshot_client.StateFollower` on top of a Subscriber.
"""

from __future__ import annotations

import math
import time
from typing import Iterable, Iterator, Optional, Set, Union

import zmq
from google.protobuf.message import DecodeError

from . import pb
from .client import CurveKeys, _curve, configure_socket
from .protocol import DEFAULT_EVENTS, Topics, normalize_endpoint


class Subscriber:
    """Receives earshotd's events.

    ``topics`` (a topic or a list; default all of :attr:`Topics.ALL`) are subscribed *before*
    the socket connects, so nothing published after the connection is up is missed. Malformed
    messages are dropped and counted in ``dropped``. Like :class:`Client`, one thread at a time.
    """

    def __init__(
        self,
        events: str = DEFAULT_EVENTS,
        topics: Union[str, Iterable[str]] = Topics.ALL,
        *,
        context: Optional[zmq.Context] = None,
        curve: Optional[CurveKeys] = None,
        receive_high_water_mark: int = 100_000,
        server_key=None,
        client_key=None,
    ) -> None:
        curve = _curve(curve, server_key, client_key)
        self.endpoint = normalize_endpoint(events)
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.SUB)
        self._topics: Set[str] = set()
        try:
            configure_socket(self._socket, curve=curve)
            self._socket.setsockopt(zmq.RCVHWM, receive_high_water_mark)
            for topic in [topics] if isinstance(topics, str) else topics:
                self.subscribe(topic)
            self._socket.connect(self.endpoint)
        except BaseException:
            self._socket.close(linger=0)
            raise
        #: Messages dropped because they were not topic | EventEnvelope.
        self.dropped = 0
        #: Events received.
        self.received = 0
        self._closed = False

    @property
    def topics(self) -> Set[str]:
        """The subscribed topic prefixes."""
        return set(self._topics)

    @property
    def socket(self) -> zmq.Socket:
        return self._socket

    def subscribe(self, topic: str) -> None:
        if topic not in self._topics:
            self._socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
            self._topics.add(topic)

    def unsubscribe(self, topic: str) -> None:
        if topic in self._topics:
            self._socket.setsockopt(zmq.UNSUBSCRIBE, topic.encode())
            self._topics.discard(topic)

    def receives(self, topic: str) -> bool:
        """Whether events of ``topic`` pass the subscriptions."""
        return any(topic.startswith(prefix) for prefix in self._topics)

    def recv(self, timeout: Optional[float] = None) -> Optional[pb.EventEnvelope]:
        """The next event; None when ``timeout`` seconds pass first (None = wait for ever)."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            try:
                frames = self._socket.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                if deadline is None:
                    wait = -1
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    wait = max(1, math.ceil(remaining * 1000))
                self._socket.poll(wait, zmq.POLLIN)
                continue
            event = self._parse(frames)
            if event is not None:
                self.received += 1
                return event

    def __iter__(self) -> Iterator[pb.EventEnvelope]:
        while True:
            event = self.recv()
            if event is not None:
                yield event

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._socket.close(linger=0)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Subscriber({self.endpoint!r}, topics={sorted(self._topics)!r})"

    def _parse(self, frames) -> Optional[pb.EventEnvelope]:
        if len(frames) != 2:
            self.dropped += 1
            return None
        try:
            event = pb.EventEnvelope.FromString(frames[1])
            topic = frames[0].decode()
        except (DecodeError, UnicodeDecodeError):
            self.dropped += 1
            return None
        if not event.topic:
            event.topic = topic
        elif event.topic != topic:
            self.dropped += 1
            return None
        return event
