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

import pytest

from daemon_env import Daemon, run_earshotd

from earshot_client import Client, RpcError, pb


@pytest.fixture(scope="session")
def earshotd(tmp_path_factory):
    with run_earshotd(tmp_path_factory.mktemp("earshotd")) as daemon:
        yield daemon


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
    if report.failed and hasattr(item, "funcargs"):
        for name, daemon in item.funcargs.items():
            if isinstance(daemon, Daemon):
                report.sections.append((f"{name} log (last lines)", daemon.log_tail()))
