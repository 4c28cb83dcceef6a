"""The DNS-SD record read as a Box (discover() itself runs against real avahi-daemons in
scripts/discovery-check.sh)."""

import hashlib

import pytest

from earshot_client import AnnouncementError, box_from_record, key_fingerprint
from earshot_client.discovery import _z85_decode

KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"


def record(**fields):
    return {k.encode(): (None if v is None else v.encode()) for k, v in fields.items()}


def test_a_record_reads_as_a_box_with_its_endpoints():
    box = box_from_record("Living room #2", 7400,
                          record(txtvers="1", proto="1", events="7401", security="curve", key=KEY, name="Living room",
                                 colour="blue"),
                          ["fe80::1", "192.168.1.20", "2001:db8::5"], "tv-box.local")
    assert box.name == "Living room #2"
    assert box.addresses == ["192.168.1.20", "2001:db8::5", "fe80::1"]
    assert box.server == "tcp://192.168.1.20:7400" and box.events == "tcp://192.168.1.20:7401"
    assert box.protocol_version == 1 and box.server_key == KEY
    assert box.extra == {"colour": "blue"}
    assert box.fingerprint == ":".join(f"{b:02x}" for b in hashlib.sha256(_z85_decode(KEY)).digest()[:8])
    v6 = box_from_record("B", 9000, record(proto="1", events="9001", security="none"), ["2001:db8::5"])
    assert v6.server == "tcp://[2001:db8::5]:9000" and v6.server_key is None and v6.fingerprint is None


def test_z85_decodes_the_specifications_example():
    assert _z85_decode("HelloWorld") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    assert len(key_fingerprint(KEY)) == 23


@pytest.mark.parametrize("port, fields, message", [
    (7400, dict(events="7401", security="none"), "no protocol version"),
    (7400, dict(proto="x", events="7401", security="none"), "no protocol version"),
    (7400, dict(proto="1", security="none"), "no events port"),
    (7400, dict(proto="1", events="70000", security="none"), "no events port"),
    (0, dict(proto="1", events="7401", security="none"), "no RPC port"),
    (7400, dict(proto="1", events="7401"), "no CURVE server key"),
    (7400, dict(proto="1", events="7401", security="curve", key="short"), "no CURVE server key"),
    (7400, dict(proto="1", events="7401", security="curve", key="rq:rM>}U?@Lns47E1%kR.o@n%Fcmms /@{H8]yf7"),
     "' ' is not a Z85 character"),
    (7400, dict(proto="1", events="7401", security="tls"), "unknown security 'tls'"),
])
def test_a_record_a_client_cannot_use_says_why(port, fields, message):
    with pytest.raises(AnnouncementError, match=message):
        box_from_record("x", port, record(**fields), ["10.0.0.1"])


def test_keys_without_a_value_are_passed_over_and_numbers_are_plain_digits():
    box = box_from_record("x", 7400, {b"proto": None, b"PROTO": b"1", b"events": b"7401", b"security": b"none"},
                          ["10.0.0.1", "10.0.0.1", "10.0.0.2"])
    assert box.protocol_version == 1 and box.addresses == ["10.0.0.1", "10.0.0.2"]
    for bad in (" 7401", "7_401", "\u0667\u0664\u0660\u0661"):
        with pytest.raises(AnnouncementError, match="no events port"):
            box_from_record("x", 7400, record(proto="1", events=bad, security="none"), ["10.0.0.1"])
    with pytest.raises(AnnouncementError, match="control characters"):
        box_from_record("box\x1b[2J", 7400, record(proto="1", events="7401", security="none"), ["10.0.0.1"])


def test_text_that_is_not_utf8_is_refused():
    with pytest.raises(AnnouncementError, match="not UTF-8"):
        box_from_record("x", 7400, {b"proto": b"1", b"events": b"7401", b"name": b"\xff\xfe"}, ["10.0.0.1"])
