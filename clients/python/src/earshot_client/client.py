"""The RPC client: a ZeroMQ DEALER speaking the ``EARSHOT/1`` envelope protocol to earshotd's ROUTER.

Every request is two frames, ``b"EARSHOT/1"`` | ``RequestEnvelope``; every reply two frames,
``b"EARSHOT/1"`` | ``ResponseEnvelope``. A unary call gets one END (status + result); a
server-streaming call gets MESSAGE… then END. Replies are matched to calls by ``request_id``, so
a stream can stay open while other calls are made on the same client (from the same thread).
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import threading
import time
import weakref
from contextlib import contextmanager
from typing import Callable, Deque, Dict, Generic, Iterator, List, Mapping, Optional, Tuple, Type, TypeVar, Union

import zmq

from .keys import curve_keys
from google.protobuf.message import DecodeError, Message

from . import pb
from .errors import RpcError, StatusCode
from .protocol import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_SERVER,
    MAX_CHUNK_BYTES,
    MAX_TIMEOUT_MS,
    SIGNATURE,
    Methods,
    check_metadata,
    check_method,
    normalize_endpoint,
)

T = TypeVar("T")
M = TypeVar("M", bound=Message)

_CALL = pb.RequestEnvelope.CONTROL_CALL
_CANCEL = pb.RequestEnvelope.CONTROL_CANCEL
_PING = pb.RequestEnvelope.CONTROL_PING
_MESSAGE = pb.ResponseEnvelope.KIND_MESSAGE
_END = pb.ResponseEnvelope.KIND_END
_PONG = pb.ResponseEnvelope.KIND_PONG

#: (server public key, client public key, client secret key), Z85 text or 32 raw bytes each.
CurveKeys = Tuple[Union[str, bytes], Union[str, bytes], Union[str, bytes]]


def _as_key(key: Union[str, bytes]) -> bytes:
    return key.encode("ascii") if isinstance(key, str) else bytes(key)


def configure_socket(socket: zmq.Socket, *, curve: Optional[CurveKeys] = None) -> None:
    """Options both of this package's sockets use (reference/rpc.md §5): LINGER 0 and ZMTP
    heartbeats (2 s interval, 6 s timeout/TTL), so a dead peer is noticed; CURVE when given."""
    socket.setsockopt(zmq.LINGER, 0)
    for name, value in (("HEARTBEAT_IVL", 2000), ("HEARTBEAT_TIMEOUT", 6000), ("HEARTBEAT_TTL", 6000)):
        option = getattr(zmq, name, None)
        if option is not None:
            socket.setsockopt(option, value)
    if curve is not None:
        server_key, public_key, secret_key = curve
        socket.setsockopt(zmq.CURVE_SERVERKEY, _as_key(server_key))
        socket.setsockopt(zmq.CURVE_PUBLICKEY, _as_key(public_key))
        socket.setsockopt(zmq.CURVE_SECRETKEY, _as_key(secret_key))


def _curve(curve, server_key, client_key):
    """``curve`` as given, or built from ``server_key`` (Z85 or file) and ``client_key`` (a
    secret key file or a (public, secret) pair): both are needed, as the daemon needs both."""
    if server_key is None and client_key is None:
        return curve
    if server_key is None or client_key is None:
        raise ValueError("server_key and client_key go together: the daemon's public key and this client's key")
    return curve_keys(server_key, client_key)


def _timeout_ms(seconds: float) -> int:
    """Relative deadline for the envelope: at least 1 (0 would mean "the server's default")."""
    return max(1, min(MAX_TIMEOUT_MS, math.ceil(seconds * 1000)))


def _check_timeout(timeout: Optional[float], what: str = "timeout") -> None:
    if timeout is not None and not timeout > 0:
        raise ValueError(f"{what} must be a positive number of seconds, not {timeout!r}")


#: A signed catalog ends with this trailer: the magic, the author's Ed25519 public key (32
#: bytes) and the signature (64 bytes).
SIGNATURE_TRAILER_MAGIC = b"EARSIG01"
SIGNATURE_TRAILER_BYTES = len(SIGNATURE_TRAILER_MAGIC) + 32 + 64
CATALOG_EXTENSION = ".earcat"
_MAX_OUT_OF_RANGE = 8
_READ_BYTES = 1 << 20


def catalog_name_of(path: Union[str, "os.PathLike[str]"]) -> str:
    """The catalog name a file installs as by default: its name without ``.earcat``."""
    base = os.path.basename(os.fspath(path))
    return base[: -len(CATALOG_EXTENSION)] if base.endswith(CATALOG_EXTENSION) and base != CATALOG_EXTENSION else base


def catalog_signer_key(data: Union[bytes, bytearray, memoryview]) -> Optional[bytes]:
    """The author's 32-byte public key from a catalog's signature trailer (the file's last 104
    bytes, starting with ``EARSIG01``), or None for an unsigned catalog. ``data``: the whole
    file, or at least its last 104 bytes. The signature itself is checked by the daemon."""
    tail = bytes(data[-SIGNATURE_TRAILER_BYTES:]) if len(data) >= SIGNATURE_TRAILER_BYTES else b""
    if not tail.startswith(SIGNATURE_TRAILER_MAGIC):
        return None
    start = len(SIGNATURE_TRAILER_MAGIC)
    return tail[start : start + 32]


def _scan_catalog_file(f) -> Tuple[int, bytes, Optional[bytes]]:
    """(size, SHA-256, signer key or None) of an open file, read once in pieces."""
    digest = hashlib.sha256()
    size = 0
    tail = b""
    while True:
        block = f.read(_READ_BYTES)
        if not block:
            break
        digest.update(block)
        size += len(block)
        tail = (tail + block)[-SIGNATURE_TRAILER_BYTES:]
    return size, digest.digest(), catalog_signer_key(tail)


def _digest_bytes(sha256: Union[bytes, bytearray, memoryview, str]) -> bytes:
    """A SHA-256 as 32 bytes, given as bytes or as 64 hex digits (sha256sum's form)."""
    if isinstance(sha256, str):
        try:
            digest = bytes.fromhex(sha256)
        except ValueError:
            raise ValueError(f"sha256 {sha256!r}: expected 64 hex digits or 32 bytes") from None
    else:
        digest = bytes(sha256)
    if len(digest) != 32:
        raise ValueError(f"sha256: expected 32 bytes (or 64 hex digits), got {len(digest)} bytes")
    return digest


class RawJson(str):
    """JSON text given as it is, for :meth:`Client.library_items`' ``property`` filter
    (``("genre", RawJson('"jazz"'))``); any other value is ``json.dumps``-ed."""


def _property_filter(prop) -> Tuple[str, str]:
    """``(key, value)`` → (key, JSON text of value)."""
    try:
        key, value = prop
    except (TypeError, ValueError):
        raise ValueError(f"property: expected (key, value), not {prop!r}") from None
    if not isinstance(key, str) or not key:
        raise ValueError(f"property: the key must be a non-empty str, not {key!r}")
    if isinstance(value, RawJson):
        try:
            json.loads(value)
        except ValueError:
            raise ValueError(f"property {key!r}: {str(value)!r} is not JSON text") from None
        return key, str(value)
    try:
        return key, json.dumps(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"property {key!r}: {value!r} cannot be written as JSON ({error})") from None


def _as_list(items) -> list:
    """One item (a message, or an ``(item, matched_at)`` pair) as a list of one; a list as is."""
    if isinstance(items, Message):
        return [items]
    if isinstance(items, tuple) and len(items) == 2 and isinstance(items[1], int) and not isinstance(items[1], bool):
        return [items]
    return list(items)


def _new_library_item(item) -> "pb.NewLibraryItem":
    """A ``NewLibraryItem`` from what :meth:`Client.library_add` accepts."""
    if isinstance(item, pb.NewLibraryItem):
        return item
    if isinstance(item, pb.MatchedMediaItem):
        return pb.NewLibraryItem(item=item)
    if isinstance(item, pb.MatchResult):
        if item.outcome != pb.MATCH_OUTCOME_MATCH or not item.items:
            raise ValueError("library_add: a MatchResult without a match has no item to add")
        return pb.NewLibraryItem(item=item.items[0], matched_at_unix_ms=item.made_at_unix_ms)
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], pb.MatchedMediaItem):
        return pb.NewLibraryItem(item=item[0], matched_at_unix_ms=int(item[1]))
    raise TypeError(
        "library_add: expected MatchedMediaItem, (MatchedMediaItem, matched_at_unix_ms), NewLibraryItem or"
        f" MatchResult, not {type(item).__name__}"
    )


