"""The real earshotd as a process on loopback ports, for the integration tests.

Environment (CI sets all three; the tests fail — not skip — when one is missing):
  EARSHOTD              path of the earshotd binary
  EARSHOT_TEST_CATALOG  a catalog file (.earcat); copied into <state>/catalogs/
  EARSHOT_TEST_AUDIO    an audio file (WAV…) of a recording in that catalog, played in a loop
                        as the daemon's file source
  EARSHOT_TEST_ITEM     optional: the media item id that audio should match (default: the
                        audio file's name without extension — `earshot catalog create`'s
                        default id)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from daemon_env import free_port, require

from earshot_client import Client, RpcError, pb

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

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def check_alive(self) -> None:
        code = self.process.poll()
        if code is not None:
            pytest.fail(f"earshotd exited with status {code}; its log:\n{self.log_tail()}", pytrace=False)


@pytest.fixture(scope="session")
def earshotd(tmp_path_factory):
    binary = require("EARSHOTD")
    catalog_file = require("EARSHOT_TEST_CATALOG")
    audio = os.path.abspath(require("EARSHOT_TEST_AUDIO"))
    item_id = os.environ.get("EARSHOT_TEST_ITEM") or Path(audio).stem

    root = tmp_path_factory.mktemp("earshotd")
    state = root / "state"
    (state / "catalogs").mkdir(parents=True)
    catalog_name = Path(catalog_file).stem
    shutil.copy(catalog_file, state / "catalogs" / f"{catalog_name}.earcat")
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
                "prepare_on_start = true",
                "follow = true",
                # These tests are about the client and the protocol, not access control:
                # plain mode on loopback (the Swift daemon tests cover CURVE, and
                # test_security.py runs its own daemon with keys).
                "[security]",
                'mode = "none"',
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
        with Client(rpc, timeout=1.0) as probe:
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


@pytest.fixture
def client(earshotd):
    with Client(earshotd.rpc, timeout=10.0) as c:
        yield c


@pytest.fixture(autouse=True)
def still_serving(request, earshotd):
    """After every test — whatever it sent — the daemon still answers a well-behaved client."""
    yield
    earshotd.check_alive()
    with Client(earshotd.rpc, timeout=5.0) as c:
        try:
            c.ping()
            assert c.health() == pb.SERVING_STATUS_SERVING
        except RpcError as error:
            pytest.fail(
                f"earshotd no longer serves after {request.node.name}: {error}\n{earshotd.log_tail()}", pytrace=False
            )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    daemon = item.funcargs.get("earshotd") if hasattr(item, "funcargs") else None
    if report.failed and isinstance(daemon, Daemon):
        report.sections.append(("earshotd log (last lines)", daemon.log_tail()))
