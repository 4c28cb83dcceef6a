"""A local copy of the caller's library on the box, kept up to date with Library/WatchLibrary.

    mirror = LibraryMirror(client)
    mirror.load()                        # optional: read the items once (else the change log builds them)
    for change in mirror.changes():      # watches from mirror.version: applies each change, then yields it
        print(pb.enum_name(pb.LibraryChange.Kind, change.kind), mirror.version, len(mirror))

After a disconnect (the stream raised :class:`RpcError`, or the client was closed), call
``changes()`` again — on a new client if need be (``mirror.client = …``): the watch resumes from
``mirror.version``, so nothing is missed or applied twice.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional

from . import pb
from .client import Client, ResponseStream
from .errors import RpcError, StatusCode

ADDED = pb.LibraryChange.KIND_ADDED
REMOVED = pb.LibraryChange.KIND_REMOVED
CLEARED = pb.LibraryChange.KIND_CLEARED
RESYNC = pb.LibraryChange.KIND_RESYNC
CURRENT = pb.LibraryChange.KIND_CURRENT


class LibraryMirror:
    """The caller's library items (``items``: id → ``pb.LibraryItem``) as of ``version``.

    Changes are applied in order with :meth:`apply`; :meth:`changes` watches the daemon from
    ``version`` and applies what it sends: the backlog the mirror missed, ``KIND_CURRENT``
    (``current`` becomes True: the mirror is exact), then live changes. ``KIND_RESYNC`` (the
    daemon's change log does not reach back to ``version``, or the mirror is too far behind)
    reloads every item (:meth:`load`) and goes on from the version it names.

    A change at or below ``version`` was applied already and is skipped (counted in
    ``skipped``); one past ``version + 1`` means changes were lost on the way: the mirror
    reloads (counted in ``gaps``; the daemon should never make one). ``item_count`` is the
    daemon's count from the last change or page; once ``current``, ``len(mirror)`` equals it.

    Items added and removed are sets of unique ids, so applying the changes after the version a
    reload *started* from, on top of what it read (perhaps newer), ends in the right state.

    Like :class:`Client`, one thread at a time.
    """

    def __init__(self, client: Optional[Client] = None, *, page_size: int = 500) -> None:
        #: The client to watch and reload with (may be replaced, e.g. after a reconnect).
        self.client = client
        self.page_size = page_size
        self.items: Dict[str, pb.LibraryItem] = {}
        #: The last version applied (0: none).
        self.version = 0
        #: Whether the last watch reached KIND_CURRENT (the mirror was exact then, and follows
        #: live changes while that watch runs); False from the start of a watch until its CURRENT.
        self.current = False
        self.item_count = 0
        self.owner_hash = ""
        self.applied = 0
        self.skipped = 0
        self.reloads = 0
        self.resyncs = 0
        self.gaps = 0
        self._stream: Optional[ResponseStream] = None

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.items

    def __repr__(self) -> str:
        state = "current" if self.current else "catching up"
        return f"LibraryMirror(version={self.version}, {len(self.items)} item(s), {state})"

    def newest_first(self) -> List[pb.LibraryItem]:
        """The items as Library/Items orders them: newest match first (then newest added)."""
        return sorted(self.items.values(), key=lambda i: (i.matched_at_unix_ms, i.added_at_unix_ms), reverse=True)

    # -- reading and applying ----------------------------------------------------------------

    def load(self, client: Optional[Client] = None) -> int:
        """Reads every item (Library/Items, a page at a time) and replaces ``items`` with them;
        ``version`` becomes the first page's (later pages may already show later changes: the
        watch replays those, harmlessly). Returns the version."""
        client = self._client(client)
        pages: List[pb.LibraryItemsResponse] = []
        items = {item.id: item for item in client.library_all_items(self.page_size, pages=pages)}
        first, last = pages[0], pages[-1]
        self.items = items
        self.version = first.version
        self.item_count = last.item_count
        self.owner_hash = first.owner_hash or self.owner_hash
        self.reloads += 1
        return self.version

    def apply(self, change: pb.LibraryChange) -> bool:
        """Applies one change (in order); returns whether the mirror took it (False: a change
        already applied, skipped). RESYNC and a gap reload with :attr:`client`."""
        kind = change.kind
        if kind == CURRENT:
            if change.version != self.version:
                # The daemon says it is elsewhere than the changes brought us: changes were lost.
                self.gaps += 1
                self.load()
            self.version = change.version
            self.item_count = change.item_count
            self.current = True
            return True
        if kind == RESYNC:
            self.resyncs += 1
            self.load()
            self.version = change.version  # the watch goes on from there
            self.item_count = change.item_count
            return True
        if change.version <= self.version:
            self.skipped += 1
            return False
        if change.version != self.version + 1:
            self.gaps += 1
            self.load()  # reads a state at least as new as this change; applying it is harmless
        if kind == ADDED:
            for item in change.items:
                self.items[item.id] = item
        elif kind == REMOVED:
            for item_id in change.item_ids:
                self.items.pop(item_id, None)
        elif kind == CLEARED:
            self.items.clear()
        # Other kinds (added to the protocol later) only move the version on.
        self.version = change.version
        self.item_count = change.item_count
        self.applied += 1
        return True

    # -- watching ----------------------------------------------------------------------------

    def changes(self, client: Optional[Client] = None, timeout: Optional[float] = None) -> Iterator[pb.LibraryChange]:
        """Starts watching the library from ``version`` (at once: changes committed from now on
        reach the mirror) and returns an iterator that applies each change, then yields it
        (CURRENT and RESYNC too; skipped repeats are not yielded). It ends when the stream ends;
        an :class:`RpcError` (the daemon went away, a deadline) propagates — call again to
        resume, on a new client if need be. ``client`` replaces :attr:`client`. Closing the
        iterator (or :meth:`close`) cancels the watch. ``timeout``: the watch's deadline (None:
        none)."""
        if client is not None:
            self.client = client
        client = self._client(None)
        self.current = False
        stream = client.watch_library(self.version, timeout)
        self._stream = stream
        return self._follow(stream)

    def _follow(self, stream: ResponseStream) -> Iterator[pb.LibraryChange]:
        try:
            for change in stream:
                if self.apply(change):
                    yield change
        finally:
            stream.close()
            if self._stream is stream:
                self._stream = None

    def sync(self, client: Optional[Client] = None, timeout: float = 10.0) -> int:
        """Catches up once: watches until KIND_CURRENT, then stops watching. Returns the
        version. DEADLINE_EXCEEDED when CURRENT does not come within ``timeout`` seconds."""
        changes = self.changes(client, timeout)
        try:
            for change in changes:
                if change.kind == CURRENT:
                    return self.version
        finally:
            changes.close()
        raise RpcError(StatusCode.UNAVAILABLE, "the watch ended before it was current", method="LibraryMirror.sync")

    def close(self) -> None:
        """Cancels the watch :meth:`changes` runs, if any (from the same thread)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _client(self, client: Optional[Client]) -> Client:
        client = client or self.client
        if client is None:
            raise ValueError("LibraryMirror: no client (give one to the constructor or the call)")
        return client