class Client:
    """A connection to earshotd's RPC socket.

    ``server`` is a ZeroMQ endpoint (``tcp://host:7400``; ``host:port`` means tcp). ``timeout``
    (seconds) is the deadline of every unary call that does not give its own: when the daemon
    does not answer in time (or cannot be reached at all), the call raises :class:`RpcError`
    DEADLINE_EXCEEDED naming the endpoint instead of waiting forever.

    **Threads:** a Client wraps one ZeroMQ socket, which is not thread-safe. Use one Client per
    thread (they are cheap; all share one ZeroMQ context). A Client used by two threads at once
    raises RuntimeError rather than corrupt the socket. Within one thread, streams and unary calls
    may be interleaved freely.

    ``metadata`` is sent with every call (lowercase keys of ``[0-9a-z_.-]``); ``curve`` =
    (server public key, client public key, client secret key) turns on CURVE encryption;
    ``ping_interval``: how often an open stream that hears nothing PINGs the server, while a
    thread waits in ``next()`` on it (a PING unanswered for 2 intervals ends the stream with
    UNAVAILABLE: the daemon is gone).
    """

    def __init__(
        self,
        server: str = DEFAULT_SERVER,
        timeout: float = 10.0,
        *,
        context: Optional[zmq.Context] = None,
        metadata: Optional[Mapping[str, str]] = None,
        curve: Optional[CurveKeys] = None,
        ping_interval: float = 5.0,
        server_key=None,
        client_key=None,
    ) -> None:
        curve = _curve(curve, server_key, client_key)
        _check_timeout(timeout)
        _check_timeout(ping_interval, "ping_interval")
        self.server = normalize_endpoint(server)
        self.timeout = float(timeout)
        self.metadata = check_metadata(metadata)
        self.ping_interval = float(ping_interval)
        #: Replies dropped because they were malformed (wrong signature, not a ResponseEnvelope).
        self.dropped_replies = 0
        #: Replies for calls no longer waited for (after a deadline or a cancel); dropped.
        self.stale_replies = 0
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.DEALER)
        try:
            configure_socket(self._socket, curve=curve)
            # IMMEDIATE: queue nothing until the connection is up, so a send to a daemon that is
            # not there fails (and times out) instead of sitting in a queue.
            self._socket.setsockopt(zmq.IMMEDIATE, 1)
            self._socket.setsockopt(zmq.SNDHWM, 1000)
            self._socket.setsockopt(zmq.RCVHWM, 1000)
            self._socket.connect(self.server)
        except BaseException:
            self._socket.close(linger=0)
            raise
        self._next_id = 1
        self._inbox: Dict[int, Deque[pb.ResponseEnvelope]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._streams: "weakref.WeakSet[ResponseStream]" = weakref.WeakSet()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Cancels open streams and closes the socket. Idempotent."""
        if self._closed:
            return
        if not self._lock.acquire(timeout=1.0):
            raise RuntimeError("earshot_client.Client.close(): another thread is using this client")
        try:
            cancelled = False
            for stream in list(self._streams):
                if not stream.done:
                    stream._finish_locally(StatusCode.CANCELLED, "closed by the client")
                    cancelled |= self._send_control(stream.request_id, _CANCEL)
            self._closed = True
            # Give queued CANCELs a moment to leave; otherwise drop everything at once.
            self._socket.close(linger=200 if cancelled else 0)
            self._inbox.clear()
        finally:
            self._lock.release()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.server!r}, timeout={self.timeout:g}{', closed' if self._closed else ''})"

    @property
    def socket(self) -> zmq.Socket:
        """The DEALER socket (for polling it with others; do not read from it yourself)."""
        return self._socket

    # -- generic calls -----------------------------------------------------------------------

    def call(
        self,
        method: str,
        request: Union[Message, bytes],
        response_type: Optional[Type[M]] = None,
        timeout: Optional[float] = None,
        *,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Union[M, bytes]:
        """Calls a unary method and returns its result, parsed as ``response_type`` (the raw
        payload bytes when ``response_type`` is None). ``request`` is a message or already
        serialized bytes. Raises :class:`RpcError` on any status but OK, and DEADLINE_EXCEEDED
        when no answer comes within ``timeout`` (default: the client's) — the call is then
        cancelled on the server."""
        _check_timeout(timeout)
        seconds = self.timeout if timeout is None else float(timeout)
        with self._guard():
            deadline = time.monotonic() + seconds
            request_id = self._start(method, request, deadline, _timeout_ms(seconds), metadata, deadline)
            try:
                while True:
                    reply = self._receive(request_id, deadline)
                    if reply is None:
                        self._send_control(request_id, _CANCEL)
                        raise RpcError(
                            StatusCode.DEADLINE_EXCEEDED,
                            f"no answer from {self.server} within {seconds:g} s",
                            method=method,
                        )
                    if reply.kind == _END:
                        return self._result(reply, response_type, method)
                    # MESSAGE on a unary call, or a PONG: not a result; keep waiting for END.
            finally:
                self._inbox.pop(request_id, None)

    def stream(
        self,
        method: str,
        request: Union[Message, bytes],
        response_type: Optional[Type[M]] = None,
        timeout: Optional[float] = None,
        *,
        metadata: Optional[Mapping[str, str]] = None,
        transform: Optional[Callable[[M], T]] = None,
    ) -> "ResponseStream":
        """Starts a server-streaming call and returns its :class:`ResponseStream` (an iterator of
        ``response_type`` messages, or of ``transform(message)``). ``timeout`` is the whole
        call's deadline; None = none (the stream runs until the server ends it or it is closed).
        Closing the stream (``close()``, leaving a ``with`` block, dropping it) sends CANCEL.
        The request is sent at once; if no connection to the server comes up within the client's
        timeout, this raises DEADLINE_EXCEEDED."""
        _check_timeout(timeout)
        with self._guard():
            now = time.monotonic()
            deadline = None if timeout is None else now + float(timeout)
            timeout_ms = MAX_TIMEOUT_MS if timeout is None else _timeout_ms(float(timeout))
            send_deadline = now + (self.timeout if timeout is None else min(self.timeout, float(timeout)))
            request_id = self._start(method, request, deadline, timeout_ms, metadata, send_deadline)
            stream = ResponseStream(self, method, request_id, response_type, deadline, transform)
            self._streams.add(stream)
            return stream

    def ping(self, timeout: Optional[float] = None) -> float:
        """Sends a PING and returns the round trip to its PONG in seconds."""
        _check_timeout(timeout)
        seconds = self.timeout if timeout is None else float(timeout)
        with self._guard():
            start = time.monotonic()
            deadline = start + seconds
            request_id = self._new_id()
            self._inbox[request_id] = collections.deque()
            try:
                envelope = pb.RequestEnvelope(request_id=request_id, control=_PING, timeout_ms=_timeout_ms(seconds))
                self._send(envelope, deadline, "PING")
                while True:
                    reply = self._receive(request_id, deadline)
                    if reply is None:
                        raise RpcError(
                            StatusCode.DEADLINE_EXCEEDED,
                            f"no PONG from {self.server} within {seconds:g} s",
                            method="PING",
                        )
                    if reply.kind == _PONG:
                        return time.monotonic() - start
                    if reply.kind == _END:
                        self._result(reply, None, "PING")
                        raise RpcError(StatusCode.INTERNAL, "the server ended a PING without a PONG", method="PING")
            finally:
                self._inbox.pop(request_id, None)

    # -- the earshot.v1 services -------------------------------------------------------------

    def prepare(self, timeout: Optional[float] = None) -> pb.PrepareResponse:
        """Recognizer/Prepare: start prerecording so a later match answers from audio already
        heard. ``.state`` is the session's state (``pb.SESSION_STATE_PRERECORDING``…)."""
        return self.call(Methods.PREPARE, pb.PrepareRequest(), pb.PrepareResponse, timeout)

    def match(self, timeout: Optional[float] = None, *, add_to_library: bool = False) -> pb.MatchResult:
        """Recognizer/Match: one result. Immediate when the session has prerecorded enough;
        otherwise the daemon listens up to the catalog's maximum query duration, so give an
        unprepared session a timeout longer than that.

        ``add_to_library``: also add the top item to the caller's library in the same call.
        ``.library`` (``LibraryAddStatus``) then says how that went: ``.code`` 0 (OK) with
        ``.item_ids`` and ``.version``, or a status code and ``.message`` (FAILED_PRECONDITION
        when there was no match to add). The match itself is answered either way."""
        return self.call(Methods.MATCH, pb.MatchRequest(add_to_library=add_to_library), pb.MatchResult, timeout)

    def stream_matches(
        self, include_repeats: bool = False, timeout: Optional[float] = None, *, add_to_library: bool = False
    ) -> "ResponseStream":
        """Recognizer/StreamMatches: a :class:`ResponseStream` of ``MatchResult`` as the programme
        plays (``include_repeats``: also results that repeat the previous item). Iterate it;
        ``close()`` it (or use ``with``) to cancel. ``add_to_library``: add each new match (not
        repeats) to the caller's library; such results carry ``.library`` as in :meth:`match`."""
        request = pb.StreamMatchesRequest(include_repeats=include_repeats, add_to_library=add_to_library)
        return self.stream(Methods.STREAM_MATCHES, request, pb.MatchResult, timeout)

    def match_signature(
        self, signature: Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"], timeout: Optional[float] = None
    ) -> pb.MatchResult:
        """Recognizer/MatchSignature: match a signature made by the client (the bytes of an
        ``.earsig`` file, or a path to one)."""
        if isinstance(signature, (str, os.PathLike)):
            with open(signature, "rb") as f:
                signature = f.read()
        return self.call(
            Methods.MATCH_SIGNATURE, pb.MatchSignatureRequest(signature=bytes(signature)), pb.MatchResult, timeout
        )

    def cancel(self, timeout: Optional[float] = None) -> pb.CancelResponse:
        """Recognizer/Cancel: end every attempt and stop prerecording (to cancel one stream, close
        that stream instead)."""
        return self.call(Methods.CANCEL, pb.CancelRequest(), pb.CancelResponse, timeout)

    def snapshot(self, timeout: Optional[float] = None) -> pb.SessionSnapshot:
        """Session/GetSnapshot: state, current match, epoch and per-topic sequence numbers."""
        return self.call(Methods.GET_SNAPSHOT, pb.GetSnapshotRequest(), pb.SessionSnapshot, timeout)

    # Catalogs: List is open to every role (it is the catalog/ topic's snapshot); every other
    # method of earshot.v1.Catalogs needs the admin role (a CURVE key listed as admin, or a
    # daemon with security.mode = "none"); others get PERMISSION_DENIED.

    def catalogs(self, timeout: Optional[float] = None) -> List[pb.CatalogSummary]:
        """Catalogs/List, the catalogs only: every catalog the daemon holds (``.active``: matches
        search it; ``.state``, ``.version``, ``.sha256``…). :meth:`list_catalogs` also gives the
        uploads in progress."""
        return list(self.list_catalogs(timeout).catalogs)

    def list_catalogs(self, timeout: Optional[float] = None) -> pb.ListCatalogsResponse:
        """Catalogs/List: ``.catalogs`` (``CatalogSummary``), ``.uploads`` in progress
        (``UploadStatus``; to an admin only), and ``.epoch`` / ``.topic_seq`` to follow the ``catalog/`` topic from
        (drop its events with ``seq <= topic_seq[Topics.CATALOG]`` of this epoch)."""
        return self.call(Methods.LIST_CATALOGS, pb.ListCatalogsRequest(), pb.ListCatalogsResponse, timeout)

    def describe_catalog(self, name: str, timeout: Optional[float] = None) -> pb.CatalogDescription:
        """Catalogs/Describe: a catalog's references and their media items (NOT_FOUND if none
        has that name; FAILED_PRECONDITION if it has no version that verified)."""
        return self.call(Methods.DESCRIBE_CATALOG, pb.DescribeCatalogRequest(name=name), pb.CatalogDescription, timeout)

    def enable_catalog(self, name: str, timeout: Optional[float] = None) -> pb.CatalogSummary:
        """Catalogs/Enable: matches search the catalog from now on (kept across restarts).
        Returns its summary; NOT_FOUND for an unknown name, FAILED_PRECONDITION if no version of
        it verified."""
        return self.call(Methods.ENABLE_CATALOG, pb.CatalogNameRequest(name=name), pb.CatalogSummary, timeout)

    def disable_catalog(self, name: str, timeout: Optional[float] = None) -> pb.CatalogSummary:
        """Catalogs/Disable: matches stop searching the catalog; its file is kept. Returns its
        summary; NOT_FOUND for an unknown name."""
        return self.call(Methods.DISABLE_CATALOG, pb.CatalogNameRequest(name=name), pb.CatalogSummary, timeout)

    def remove_catalog(self, name: str, timeout: Optional[float] = None) -> pb.RemoveCatalogResponse:
        """Catalogs/Remove: deletes the catalog's file (matches already running finish on it).
        ``.removed`` is its last summary; NOT_FOUND for an unknown name."""
        return self.call(Methods.REMOVE_CATALOG, pb.CatalogNameRequest(name=name), pb.RemoveCatalogResponse, timeout)

    def begin_upload(
        self,
        name: str,
        size: int,
        sha256: Union[bytes, str],
        *,
        signer_key: Optional[bytes] = None,
        enable: bool = False,
        timeout: Optional[float] = None,
    ) -> pb.UploadStatus:
        """Catalogs/BeginUpload: starts uploading a catalog file of ``size`` bytes whose SHA-256
        is ``sha256`` (32 bytes, or 64 hex digits) to install as ``name``. When an upload of the
        same name, size and SHA-256 is in progress, the daemon resumes it (``.resumed``):
        ``.offset`` is where the next piece goes. ``signer_key``: the 32-byte public key of the
        signature in the file, so an untrusted author is refused (PERMISSION_DENIED) before the
        transfer. ``enable``: enable the catalog once installed (a new name only). Most callers
        want :meth:`push_catalog`, which does the whole upload."""
        digest = _digest_bytes(sha256)
        request = pb.BeginUploadRequest(name=name, size=int(size), sha256=digest, enable=enable)
        if signer_key:
            request.signer_key = bytes(signer_key)
        return self.call(Methods.BEGIN_UPLOAD, request, pb.UploadStatus, timeout)

    def upload_chunk(
        self, upload_id: str, offset: int, data: Union[bytes, bytearray, memoryview], timeout: Optional[float] = None
    ) -> pb.UploadStatus:
        """Catalogs/UploadChunk: the bytes of the file at ``offset`` (1 MiB pieces are
        recommended; the message limit is 4 MiB). The reply's ``.offset`` is the bytes now held.
        A piece already held is acknowledged without being written twice; one that starts past
        what is held is refused with OUT_OF_RANGE (ask :meth:`get_upload` where to go on)."""
        request = pb.UploadChunkRequest(upload_id=upload_id, offset=int(offset), data=bytes(data))
        return self.call(Methods.UPLOAD_CHUNK, request, pb.UploadStatus, timeout)

    def get_upload(self, upload_id: str, timeout: Optional[float] = None) -> pb.UploadStatus:
        """Catalogs/GetUpload: an upload in progress (NOT_FOUND once committed, aborted or expired)."""
        return self.call(Methods.GET_UPLOAD, pb.UploadRequest(upload_id=upload_id), pb.UploadStatus, timeout)

    def commit_upload(self, upload_id: str, timeout: Optional[float] = None) -> pb.CommitUploadResponse:
        """Catalogs/CommitUpload: verifies the whole file (SHA-256, structure, signature) and
        installs it. ``.catalog`` is the installed catalog's summary, ``.replaced`` whether it
        replaced an earlier version of the name. Refusals: DATA_LOSS (the bytes do not have the
        declared SHA-256), INVALID_ARGUMENT (not a valid catalog, or a bad signature),
        PERMISSION_DENIED (an untrusted author), FAILED_PRECONDITION (bytes still missing). A
        refused file is deleted by the daemon: begin again."""
        return self.call(Methods.COMMIT_UPLOAD, pb.UploadRequest(upload_id=upload_id), pb.CommitUploadResponse, timeout)

    def abort_upload(self, upload_id: str, timeout: Optional[float] = None) -> pb.UploadStatus:
        """Catalogs/AbortUpload: deletes an upload in progress and its bytes; returns its last status."""
        return self.call(Methods.ABORT_UPLOAD, pb.UploadRequest(upload_id=upload_id), pb.UploadStatus, timeout)

    def push_catalog(
        self,
        path: Union[str, "os.PathLike[str]"],
        name: Optional[str] = None,
        *,
        enable: bool = False,
        chunk_size: int = DEFAULT_CHUNK_BYTES,
        progress: Optional[Callable[[int, int], None]] = None,
        timeout: Optional[float] = None,
        commit_timeout: float = 120.0,
    ) -> pb.CommitUploadResponse:
        """Uploads the catalog file at ``path`` and installs it as ``name`` (default: the file
        name without ``.earcat``); returns the ``CommitUploadResponse`` (``.catalog.version``,
        ``.replaced``…). Needs the admin role.

        Resumable: the file is hashed first (SHA-256, read in pieces), and BeginUpload with the
        same name, size and digest resumes an upload an earlier push left unfinished (killed,
        timed out, disconnected), so calling this again sends only the bytes the daemon does not
        hold yet. Pieces of ``chunk_size`` bytes (1 MiB; at most 4 MiB less 64 KiB) go from the
        offset the daemon returns; after an OUT_OF_RANGE the push asks GetUpload where to go on.

        ``progress(sent_bytes, total_bytes)`` is called once before the first piece (with the
        offset the upload resumes from, 0 for a new one) and after every acknowledged piece; an
        exception it raises stops the push, leaving the upload to resume. ``enable``: enable the
        catalog once installed (a new name; a replaced catalog keeps its state; a resumed
        upload takes this call's choice). ``timeout``: the deadline of each call
        (default: the client's); ``commit_timeout`` that of the commit, which verifies the whole
        file.

        A signed catalog (the last 104 bytes are the ``EARSIG01`` trailer) declares its author's
        public key, so a daemon that does not trust the author refuses it (PERMISSION_DENIED)
        before the transfer. Other refusals are :class:`RpcError`: RESOURCE_EXHAUSTED (too large,
        too many uploads, no disk space), DATA_LOSS (the file changed while it was sent),
        INVALID_ARGUMENT (a bad name, not a valid catalog, a bad signature).
        """
        if not isinstance(chunk_size, int) or not 0 < chunk_size <= MAX_CHUNK_BYTES:
            raise ValueError(f"chunk_size must be 1 to {MAX_CHUNK_BYTES} bytes, not {chunk_size!r}")
        _check_timeout(timeout)
        _check_timeout(commit_timeout, "commit_timeout")
        if name is None:
            name = catalog_name_of(path)
        with open(path, "rb") as f:
            size, digest, signer_key = _scan_catalog_file(f)
            status = self.begin_upload(name, size, digest, signer_key=signer_key, enable=enable, timeout=timeout)
            upload_id = status.upload_id
            offset = status.offset
            if progress is not None:
                progress(offset, size)
            refusals = 0  # OUT_OF_RANGE in a row, without a piece acknowledged in between
            while offset < size:
                f.seek(offset)
                data = f.read(min(chunk_size, size - offset))
                if len(data) != min(chunk_size, size - offset):
                    raise OSError(
                        f"{os.fspath(path)}: the file shrank while it was sent (now {offset + len(data)} bytes)"
                    )
                try:
                    status = self.upload_chunk(upload_id, offset, data, timeout)
                except RpcError as error:
                    refusals += 1
                    if error.code != StatusCode.OUT_OF_RANGE or refusals > _MAX_OUT_OF_RANGE:
                        raise
                    held = self.get_upload(upload_id, timeout).offset
                    if held == offset or held > size:
                        raise  # not a question of where to send from (e.g. the piece passes the size)
                    offset = held
                    continue
                if status.offset <= offset:
                    raise RpcError(
                        StatusCode.INTERNAL,
                        f"{self.server} acknowledged a piece of {len(data)} bytes at offset {offset}"
                        f" but holds only {status.offset}",
                        method=Methods.UPLOAD_CHUNK,
                    )
                refusals = 0
                offset = status.offset
                if progress is not None:
                    progress(offset, size)
            return self.commit_upload(upload_id, commit_timeout)

    # Cues: events on a reference's timeline (HLS-interstitial-like), fired by the daemon from
    # what it hears. Reading needs any role; set_cues / clear_cues need operator or admin (the
    # controller). A reference is named by catalog and index, or by one of its media item ids;
    # naming neither means the programme being followed.

    @staticmethod
    def _cue_reference(catalog: str, reference: int, media_item_id: str) -> "pb.CueScheduleRequest":
        return pb.CueScheduleRequest(catalog=catalog, reference_index=reference, media_item_id=media_item_id)

    def cue_schedule(
        self, catalog: str = "", reference: int = 0, *, media_item_id: str = "", timeout: Optional[float] = None
    ) -> pb.CueSchedule:
        """Cues/GetSchedule: ``.cues`` in timeline order (``.end`` filled where a cue ends),
        ``.reference_duration``, ``.programme`` and ``.source`` (catalog or controller)."""
        return self.call(
            Methods.GET_CUE_SCHEDULE, self._cue_reference(catalog, reference, media_item_id), pb.CueSchedule, timeout
        )

    def current_cues(self, timeout: Optional[float] = None) -> pb.CueState:
        """Cues/GetCurrent: ``.phase``, ``.programme``, ``.position`` at ``.taken_at_unix_ms`` and
        ``.rate``, the ``.current`` cues and the ``.next`` one, due at ``.next_due_unix_ms``."""
        return self.call(Methods.GET_CURRENT_CUES, pb.GetCurrentCuesRequest(), pb.CueState, timeout)

    def set_cues(
        self,
        cues,
        catalog: str = "",
        reference: int = 0,
        *,
        media_item_id: str = "",
        timeout: Optional[float] = None,
    ) -> pb.CueSchedule:
        """Cues/SetCues (operator or admin): replaces the reference's cues (``pb.Cue`` messages)
        until :meth:`clear_cues` or a new version of the catalog. INVALID_ARGUMENT names the
        first bad cue; nothing changes then."""
        request = pb.SetCuesRequest(reference=self._cue_reference(catalog, reference, media_item_id), cues=list(cues))
        return self.call(Methods.SET_CUES, request, pb.CueSchedule, timeout)

    def clear_cues(
        self, catalog: str = "", reference: int = 0, *, media_item_id: str = "", timeout: Optional[float] = None
    ) -> pb.CueSchedule:
        """Cues/ClearCues (operator or admin): the catalog's own cues serve again."""
        return self.call(
            Methods.CLEAR_CUES, self._cue_reference(catalog, reference, media_item_id), pb.CueSchedule, timeout
        )

    def stream_cues(self, timeout: Optional[float] = None) -> "ResponseStream":
        """Cues/StreamCues: ``pb.CueEvent`` messages as they happen; the first has kind
        ``pb.CueEvent.KIND_STATE`` and carries ``.state`` (as :meth:`current_cues`)."""
        return self.stream(Methods.STREAM_CUES, pb.StreamCuesRequest(), pb.CueEvent, timeout)

    # Library: each client keeps the items it matched, on the box. A library belongs to the
    # caller's key (its allow-list name; "local", shared by everyone, when security is off):
    # nobody sees or removes another owner's items. The viewer role is enough for library_add,
    # library_items, library_remove and watch_library; library_owners, library_delete_owner,
    # library_backup and reading another owner's items need admin. LibraryMirror (in
    # earshot_client.library) keeps a local copy up to date with watch_library.

    def library_add(self, items, timeout: Optional[float] = None) -> pb.LibraryWriteResponse:
        """Library/Add: adds matched items to the caller's library, all or nothing; the reply
        comes once the change is on disk. ``items``: one or a list of ``pb.MatchedMediaItem``
        (as a match result gave it; matched "now"), ``(item, matched_at_unix_ms)`` pairs,
        ``pb.NewLibraryItem`` or ``pb.MatchResult`` (its top item, matched at its
        ``made_at_unix_ms``). The reply: ``.items`` as stored (with their ``.id``, in the order
        given), ``.version`` and ``.item_count`` of the library after the change, and
        ``.owner_hash`` (how notices on ``Topics.LIBRARY`` name this library).
        INVALID_ARGUMENT names the first bad item (no catalog, confidence outside 0…1, custom
        properties that are not a JSON object…): nothing is added then. RESOURCE_EXHAUSTED: the
        library (or the box's disk) is full."""
        request = pb.AddLibraryItemsRequest(items=[_new_library_item(i) for i in _as_list(items)])
        return self.call(Methods.LIBRARY_ADD, request, pb.LibraryWriteResponse, timeout)

    def library_items(
        self,
        page_size: int = 50,
        page_token: str = "",
        *,
        catalog: str = "",
        matched_from_ms: int = 0,
        matched_before_ms: int = 0,
        property: Optional[Tuple[str, object]] = None,
        owner: str = "",
        timeout: Optional[float] = None,
    ) -> pb.LibraryItemsResponse:
        """Library/Items: one page of the caller's items, newest match first. ``page_size``: 1 to
        1000 (0: the daemon's 50); pass the reply's ``.next_page_token`` as ``page_token`` for
        the next page (it is ``""`` on the last). Filters: ``catalog``; the match time
        ``matched_from_ms`` ≤ t < ``matched_before_ms`` (Unix ms, 0 = open); ``property`` =
        ``(key, value)`` of the media item's custom properties, compared as JSON: ``("genre",
        "jazz")``, ``("season", 3)``, ``("live", True)`` — a Python value is ``json.dumps``-ed; for
        JSON text as it is, pass ``RawJson('"jazz"')``. The reply also has the library's
        ``.version``, ``.item_count``, ``.bytes`` and ``.owner_hash`` (all items, not only the
        filtered ones). ``owner``: another owner's name (admin only, an export; others get
        PERMISSION_DENIED). :meth:`library_all_items` pages through everything."""
        request = pb.LibraryItemsRequest(
            page_size=int(page_size),
            page_token=page_token,
            catalog=catalog,
            matched_from_unix_ms=int(matched_from_ms),
            matched_before_unix_ms=int(matched_before_ms),
            owner=owner,
        )
        if property is not None:
            request.property_key, request.property_value_json = _property_filter(property)
        return self.call(Methods.LIBRARY_ITEMS, request, pb.LibraryItemsResponse, timeout)

    def library_all_items(
        self,
        page_size: int = 200,
        *,
        catalog: str = "",
        matched_from_ms: int = 0,
        matched_before_ms: int = 0,
        property: Optional[Tuple[str, object]] = None,
        owner: str = "",
        timeout: Optional[float] = None,
        pages: Optional[List[pb.LibraryItemsResponse]] = None,
    ) -> Iterator[pb.LibraryItem]:
        """Every matching item (``pb.LibraryItem``), newest match first, read a page of
        ``page_size`` at a time as the generator is iterated (arguments as for
        :meth:`library_items`). Paging goes by position (match time), so items added or removed
        meanwhile never make another item appear twice or be skipped; the pages may come from
        different versions, though: to mirror a library, follow up with :meth:`watch_library`
        from the *first* page's version (``pages``, a list, receives each reply; or use
        :class:`~earshot_client.LibraryMirror`, which does this)."""
        token = ""
        while True:
            page = self.library_items(
                page_size,
                token,
                catalog=catalog,
                matched_from_ms=matched_from_ms,
                matched_before_ms=matched_before_ms,
                property=property,
                owner=owner,
                timeout=timeout,
            )
            if pages is not None:
                pages.append(page)
            yield from page.items
            token = page.next_page_token
            if not token:
                return

    def library_remove(self, ids, timeout: Optional[float] = None) -> pb.LibraryWriteResponse:
        """Library/Remove: removes items by id (a str or a list; ``pb.LibraryItem`` works too),
        all or nothing: an id that is not one of the caller's items (unknown, or another
        owner's) fails the call with NOT_FOUND and nothing is removed. The reply has the
        ``.version`` and ``.item_count`` after the change."""
        if isinstance(ids, (str, pb.LibraryItem)):
            ids = [ids]
        request = pb.RemoveLibraryItemsRequest(ids=[i.id if isinstance(i, pb.LibraryItem) else str(i) for i in ids])
        return self.call(Methods.LIBRARY_REMOVE, request, pb.LibraryWriteResponse, timeout)

    def watch_library(self, from_version: int = 0, timeout: Optional[float] = None) -> "ResponseStream":
        """Library/WatchLibrary: a :class:`ResponseStream` of ``pb.LibraryChange``. First every
        change after ``from_version`` (the last version you applied; 0 = from the first),
        oldest first; then one ``KIND_CURRENT`` (you are at its ``.version``); then each
        change as it commits. Kinds: ``KIND_ADDED`` (``.item_ids``, and ``.items`` for those
        still in the library), ``KIND_REMOVED`` (``.item_ids``), ``KIND_CLEARED`` (an admin
        deleted all the items), ``KIND_RESYNC`` (the change log, 1000 changes per owner by
        default, does not reach back to ``from_version``, ``from_version`` is ahead of the
        library, or the library was restored from a backup: read the items again with
        :meth:`library_all_items`; changes go on from its ``.version``). Every change has ``.version`` (one more than the one before) and
        ``.item_count`` (the items when it was sent). After a disconnect, watch again from the
        last version applied: nothing is missed or repeated. :class:`~earshot_client.LibraryMirror`
        does all of this."""
        return self.stream(
            Methods.WATCH_LIBRARY, pb.WatchLibraryRequest(from_version=int(from_version)), pb.LibraryChange, timeout
        )

    def library_owners(self, timeout: Optional[float] = None) -> List[pb.LibraryOwner]:
        """Library/ListOwners (admin): every owner that has a library, by name, with its
        ``.owner_hash``, ``.version``, ``.item_count``, ``.bytes``, ``.changed_at_unix_ms`` and
        ``.allowed`` (False once its key left the allow-list: its items stay until
        :meth:`library_delete_owner`)."""
        return list(
            self.call(
                Methods.LIBRARY_LIST_OWNERS, pb.ListLibraryOwnersRequest(), pb.ListLibraryOwnersResponse, timeout
            ).owners
        )

    def library_delete_owner(self, owner: str, timeout: Optional[float] = None) -> pb.LibraryWriteResponse:
        """Library/DeleteOwner (admin): deletes every item of ``owner`` (an allow-list name, as
        :meth:`library_owners` lists them); its watchers see one ``KIND_CLEARED`` change.
        NOT_FOUND when that owner has no library."""
        return self.call(
            Methods.LIBRARY_DELETE_OWNER, pb.DeleteLibraryOwnerRequest(owner=owner), pb.LibraryWriteResponse, timeout
        )

    def library_backup(self, timeout: Optional[float] = None) -> pb.LibraryBackupResponse:
        """Library/Backup (admin): the daemon writes a consistent copy of the whole library
        database on its box (in ``<state>/library-backups/``; the newest copies are kept) while
        it goes on serving. The reply: ``.path`` on the box, ``.bytes``, ``.sha256`` (hex),
        ``.owners`` and ``.items`` in the copy."""
        return self.call(Methods.LIBRARY_BACKUP, pb.LibraryBackupRequest(), pb.LibraryBackupResponse, timeout)

    def health(self, service: str = "", timeout: Optional[float] = None) -> int:
        """Health/Check: the serving status (``pb.SERVING_STATUS_SERVING``…) of ``service``
        (``""`` = the whole daemon, or ``"earshot.v1.Recognizer"``…)."""
        return self.call(
            Methods.HEALTH_CHECK, pb.HealthCheckRequest(service=service), pb.HealthCheckResponse, timeout
        ).status

    def watch_health(self, service: str = "", timeout: Optional[float] = None) -> "ResponseStream":
        """Health/Watch: a stream of serving statuses (ints), the current one first."""
        return self.stream(
            Methods.HEALTH_WATCH,
            pb.HealthCheckRequest(service=service),
            pb.HealthCheckResponse,
            timeout,
            transform=lambda r: r.status,
        )

    def stats(self, timeout: Optional[float] = None) -> pb.Stats:
        """Health/GetStats: counters (``.counters``), uptime and version."""
        return self.call(Methods.GET_STATS, pb.GetStatsRequest(), pb.Stats, timeout)

    # -- internals (called with the lock held) ------------------------------------------------

    @contextmanager
    def _guard(self):
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(
                "earshot_client.Client used by two threads at once: ZeroMQ sockets are not "
                "thread-safe; make one Client per thread"
            )
        try:
            yield
        finally:
            self._lock.release()

    def _new_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    def _start(
        self,
        method: str,
        request: Union[Message, bytes],
        deadline: Optional[float],
        timeout_ms: int,
        metadata: Optional[Mapping[str, str]],
        send_deadline: float,
    ) -> int:
        check_method(method)
        meta = dict(self.metadata)
        meta.update(check_metadata(metadata))
        payload = bytes(request) if isinstance(request, (bytes, bytearray, memoryview)) else request.SerializeToString()
        request_id = self._new_id()
        envelope = pb.RequestEnvelope(
            request_id=request_id, method=method, timeout_ms=timeout_ms, metadata=meta, payload=payload, control=_CALL
        )
        self._inbox[request_id] = collections.deque()
        try:
            self._send(envelope, send_deadline, method)
        except BaseException:
            self._inbox.pop(request_id, None)
            raise
        return request_id

    def _send(self, envelope: pb.RequestEnvelope, deadline: float, method: str) -> None:
        frames = [SIGNATURE, envelope.SerializeToString()]
        start = time.monotonic()
        while True:
            try:
                self._socket.send_multipart(frames, flags=zmq.NOBLOCK)
                return
            except zmq.Again:
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RpcError(
                    StatusCode.DEADLINE_EXCEEDED,
                    f"no connection to {self.server} within {deadline - start:.3g} s"
                    " (is earshotd running and listening there?)",
                    method=method,
                )
            self._socket.poll(max(1, math.ceil(remaining * 1000)), zmq.POLLOUT)

    def _send_control(self, request_id: int, control: int) -> bool:
        """Best effort, never blocks: a CANCEL or PING that cannot be queued now is dropped."""
        if self._closed:
            return False
        envelope = pb.RequestEnvelope(request_id=request_id, control=control)
        try:
            self._socket.send_multipart([SIGNATURE, envelope.SerializeToString()], flags=zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def _receive(self, request_id: int, deadline: Optional[float]) -> Optional[pb.ResponseEnvelope]:
        """The next reply for ``request_id``; None when ``deadline`` (monotonic) passes first.
        Replies for other calls met on the way are queued for them."""
        queue = self._inbox[request_id]
        while not queue:
            if deadline is None:
                wait = -1
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._drain()
                    break
                wait = max(1, math.ceil(remaining * 1000))
            if self._socket.poll(wait, zmq.POLLIN):
                self._drain()
        return queue.popleft() if queue else None

    def _drain(self) -> None:
        while True:
            try:
                frames = self._socket.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            self._dispatch(frames)

    def _dispatch(self, frames: List[bytes]) -> None:
        if len(frames) == 3 and frames[0] == b"":
            frames = frames[1:]  # tolerate an empty delimiter frame (REQ-style peers)
        if len(frames) != 2 or frames[0] != SIGNATURE:
            self.dropped_replies += 1
            return
        try:
            reply = pb.ResponseEnvelope.FromString(frames[1])
        except DecodeError:
            self.dropped_replies += 1
            return
        queue = self._inbox.get(reply.request_id)
        if queue is None:
            self.stale_replies += 1
            return
        queue.append(reply)

    def _result(self, reply: pb.ResponseEnvelope, response_type: Optional[Type[M]], method: str):
        """The END reply's result, or the RpcError its status means."""
        if reply.HasField("status") and reply.status.code != StatusCode.OK:
            raise RpcError(reply.status.code, reply.status.message, method=method, trailers=reply.trailers)
        return self._parse(reply.payload, response_type, method)

    def _parse(self, payload: bytes, response_type: Optional[Type[M]], method: str):
        if response_type is None:
            return payload
        try:
            return response_type.FromString(payload)
        except DecodeError as error:
            raise RpcError(
                StatusCode.INTERNAL,
                f"{self.server} sent a payload that is not a {response_type.DESCRIPTOR.full_name}: {error}",
                method=method,
            ) from None


class ResponseStream(Generic[T]):
    """The replies of a server-streaming call, as an iterator.

    Iteration ends when the server ends the call with OK; any other status raises
    :class:`RpcError` from ``next()``. ``close()`` (also ``cancel()``, leaving a ``with`` block,
    or garbage collection) sends CANCEL if the call still runs. After the end, ``code`` holds the
    final status code and ``trailers`` the END reply's trailers.
    """

    def __init__(
        self,
        client: Client,
        method: str,
        request_id: int,
        response_type: Optional[type],
        deadline: Optional[float],
        transform: Optional[Callable] = None,
    ) -> None:
        self._client = client
        self.method = method
        self.request_id = request_id
        self._response_type = response_type
        self._deadline = deadline
        self._transform = transform
        self._ping_due = time.monotonic() + client.ping_interval
        self._pong_wanted_since: Optional[float] = None
        self._ping_ids: List[int] = []
        #: Final status code once the call has ended (None while it runs).
        self.code: Optional[int] = None
        self.message = ""
        self.trailers: Dict[str, str] = {}
        self.count = 0

    @property
    def done(self) -> bool:
        return self.code is not None

    def __iter__(self) -> "ResponseStream[T]":
        return self

    def __next__(self) -> T:
        if self.done:
            raise StopIteration
        client = self._client
        with client._guard():
            while True:
                now = time.monotonic()
                if self._deadline is not None and now >= self._deadline:
                    self._abandon()
                    self._finish_locally(StatusCode.DEADLINE_EXCEEDED, "deadline")
                    raise RpcError(
                        StatusCode.DEADLINE_EXCEEDED,
                        f"the stream from {client.server} passed its deadline",
                        method=self.method,
                    )
                if self._pong_wanted_since is not None and now - self._pong_wanted_since >= 2 * client.ping_interval:
                    self._abandon()
                    self._finish_locally(StatusCode.UNAVAILABLE, "no PONG")
                    raise RpcError(
                        StatusCode.UNAVAILABLE,
                        f"{client.server} went silent: no PONG for {2 * client.ping_interval:g} s",
                        method=self.method,
                    )
                if now >= self._ping_due:
                    self._ping(now)
                wake = self._ping_due
                if self._pong_wanted_since is not None:
                    wake = min(wake, self._pong_wanted_since + 2 * client.ping_interval)
                if self._deadline is not None:
                    wake = min(wake, self._deadline)
                reply = client._receive(self.request_id, wake)
                if reply is None:
                    continue
                heard = time.monotonic()
                self._pong_wanted_since = None
                self._ping_due = heard + client.ping_interval
                if reply.kind == _MESSAGE:
                    self.count += 1
                    item = client._parse(reply.payload, self._response_type, self.method)
                    return self._transform(item) if self._transform is not None else item
                if reply.kind == _END:
                    self._release()
                    self.code = reply.status.code if reply.HasField("status") else int(StatusCode.OK)
                    self.message = reply.status.message
                    self.trailers = dict(reply.trailers)
                    if self.code != StatusCode.OK:
                        raise RpcError(self.code, self.message, method=self.method, trailers=self.trailers)
                    raise StopIteration
                if reply.kind == _PONG and reply.request_id != self.request_id:
                    # The answer to a keepalive PING: the server is alive; keep waiting.
                    client._inbox.pop(reply.request_id, None)
                    if reply.request_id in self._ping_ids:
                        self._ping_ids.remove(reply.request_id)

    def close(self) -> None:
        """Cancels the call if it still runs (sends CANCEL); idempotent."""
        if self.done:
            return
        client = self._client
        if client._closed:
            self._finish_locally(StatusCode.CANCELLED, "the client is closed")
            return
        with client._guard():
            self._abandon()
            self._finish_locally(StatusCode.CANCELLED, "cancelled by the client")

    cancel = close

    def __enter__(self) -> "ResponseStream[T]":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self.done and not self._client._closed and self._client._lock.acquire(blocking=False):
                try:
                    self._abandon()
                    self._finish_locally(StatusCode.CANCELLED, "dropped")
                finally:
                    self._client._lock.release()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "open" if not self.done else f"ended {self.code}"
        return f"ResponseStream({self.method}, id={self.request_id}, {state}, {self.count} item(s))"

    # -- internals ---------------------------------------------------------------------------

    def _ping(self, now: float) -> None:
        client = self._client
        if self._pong_wanted_since is None:
            self._pong_wanted_since = now
        ping_id = client._new_id()
        # The PONG lands in this stream's queue: hearing it proves the server alive.
        client._inbox[ping_id] = client._inbox[self.request_id]
        self._ping_ids.append(ping_id)
        client._send_control(ping_id, _PING)
        self._ping_due = now + client.ping_interval

    def _abandon(self) -> None:
        self._client._send_control(self.request_id, _CANCEL)
        self._release()

    def _release(self) -> None:
        inbox = self._client._inbox
        inbox.pop(self.request_id, None)
        for ping_id in self._ping_ids:
            inbox.pop(ping_id, None)
        self._ping_ids.clear()

    def _finish_locally(self, code: int, message: str) -> None:
        if self.code is None:
            self.code = int(code)
            self.message = message
        self._release()
