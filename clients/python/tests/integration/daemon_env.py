"""What the integration modules need to start earshotd: a free port, the environment's paths,
and the daemon as a process (:func:`run_earshotd`)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, Mapping, Optional

import pytest
import zmq

from earshot_client import Client, RpcError, Subscriber, pb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(
            f"{name} is not set: the integration tests need EARSHOTD, EARSHOT_TEST_CATALOG and "
            "EARSHOT_TEST_AUDIO (see clients/python/README.md); deselect them with -m 'not integration'",
            pytrace=False,
        )
    if name != "EARSHOT_TEST_ITEM" and not os.path.exists(value):
        pytest.fail(f"{name}={value}: no such file", pytrace=False)
    return value


READY_TIMEOUT = 60.0


@dataclasses.dataclass
class Daemon:
    process: subprocess.Popen
    rpc: str
    events: str
    catalog: str
    item_id: str
    audio: str
    state_directory: Path
    log_path: Path
    #: With CURVE (``run_earshotd(clients=…)``): the daemon's public key file, and each
    #: client's secret key file by its allow-list name.
    server_key: str = ""
    keys: Dict[str, str] = dataclasses.field(default_factory=dict)

    def client(self, name: Optional[str] = None, timeout: float = 10.0) -> Client:
        """A Client of this daemon; with CURVE, with the key of allow-list name ``name``."""
        if not self.keys:
            return Client(self.rpc, timeout=timeout)
        return Client(self.rpc, timeout=timeout, server_key=self.server_key, client_key=self.keys[name])

    def subscriber(self, topics, name: Optional[str] = None) -> Subscriber:
        if not self.keys:
            return Subscriber(self.events, topics)
        return Subscriber(self.events, topics, server_key=self.server_key, client_key=self.keys[name])

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def check_alive(self) -> None:
        code = self.process.poll()
        if code is not None:
            pytest.fail(f"earshotd exited with status {code}; its log:\n{self.log_tail()}", pytrace=False)


@contextlib.contextmanager
def run_earshotd(
    root: Path,
    *,
    session: str = "prepare_on_start = true\nfollow = true",
    extra: str = "",
    clients: Optional[Mapping[str, str]] = None,
):
    """Starts earshotd in ``root`` (state folder, config and log there) with the test catalog in
    its catalogs folder and the test audio as a looping file source, in plain mode on free
    loopback ports; yields the :class:`Daemon` once it serves, and stops it (SIGTERM, which must
    exit 0) at the end. ``session``: the ``[session]`` table's lines; ``extra``: more tables (TOML, placed after
    ``[security]``). ``clients`` (allow-list name → role) turns CURVE on instead: a key pair is
    made for each and listed in ``clients.allow``; ``Daemon.client(name)`` connects with it."""
    binary = require("EARSHOTD")
    catalog_file = require("EARSHOT_TEST_CATALOG")
    audio = os.path.abspath(require("EARSHOT_TEST_AUDIO"))
    item_id = os.environ.get("EARSHOT_TEST_ITEM") or Path(audio).stem

    state = root / "state"
    (state / "catalogs").mkdir(parents=True)
    catalog_name = Path(catalog_file).stem
    shutil.copy(catalog_file, state / "catalogs" / f"{catalog_name}.earcat")
    keys: Dict[str, str] = {}
    if clients:
        lines = []
        for name, role in clients.items():
            public, secret = (k.decode() for k in zmq.curve_keypair())
            key_file = root / f"{name}.key"
            key_file.write_text(f"# {name} ({role})\n{secret}\n")
            keys[name] = str(key_file)
            lines.append(f"{public} {name} {role}")
        (state / "clients.allow").write_text("\n".join(lines) + "\n")
    config = root / "earshotd.toml"
    config.write_text(
        "\n".join(
            [
                "[daemon]",
                f"state_directory = {json.dumps(str(state))}",
                'log_level = "debug"',
                "[audio]",
                'source = "file"',
                f"file = {json.dumps(audio)}",
                "loop = true",
                "[session]",
                session,
                # Most tests are about the client and the protocol, not access control:
                # plain mode on loopback (the Swift daemon tests cover CURVE; test_security.py
                # and the library tests run daemons with keys).
                "[security]",
                'mode = "curve"' if clients else 'mode = "none"',
                extra,
                "",
            ]
        )
    )
    rpc = f"tcp://127.0.0.1:{free_port()}"
    events = f"tcp://127.0.0.1:{free_port()}"
    log_path = root / "earshotd.log"
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [
            os.path.abspath(binary),
            "--config",
            str(config),
            f"--rpc.listen={json.dumps([rpc])}",
            f"--events.listen={json.dumps([events])}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=root,
    )
    daemon = Daemon(process, rpc, events, catalog_name, item_id, audio, state, log_path)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        last_error = None
        if clients:
            daemon.server_key, daemon.keys = str(state / "server.public"), keys
            while not (state / "server.public").exists():  # made at the first start
                daemon.check_alive()
                if time.monotonic() > deadline:
                    pytest.fail(f"earshotd made no server.public; its log:\n{daemon.log_tail()}", pytrace=False)
                time.sleep(0.05)
        with daemon.client(next(iter(keys), None), timeout=1.0) as probe:
            while True:
                daemon.check_alive()
                try:
                    if probe.health() == pb.SERVING_STATUS_SERVING:
                        break
                except RpcError as error:
                    last_error = error
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"earshotd did not serve within {READY_TIMEOUT:g} s ({last_error});"
                        f" its log:\n{daemon.log_tail()}",
                        pytrace=False,
                    )
                time.sleep(0.2)
        yield daemon
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                log.close()
                pytest.fail(
                    f"earshotd did not stop within 15 s of SIGTERM; its log:\n{daemon.log_tail()}", pytrace=False
                )
        log.close()
    # A graceful stop exits 0 (earshotd's documented exit status).
    if process.returncode != 0:
        pytest.fail(
            f"earshotd exited with status {process.returncode} after SIGTERM; its log:\n{daemon.log_tail()}",
            pytrace=False,
        )
