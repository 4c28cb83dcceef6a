"""RPC status codes (gRPC's 0-16, same numbers and meanings) and the error a failed call raises."""

from __future__ import annotations

import enum
from typing import Mapping, Optional


class StatusCode(enum.IntEnum):
    """gRPC status codes, as carried by ``earshot.v1.Status.code``."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


def code_name(code: int) -> str:
    """``"NOT_FOUND"`` for 5; ``"CODE_42"`` for a code outside 0-16."""
    try:
        return StatusCode(code).name
    except ValueError:
        return f"CODE_{code}"


class RpcError(Exception):
    """A call that ended with a status other than OK, or that the client gave up on.

    ``code`` is the numeric gRPC code (an int; compare with :class:`StatusCode`), ``code_name``
    its name (``"DEADLINE_EXCEEDED"``), ``message`` the server's (or the client's) explanation,
    ``method`` the method path and ``trailers`` the END reply's trailers, if any.
    """

    def __init__(
        self,
        code: int,
        message: str = "",
        *,
        method: str = "",
        trailers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.code = int(code)
        self.code_name = code_name(self.code)
        self.message = message
        self.method = method
        self.trailers = dict(trailers or {})
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" ({self.method})" if self.method else ""
        return f"{self.code_name}{where}: {self.message}" if self.message else f"{self.code_name}{where}"

    def __repr__(self) -> str:
        return f"RpcError({self.code_name}, {self.message!r}, method={self.method!r})"

    @property
    def status(self) -> StatusCode | int:
        """The code as a :class:`StatusCode` when it is one of 0-16, else the int."""
        try:
            return StatusCode(self.code)
        except ValueError:
            return self.code
