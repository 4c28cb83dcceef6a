#!/usr/bin/env python3
"""A small terminal dashboard for earshotd: session state, current item, its advancing offset,
skew, confidence, capture problems and the latest library change (the notice on
earshot.v1/library/: owner hash, version, item count, kind — never the items), kept consistent
by the late-joiner recipe (earshot_client.StateFollower: subscribe, snapshot, drop stale
events, re-snapshot on loss).

    python3 examples/dashboard.py [--server tcp://host:7400] [--events tcp://host:7401]
    python3 examples/dashboard.py --once          # one status line, then exit (tests, CI)

On a terminal the status line is redrawn in place a few times a second; otherwise (or with
--lines) a line is printed per change. No curses needed. Exit status: 0, or 1 when --once could
not get a snapshot from the daemon (the reason goes to standard error), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from typing import Optional

try:
    import earshot_client  # noqa: F401
except ImportError:  # run from a checkout without installing: use ../src
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import earshot_client  # noqa: F401

from earshot_client import DEFAULT_EVENTS, DEFAULT_SERVER, FollowerState, StateFollower, pb


def describe_item(item: pb.MatchedMediaItem) -> str:
    media = item.media_item
    name = media.title or media.id or "(untitled)"
    if media.artist:
        name += f" — {media.artist}"
    return f'"{name}"' + (f" [{item.catalog}]" if item.catalog else "")


def describe_library_notice(notice: pb.LibraryNotice) -> str:
    """``library 3f2a9c1e… v7 12 items (ADDED 2)``: which library changed (its owner's hash, as
    the notice names it), its version and size now, and the kind of change."""
    kind = pb.enum_name(pb.LibraryChange.Kind, notice.kind)
    changed = f" {notice.changed}" if notice.changed else ""
    count = f"{notice.item_count} item{'' if notice.item_count == 1 else 's'}"
    return f"library {notice.owner_hash[:8]}… v{notice.version} {count} ({kind}{changed})"


def status_line(state: Optional[FollowerState], *, now_ms: Optional[float] = None, note: str = "") -> str:
    """One line: STATE  "Title — Artist" [catalog]  at 73.4 s  skew +0.12 %  speed +0.00 %  conf 0.93 …
    and, once a library changed, the latest library notice."""
    if state is None:
        return f"{'CONNECTING':<12}  {note or 'waiting for the daemon…'}"
    parts = [f"{state.state_name:<12}"]
    item = state.current_item
    if item is not None:
        offset = state.offset_now(now_ms)
        parts.append(describe_item(item))
        parts.append(f"at {offset:7.1f} s")
        parts.append(f"skew {item.frequency_skew * 100:+.2f} %")
        parts.append(f"speed {item.time_skew * 100:+.2f} %")
        parts.append(f"conf {item.confidence:.2f}")
    else:
        last = state.last_match
        if last is not None and last.outcome == pb.MATCH_OUTCOME_ERROR:
            parts.append(f"error: {last.error.name or last.error.code} {last.error.message}".rstrip())
        else:
            parts.append("no match")
    parts.append(f"window {state.session.window_seconds:.1f} s")
    if state.health is not None and state.health != pb.SERVING_STATUS_SERVING:
        parts.append(pb.enum_name(pb.ServingStatus, state.health))
    if state.capture_problem:
        parts.append(f"capture problem: {state.capture_problem}")
    notice = state.last_library_notice
    if notice is not None:
        parts.append(describe_library_notice(notice))
    if note:
        parts.append(note)
    return "  ".join(parts)


def run_once(args) -> int:
    with StateFollower.open(args.server, args.events, timeout=args.timeout, snapshot_timeout=args.timeout) as follower:
        update = follower.poll(args.timeout)
        if update is None or update.kind == "error":
            reason = update.error if update is not None else f"no answer within {args.timeout:g} s"
            print(f"dashboard: cannot get a snapshot from {args.server}: {reason}", file=sys.stderr)
            return 1
        print(status_line(follower.state))
        return 0


def run_live(args) -> int:
    tty = sys.stdout.isatty() and not args.lines
    last_printed = None
    note, note_until = "", 0.0
    with StateFollower.open(args.server, args.events, timeout=args.timeout) as follower:
        try:
            for update in follower.updates(tick=args.refresh):
                now = time.monotonic()
                if update is not None:
                    if update.kind == "error":
                        note, note_until = f"(daemon unreachable: {update.error.code_name}; retrying)", now + 3600
                    elif update.kind == "snapshot":
                        note = "" if update.reason == "start" else f"(resynced: {update.reason})"
                        note_until = now + 5
                if now >= note_until:
                    note = ""
                line = status_line(follower.state, note=note)
                if tty:
                    width = shutil.get_terminal_size((100, 24)).columns
                    sys.stdout.write("\r\x1b[K" + line[: max(10, width - 1)])
                    sys.stdout.flush()
                elif update is not None and line != last_printed:
                    # Off a terminal: one stamped line per change (repeated retries print once).
                    print(time.strftime("%H:%M:%S ") + line, flush=True)
                    last_printed = line
        except KeyboardInterrupt:
            if tty:
                sys.stdout.write("\n")
            return 130
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Terminal dashboard for earshotd (state, current item, offset).")
    parser.add_argument("--server", default=DEFAULT_SERVER, help=f"RPC endpoint (default {DEFAULT_SERVER})")
    parser.add_argument("--events", default=DEFAULT_EVENTS, help=f"event endpoint (default {DEFAULT_EVENTS})")
    parser.add_argument(
        "--once", action="store_true", help="print one status line and exit (1 if the daemon does not answer)"
    )
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the daemon (default 5)")
    parser.add_argument(
        "--refresh", type=float, default=0.25, help="redraw interval on a terminal, seconds (default 0.25)"
    )
    parser.add_argument("--lines", action="store_true", help="print a line per change even on a terminal")
    args = parser.parse_args(argv)
    if args.timeout <= 0 or args.refresh <= 0:
        parser.error("--timeout and --refresh must be positive")
    return run_once(args) if args.once else run_live(args)


if __name__ == "__main__":
    sys.exit(main())
