"""The example dashboard: its status line and --once against the fake daemon."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from fakes import matched, unary
from test_client import free_port

from earshot_client import FollowerState, Methods, pb

DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "examples", "dashboard.py")
sys.path.insert(0, os.path.dirname(DASHBOARD))
import dashboard  # noqa: E402


def test_status_line_shows_state_item_offset_skew_confidence_and_problems():
    now = int(time.time() * 1000)
    item = matched("ep1", offset=30.0, time_skew=0.04).items[0]
    item.frequency_skew = 0.0012
    item.media_item.artist = "Earshot Demo"
    session = pb.SessionSnapshot(state=pb.SESSION_STATE_MATCHING, window_seconds=8, capture_problem="device unplugged")
    state = FollowerState(session=session, epoch=1, current_item=item, current_item_at_ms=now)
    line = dashboard.status_line(state, now_ms=now + 10_000)
    assert line.startswith("MATCHING")
    assert '"EP1 — Earshot Demo" [demo]' in line
    assert "at    40.4 s" in line  # 30 + 10 s × 1.04
    assert "skew +0.12 %" in line and "speed +4.00 %" in line and "conf 0.90" in line
    assert "window 8.0 s" in line and "capture problem: device unplugged" in line

    idle = FollowerState(session=pb.SessionSnapshot(state=pb.SESSION_STATE_IDLE), epoch=1)
    assert dashboard.status_line(idle).startswith("IDLE") and "no match" in dashboard.status_line(idle)
    assert dashboard.status_line(None).startswith("CONNECTING")


def test_status_line_shows_the_latest_library_notice():
    notice = pb.LibraryNotice(
        owner_hash="3f2a9c1e0b7d5a6c4e8f9a0b", version=7, item_count=12, kind=pb.LibraryChange.KIND_ADDED, changed=2
    )
    older = pb.LibraryNotice(owner_hash="ffff0000ffff", version=1, item_count=1, kind=pb.LibraryChange.KIND_ADDED)
    state = FollowerState(
        session=pb.SessionSnapshot(state=pb.SESSION_STATE_IDLE), epoch=1, library={"ffff": older, "3f2a": notice}
    )
    line = dashboard.status_line(state)
    assert "library 3f2a9c1e… v7 12 items (ADDED 2)" in line and "ffff" not in line
    cleared = pb.LibraryNotice(owner_hash="3f2a9c1e0b7d", version=8, item_count=0, kind=pb.LibraryChange.KIND_CLEARED)
    assert dashboard.describe_library_notice(cleared) == "library 3f2a9c1e… v8 0 items (CLEARED)"
    assert "library" not in dashboard.status_line(FollowerState(session=pb.SessionSnapshot(), epoch=1))


def test_once_prints_one_line(server, publisher, capsys):
    snapshot = pb.SessionSnapshot(state=pb.SESSION_STATE_PRERECORDING, epoch=publisher.epoch, window_seconds=4.5)
    server.handlers[Methods.GET_SNAPSHOT] = lambda env: unary(snapshot)
    code = dashboard.main(["--once", "--server", server.endpoint, "--events", publisher.endpoint, "--timeout", "3"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("\n") == 1 and out.startswith("PRERECORDING") and "window 4.5 s" in out


@pytest.mark.parametrize("extra", [[], ["--lines"]])
def test_once_without_a_daemon_fails_quickly(extra):
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            DASHBOARD,
            "--once",
            "--timeout",
            "0.5",
            "--server",
            f"127.0.0.1:{free_port()}",
            "--events",
            f"127.0.0.1:{free_port()}",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert "cannot get a snapshot" in result.stderr and "DEADLINE_EXCEEDED" in result.stderr
    assert time.monotonic() - start < 10
