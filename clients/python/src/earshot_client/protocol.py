"""Constants of the ``earshot.v1`` protocol: the envelope signature, method paths, topics, endpoints.

Mirrors ``Sources/EarshotWire/Methods.swift`` and the ``service`` blocks in ``proto/earshot/v1``.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional

#: First frame of every RPC message, both ways: the protocol and its major version.
SIGNATURE = b"EARSHOT/1"

DEFAULT_SERVER = "tcp://127.0.0.1:7400"
DEFAULT_EVENTS = "tcp://127.0.0.1:7401"


class Methods:
    """Method paths, ``"/" service "/" method`` as in gRPC."""

    PREPARE = "/earshot.v1.Recognizer/Prepare"
    MATCH = "/earshot.v1.Recognizer/Match"
    STREAM_MATCHES = "/earshot.v1.Recognizer/StreamMatches"  # server-streaming
    MATCH_SIGNATURE = "/earshot.v1.Recognizer/MatchSignature"
    CANCEL = "/earshot.v1.Recognizer/Cancel"
    GET_SNAPSHOT = "/earshot.v1.Session/GetSnapshot"
    LIST_CATALOGS = "/earshot.v1.Catalogs/List"
    DESCRIBE_CATALOG = "/earshot.v1.Catalogs/Describe"
    ENABLE_CATALOG = "/earshot.v1.Catalogs/Enable"
    DISABLE_CATALOG = "/earshot.v1.Catalogs/Disable"
    REMOVE_CATALOG = "/earshot.v1.Catalogs/Remove"
    BEGIN_UPLOAD = "/earshot.v1.Catalogs/BeginUpload"
    UPLOAD_CHUNK = "/earshot.v1.Catalogs/UploadChunk"
    GET_UPLOAD = "/earshot.v1.Catalogs/GetUpload"
    COMMIT_UPLOAD = "/earshot.v1.Catalogs/CommitUpload"
    ABORT_UPLOAD = "/earshot.v1.Catalogs/AbortUpload"
    HEALTH_CHECK = "/earshot.v1.Health/Check"
    HEALTH_WATCH = "/earshot.v1.Health/Watch"  # server-streaming
    GET_STATS = "/earshot.v1.Health/GetStats"
    GET_CUE_SCHEDULE = "/earshot.v1.Cues/GetSchedule"
    GET_CURRENT_CUES = "/earshot.v1.Cues/GetCurrent"
    SET_CUES = "/earshot.v1.Cues/SetCues"
    CLEAR_CUES = "/earshot.v1.Cues/ClearCues"
    STREAM_CUES = "/earshot.v1.Cues/StreamCues"  # server-streaming
    LIBRARY_ADD = "/earshot.v1.Library/Add"
    LIBRARY_ITEMS = "/earshot.v1.Library/Items"
    LIBRARY_REMOVE = "/earshot.v1.Library/Remove"
    WATCH_LIBRARY = "/earshot.v1.Library/WatchLibrary"  # server-streaming
    LIBRARY_LIST_OWNERS = "/earshot.v1.Library/ListOwners"
    LIBRARY_DELETE_OWNER = "/earshot.v1.Library/DeleteOwner"
    LIBRARY_BACKUP = "/earshot.v1.Library/Backup"


class Topics:
    """Event topics. Each ends with ``/`` so a prefix subscription cannot match a longer name."""

    SESSION = "earshot.v1/session/"
    MATCH = "earshot.v1/match/"
    CATALOG = "earshot.v1/catalog/"
    CUE = "earshot.v1/cue/"
    LIBRARY = "earshot.v1/library/"
    HEALTH = "earshot.v1/health/"
    HEARTBEAT = "earshot.v1/hb/"

    ALL = (SESSION, MATCH, CATALOG, CUE, LIBRARY, HEALTH, HEARTBEAT)


#: Largest message the daemon accepts by default (``rpc.max_message_bytes``): a bigger one
#: disconnects the client.
MAX_MESSAGE_BYTES = 4 << 20

#: Catalog upload: the recommended piece size, and the largest this client sends (the message
#: limit less room for the envelope around the piece).
DEFAULT_CHUNK_BYTES = 1 << 20
MAX_CHUNK_BYTES = MAX_MESSAGE_BYTES - (64 << 10)

#: Largest ``timeout_ms`` the envelope can carry (uint32): about 49.7 days, "no deadline".
MAX_TIMEOUT_MS = 0xFFFFFFFF

_METADATA_KEY = re.compile(r"^[0-9a-z_.-]+$")
MAX_METADATA_ENTRIES = 32
MAX_METADATA_BYTES = 8 * 1024
MAX_METHOD_BYTES = 128


def normalize_endpoint(endpoint: str) -> str:
    """``"host:port"`` → ``"tcp://host:port"``; endpoints with a scheme are returned unchanged."""
    endpoint = endpoint.strip()
    if "://" in endpoint:
        return endpoint
    if ":" not in endpoint:
        raise ValueError(f"endpoint {endpoint!r}: expected tcp://host:port (or host:port)")
    return "tcp://" + endpoint


def check_metadata(metadata: Optional[Mapping[str, str]]) -> dict:
    """The metadata as a dict, or ValueError when the server would refuse it (keys of
    ``[0-9a-z_.-]``, at most 32 entries and 8 KiB in all)."""
    if not metadata:
        return {}
    out = {}
    size = 0
    for key, value in metadata.items():
        if not isinstance(key, str) or not _METADATA_KEY.match(key):
            raise ValueError(f"metadata key {key!r}: use lowercase letters, digits and _ . -")
        if not isinstance(value, str):
            raise ValueError(f"metadata {key!r}: the value must be a str")
        size += len(key.encode()) + len(value.encode())
        out[key] = value
    if len(out) > MAX_METADATA_ENTRIES:
        raise ValueError(f"metadata: {len(out)} entries; at most {MAX_METADATA_ENTRIES}")
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata: {size} bytes; at most {MAX_METADATA_BYTES}")
    return out


def check_method(method: str) -> str:
    if not method.startswith("/") or method.count("/") != 2 or len(method.encode()) > MAX_METHOD_BYTES:
        raise ValueError(f'method {method!r}: expected "/package.Service/Method" (at most 128 bytes)')
    return method
