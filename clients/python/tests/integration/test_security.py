"""earshotd with CURVE on (its default): the Python client with keys, without, and by role."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import zmq

from daemon_env import free_port, require

from earshot_client import Client, RpcError, StatusCode, Subscriber, Topics, pb


pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secure_daemon(tmp_path_factory):
    binary = require("EARSHOTD")
    catalog = require("EARSHOT_TEST_CATALOG")
    audio = os.path.abspath(require("EARSHOT_TEST_AUDIO"))
    root = tmp_path_factory.mktemp("earshotd-curve")
    state = root / "state"
    (state / "catalogs").mkdir(parents=True)
    shutil.copy(catalog, state / "catalogs" / "test.earcat")
    public, secret = (k.decode() for k in zmq.curve_keypair())
    key_file = root / "operator.key"
    key_file.write_text(f"# test operator\n{secret}\n")
    admin_public, admin_secret = (k.decode() for k in zmq.curve_keypair())
    admin_key_file = root / "admin.key"
    admin_key_file.write_text(f"# test admin\n{admin_secret}\n")
    (state / "clients.allow").write_text(f"{public} py-operator operator\n{admin_public} py-admin admin\n")
    rpc, events = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    log_path = root / "earshotd.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [os.path.abspath(binary), f"--daemon.state_directory={state}", "--audio.source=file",
             f"--audio.file={audio}", f"--rpc.listen={json.dumps([rpc])}", f"--events.listen={json.dumps([events])}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root)
        try:
            deadline = time.monotonic() + 30
            while not (state / "server.public").exists() or b"listening on" not in log_path.read_bytes():
                assert process.poll() is None, log_path.read_text(errors="replace")
                assert time.monotonic() < deadline, log_path.read_text(errors="replace")
                time.sleep(0.1)
            yield rpc, events, str(state / "server.public"), str(key_file), str(admin_key_file)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_listed_key_is_served_within_its_role(secure_daemon):
    rpc, _, server_key, key, _ = secure_daemon
    with Client(rpc, timeout=10.0, server_key=server_key, client_key=key) as client:
        assert client.health() in (pb.SERVING_STATUS_SERVING, pb.SERVING_STATUS_NOT_SERVING)
        # Any role may list the catalogs (the catalog/ topic's snapshot); only an admin describes one.
        assert [c.name for c in client.catalogs()] == ["test"]
        with pytest.raises(RpcError) as denied:
            client.describe_catalog("test")
        assert denied.value.code == StatusCode.PERMISSION_DENIED


def test_only_an_admin_key_manages_and_pushes_catalogs(secure_daemon, tmp_path):
    rpc, _, server_key, operator_key, admin_key = secure_daemon
    catalog = tmp_path / "py-curve.earcat"
    shutil.copy(require("EARSHOT_TEST_CATALOG"), catalog)
    with Client(rpc, timeout=10.0, server_key=server_key, client_key=operator_key) as operator:
        for call in (lambda: operator.push_catalog(catalog), lambda: operator.enable_catalog("test")):
            with pytest.raises(RpcError) as denied:
                call()
            assert denied.value.code == StatusCode.PERMISSION_DENIED
    with Client(rpc, timeout=10.0, server_key=server_key, client_key=admin_key) as admin:
        reply = admin.push_catalog(catalog)
        assert reply.catalog.name == "py-curve" and reply.catalog.version == 1
        assert {c.name for c in admin.catalogs()} == {"test", "py-curve"}
        assert admin.remove_catalog("py-curve").removed.name == "py-curve"


def test_no_keys_or_unknown_keys_get_no_answer(secure_daemon):
    rpc, _, server_key, _, _ = secure_daemon
    public, secret = (k.decode() for k in zmq.curve_keypair())
    for options in ({}, {"server_key": server_key, "client_key": (public, secret)}):
        with Client(rpc, timeout=1.5, **options) as client:
            with pytest.raises(RpcError) as refused:
                client.health()
            assert refused.value.code == StatusCode.DEADLINE_EXCEEDED


def test_subscriber_with_keys_hears_heartbeats(secure_daemon):
    _, events, server_key, key, _ = secure_daemon
    with Subscriber(events, Topics.HEARTBEAT, server_key=server_key, client_key=key) as subscriber:
        assert subscriber.recv(timeout=10.0) is not None


def test_keys_go_together():
    with pytest.raises(ValueError):
        Client("tcp://127.0.0.1:1", server_key="x" * 40)
