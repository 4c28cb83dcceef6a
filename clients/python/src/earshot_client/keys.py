"""CURVE keys for a daemon with security on: its public key and this client's key pair.

Key files are the ones ``earshot keygen`` and earshotd write: one 40-character Z85 key per
file (a secret key in ``NAME.key``, a public key in ``NAME.pub`` / ``server.public``), with
comment lines starting with '#' (a line that is itself a key is not a comment: '#' is a Z85
character too).
"""

import os
from typing import Tuple, Union

import zmq
from zmq.utils import z85


def _is_key(text: str) -> bool:
    if len(text) != 40:
        return False
    try:
        return len(z85.decode(text)) == 32
    except Exception:
        return False


def read_key_file(path: Union[str, os.PathLike]) -> str:
    """The one key in a key file, as Z85 text."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    keys = [line for line in lines if line and not (line.startswith("#") and not _is_key(line))]
    if len(keys) != 1 or not _is_key(keys[0]):
        raise ValueError(f"{path}: a key file holds one 40-character Z85 key (and '#' comments)")
    return keys[0]


def server_key(value: Union[str, bytes, os.PathLike]) -> str:
    """A server public key given as Z85 text or as the path of a key file."""
    if isinstance(value, bytes):
        value = value.decode("ascii")
    if isinstance(value, str) and _is_key(value):
        return value
    if os.path.exists(value):
        return read_key_file(value)
    raise ValueError(f"{value!r} is neither a 40-character Z85 key nor a key file")


def client_key(value: Union[str, os.PathLike, Tuple[str, str]]) -> Tuple[str, str]:
    """(public, secret) from a secret key file, or a (public, secret) pair as given."""
    if isinstance(value, tuple):
        return value
    secret = read_key_file(value)
    return zmq.curve_public(secret.encode("ascii")).decode("ascii"), secret


def curve_keys(server: Union[str, bytes, os.PathLike], client: Union[str, os.PathLike, Tuple[str, str]]):
    """The ``curve`` tuple of :class:`Client` and :class:`Subscriber`."""
    public, secret = client_key(client)
    return server_key(server), public, secret
