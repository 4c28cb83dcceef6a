"""Boxes announced on the LAN with DNS-SD (``_earshot._tcp``), found with python-zeroconf.

    from earshot_client import discover, Client
    for box in discover():
        print(box.name, box.server, box.fingerprint)
    box = find_box("Living room")
    with Client(box.server, server_key=box.server_key, client_key="tv-app.key") as client:
        print(client.match())

The record's fields are in docs/PROTOCOL.md ("Finding a box: DNS-SD"). A key seen on the LAN is
only as trustworthy as the LAN: compare ``box.fingerprint`` with the box once, or pin the key.
Needs the optional dependency: ``pip install earshot-client[discovery]``.
"""

import hashlib
import ipaddress
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

SERVICE_TYPE = "_earshot._tcp.local."

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


@dataclass(frozen=True)
class Box:
    """One box: its instance name (unique on the LAN), addresses and announced fields."""

    name: str
    addresses: List[str]
    rpc_port: int
    events_port: int
    protocol_version: int
    server_key: Optional[str]  # Z85, 40 characters; None for a box without CURVE
    host: str = ""
    extra: Dict[str, str] = field(default_factory=dict)

    def _endpoint(self, port: int) -> str:
        address = self.addresses[0] if self.addresses else self.host
        return f"tcp://[{address}]:{port}" if ":" in address else f"tcp://{address}:{port}"

    @property
    def server(self) -> str:
        """The RPC endpoint, ``tcp://ADDRESS:PORT``."""
        return self._endpoint(self.rpc_port)

    @property
    def events(self) -> str:
        """The events endpoint."""
        return self._endpoint(self.events_port)

    @property
    def fingerprint(self) -> Optional[str]:
        """The first 8 bytes of SHA-256 of the server key, as ``earshot remote discover`` prints it."""
        return key_fingerprint(self.server_key) if self.server_key else None


class AnnouncementError(ValueError):
    """A record that is not a usable announcement."""


def key_fingerprint(key: str) -> str:
    raw = _z85_decode(key)
    return ":".join(f"{b:02x}" for b in hashlib.sha256(raw).digest()[:8])


def _z85_decode(text: str) -> bytes:
    if len(text) % 5:
        raise AnnouncementError("a Z85 key is a multiple of 5 characters")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for ch in text[i : i + 5]:
            digit = _Z85.find(ch)
            if digit < 0:
                raise AnnouncementError(f"{ch!r} is not a Z85 character")
            value = value * 85 + digit
        if value >= 1 << 32:
            raise AnnouncementError("not a Z85 key")
        out += value.to_bytes(4, "big")
    return bytes(out)


def box_from_record(name: str, port: int, properties: Mapping[bytes, Optional[bytes]],
                    addresses: List[str], host: str = "") -> Box:
    """Reads one resolved record (instance name, port, TXT key/value pairs) as a :class:`Box`.

    Raises :class:`AnnouncementError` for a record without what a client needs.
    """
    fields: Dict[str, str] = {}
    for key, value in properties.items():
        if value is None:
            continue  # a key without "=" (RFC 6763 §6.4: a boolean attribute): none of ours
        try:
            fields.setdefault(key.decode("utf-8").lower(), value.decode("utf-8"))
        except UnicodeDecodeError:
            raise AnnouncementError("a TXT string is not UTF-8") from None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name):
        raise AnnouncementError("the name holds control characters")
    if not re.fullmatch(r"[0-9]{1,9}", fields.get("proto", "")):
        raise AnnouncementError("no protocol version (proto=)")
    proto = int(fields["proto"])
    if not re.fullmatch(r"[0-9]{1,5}", fields.get("events", "")) or not 0 < int(fields["events"]) < 65536:
        raise AnnouncementError("no events port (events=)")
    events = int(fields["events"])
    if not 0 < port < 65536:
        raise AnnouncementError("no RPC port")
    security = fields.get("security", "curve")
    if security == "none":
        key = None
    elif security == "curve":
        key = fields.get("key", "")
        if len(key) != 40:
            raise AnnouncementError("no CURVE server key (key=, 40 characters of Z85)")
        _z85_decode(key)
    else:
        raise AnnouncementError(f"unknown security {security!r}")
    # IPv4 first, link-local IPv6 last (it needs an interface to be used).
    def rank(a: str) -> int:
        try:
            ip = ipaddress.ip_address(a)
        except ValueError:
            return 3
        return 0 if ip.version == 4 else (2 if ip.is_link_local else 1)
    known = {"txtvers", "proto", "events", "security", "key", "name"}
    return Box(name=name, addresses=sorted(dict.fromkeys(addresses), key=rank), rpc_port=port, events_port=events,
               protocol_version=proto, server_key=key, host=host,
               extra={k: v for k, v in fields.items() if k not in known})


def discover(timeout: float = 2.0, zeroconf=None) -> List[Box]:
    """The boxes that answer within ``timeout`` seconds, by name.

    Records that are not valid announcements are left out. ``zeroconf`` may be a running
    ``zeroconf.Zeroconf`` to browse with (for example one bound to chosen interfaces).
    """
    try:
        from zeroconf import ServiceBrowser, ServiceStateChange, Zeroconf
    except ImportError:
        raise RuntimeError("discover() needs python-zeroconf: pip install earshot-client[discovery]") from None
    own = zeroconf is None
    zc = Zeroconf() if own else zeroconf
    names: List[str] = []
    lock = threading.Lock()

    def changed(zeroconf, service_type, name, state_change):
        if state_change is ServiceStateChange.Added:
            with lock:
                if name not in names:
                    names.append(name)

    browser = ServiceBrowser(zc, SERVICE_TYPE, handlers=[changed])
    try:
        time.sleep(timeout)
        with lock:
            found = list(names)
        boxes: Dict[str, Box] = {}
        for full in found:
            info = zc.get_service_info(SERVICE_TYPE, full, timeout=1000)
            if info is None:
                continue
            instance = full[: -len(SERVICE_TYPE) - 1] if full.endswith("." + SERVICE_TYPE) else full
            try:
                box = box_from_record(instance, info.port or 0, info.properties, info.parsed_addresses(),
                                      (info.server or "").rstrip("."))
            except AnnouncementError:
                continue
            boxes[box.name] = box
        return sorted(boxes.values(), key=lambda b: b.name.lower())
    finally:
        browser.cancel()
        if own:
            zc.close()


def find_box(name: str, timeout: float = 3.0) -> Box:
    """The box called ``name`` (its instance name, case aside, or its host ``NAME.local``)."""
    wanted = name.lower()
    boxes = discover(timeout)
    for box in boxes:
        if wanted in (box.name.lower(), box.host.lower(), box.host.lower().removesuffix(".local")):
            return box
    seen = "; found " + ", ".join(f'"{b.name}"' for b in boxes) if boxes else " (none did)"
    raise LookupError(f'no box called "{name}" answered on the LAN within {timeout} s{seen}')
