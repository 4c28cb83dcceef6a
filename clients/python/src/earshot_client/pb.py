"""Every ``earshot.v1`` message class and enum in one namespace: ``pb.MatchResult``,
``pb.SERVING_STATUS_SERVING``, ``pb.SessionState.Name(v)``…

The classes come from the generated modules in ``earshot.v1`` (``scripts/generate-proto.sh``);
this module only gathers them so callers need not know which ``.proto`` declares what.
"""

from __future__ import annotations

from google.protobuf.descriptor import EnumDescriptor as _EnumDescriptor
from google.protobuf.message import Message as _Message

from earshot.v1 import (  # noqa: F401  (re-exported as modules too)
    catalogs_pb2,
    cues_pb2,
    envelope_pb2,
    events_pb2,
    health_pb2,
    library_pb2,
    recognizer_pb2,
    session_pb2,
    types_pb2,
)

_MODULES = (types_pb2, envelope_pb2, recognizer_pb2, session_pb2, catalogs_pb2, cues_pb2, library_pb2, health_pb2, events_pb2)

__all__ = []
for _module in _MODULES:
    _file = _module.DESCRIPTOR
    for _name in _file.message_types_by_name:
        globals()[_name] = getattr(_module, _name)
        __all__.append(_name)
    for _name, _enum in _file.enum_types_by_name.items():
        globals()[_name] = getattr(_module, _name)
        __all__.append(_name)
        for _value in _enum.values:
            globals()[_value.name] = _value.number
            __all__.append(_value.name)
del _module, _file, _name


def enum_name(enum_type, value: int, *, short: bool = True) -> str:
    """``enum_name(pb.SessionState, 2)`` → ``"PRERECORDING"`` (``short=False``:
    ``"SESSION_STATE_PRERECORDING"``); an unknown number gives ``"UNKNOWN_ENUM_<n>"``."""
    descriptor: _EnumDescriptor = enum_type.DESCRIPTOR
    value_descriptor = descriptor.values_by_number.get(int(value))
    if value_descriptor is None:
        return f"UNKNOWN_ENUM_{int(value)}"
    name = value_descriptor.name
    if short:
        prefix = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(descriptor.name)).upper() + "_"
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def is_message_class(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, _Message)
