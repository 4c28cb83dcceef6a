#!/usr/bin/env python3
"""A second screen for earshotd's cues: what a phone app next to the TV does, in a terminal.

It follows Cues/StreamCues: on UPCOMING it "preloads" the cue's asset (here: says so, with the
countdown to its start), on STARTED it "shows" the cue (a quiz, a product card, a chapter
title…), on ENDED it hides it; a seek or a lost programme clears the screen. The daemon times
everything from the TV's audio, so the app needs no clock of its own.

    python3 examples/second_screen.py [--server tcp://host:7400]
    python3 examples/second_screen.py --server-key server.public --key phone.key   # CURVE
    python3 examples/second_screen.py --duration 30      # stop after 30 s (tests, CI)

Exit status: 0, 1 when the daemon could not be reached or refused the call (the reason goes
to standard error), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

try:
    import earshot_client  # noqa: F401
except ImportError:  # run from a checkout without installing: use ../src
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from earshot_client import DEFAULT_SERVER, Client, RpcError, StatusCode, pb


def label(cue: pb.Cue) -> str:
    what = cue.cue_class or "cue"
    asset = cue.asset_uri or cue.asset_list
    return f"{cue.id} ({what})" + (f" → {asset}" if asset else "")


def run(client: Client, duration: float, out=sys.stdout) -> int:
    showing = {}  # cue id -> cue, what the screen shows now
    deadline = time.monotonic() + duration if duration else None
    stream = client.stream_cues(timeout=duration + 5 if duration else None)
    try:
        for event in stream:
            kind = event.kind
            if kind == pb.CueEvent.KIND_STATE:
                state = event.state
                showing = {c.id: c for c in state.current}
                where = state.programme.title or "nothing yet"
                print(f"joined: {where}; showing {', '.join(showing) or 'nothing'}", file=out)
            elif kind == pb.CueEvent.KIND_SCHEDULE:
                print(f"programme: {event.programme.title} — {len(event.schedule.cues)} cue(s)", file=out)
            elif kind == pb.CueEvent.KIND_UPCOMING:
                due = max(0.0, event.due_unix_ms / 1000 - time.time())
                print(f"preload {label(event.cue)} — starts in {due:.1f} s", file=out)
            elif kind == pb.CueEvent.KIND_STARTED:
                showing[event.cue.id] = event.cue
                late = f" ({event.lateness_seconds:.1f} s in)" if event.lateness_seconds > 0.05 else ""
                print(f"show {label(event.cue)}{late}", file=out)
            elif kind == pb.CueEvent.KIND_ENDED:
                showing.pop(event.cue.id, None)
                print(f"hide {event.cue.id}", file=out)
            elif kind == pb.CueEvent.KIND_SKIPPED:
                owed = " — owed to the viewer: show it now" if event.owed else ""
                # Cues crossed together (a jump, a dense schedule) come as one event with a count.
                together = f" and {event.coalesced - 1} more" if event.coalesced > 1 else ""
                why = f" ({event.reason})" if event.reason else ""
                print(f"skipped {event.cue.id}{together}{why}{owed}", file=out)
            elif kind == pb.CueEvent.KIND_SEEK:
                print(f"seek {event.from_position:.1f} s → {event.position:.1f} s", file=out)
            elif kind == pb.CueEvent.KIND_PROGRAMME_LOST:
                showing.clear()
                print("programme lost: screen cleared", file=out)
            out.flush()
            if deadline is not None and time.monotonic() >= deadline:
                break
    except RpcError as error:
        if error.code != StatusCode.DEADLINE_EXCEEDED:  # the deadline ends a timed run
            print(f"second_screen: {error}", file=sys.stderr)
            return 1
    finally:
        stream.close()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Follow earshotd's cues like a second-screen app.")
    parser.add_argument("--server", default=DEFAULT_SERVER, help=f"RPC endpoint (default {DEFAULT_SERVER})")
    parser.add_argument("--server-key", help="the daemon's public key (Z85 text or its server.public file)")
    parser.add_argument("--key", help="this client's secret key file (earshot keygen)")
    parser.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: run until Ctrl-C)")
    args = parser.parse_args(argv)
    try:
        with Client(args.server, server_key=args.server_key, client_key=args.key, timeout=10.0) as client:
            return run(client, args.duration)
    except KeyboardInterrupt:
        return 130
    except (RpcError, OSError, ValueError) as error:
        print(f"second_screen: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
