"""Python client for earshotd: RPC over ZeroMQ + protobuf (``EARSHOT/1`` envelopes) and events.

    from earshot_client import Client
    with Client("tcp://127.0.0.1:7400") as client:
        client.prepare()
        result = client.match()

See the README next to ``pyproject.toml`` for streams, events, the late-joiner recipe and the
library (:class:`LibraryMirror`).
"""

from . import pb
from .client import Client, CurveKeys, RawJson, ResponseStream, catalog_name_of, catalog_signer_key
from .discovery import AnnouncementError, Box, box_from_record, discover, find_box, key_fingerprint
from .errors import RpcError, StatusCode, code_name
from .events import Subscriber
from .follower import FollowerState, StateFollower, Update, predict_offset
from .keys import curve_keys, read_key_file
from .library import LibraryMirror
from .protocol import DEFAULT_EVENTS, DEFAULT_SERVER, SIGNATURE, Methods, Topics

__version__ = "0.3.0"

__all__ = [
    "AnnouncementError",
    "Box",
    "box_from_record",
    "discover",
    "find_box",
    "key_fingerprint",
    "Client",
    "CurveKeys",
    "DEFAULT_EVENTS",
    "DEFAULT_SERVER",
    "FollowerState",
    "LibraryMirror",
    "Methods",
    "RawJson",
    "ResponseStream",
    "RpcError",
    "SIGNATURE",
    "StateFollower",
    "StatusCode",
    "Subscriber",
    "Topics",
    "Update",
    "catalog_name_of",
    "catalog_signer_key",
    "code_name",
    "pb",
    "predict_offset",
]
