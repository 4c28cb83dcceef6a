"""Fixtures for the unit tests (fake server and publisher) and the integration-test selection.

Integration tests (marker ``integration``, under ``tests/integration``) start the real earshotd
named by the ``EARSHOTD`` environment variable. When it is set they run with everything else.
When it is not set they are deselected — unless they were asked for (``-m integration``, or a
path under tests/integration), in which case their fixture fails with an error rather than
skipping: CI always sets it, and a silently skipped integration run must not pass for a green one.
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # for `import fakes`

from fakes import FakePublisher, FakeServer  # noqa: E402

from earshot_client import Client  # noqa: E402


def _integration_requested(config) -> bool:
    markexpr = (config.getoption("markexpr") or "").replace(" ", "")
    if "integration" in markexpr and "notintegration" not in markexpr:
        return True
    return any("integration" in str(arg) for arg in config.args)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("EARSHOTD") or _integration_requested(config):
        return
    selected, deselected = [], []
    for item in items:
        (deselected if item.get_closest_marker("integration") else selected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_report_header(config):
    binary = os.environ.get("EARSHOTD")
    if binary:
        return f"earshotd (integration tests): {binary}"
    return "earshotd: EARSHOTD not set, integration tests deselected (see clients/python/README.md)"


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


@pytest.fixture
def publisher():
    p = FakePublisher()
    yield p
    p.close()


@pytest.fixture
def client(server):
    c = Client(server.endpoint, timeout=3.0)
    yield c
    c.close()
