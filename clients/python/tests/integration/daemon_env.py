"""What both integration modules need to start earshotd: a free port and the environment's paths."""

from __future__ import annotations

import os
import socket

import pytest


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
