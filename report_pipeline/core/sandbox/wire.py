"""Typed messages between a confined child and its parent.

A message is a frozen dataclass registered under a kind (`@message("image")`); its fields are
JSON values or other dataclasses of JSON values. A frame is two big-endian lengths, a JSON header
(the kind and the fields) and the payload bytes (a PNG, or a quarantined stream kept as
evidence). Nothing but JSON and bytes crosses: the parent never unpickles what a child that has
read hostile input sends it, and a header of an unknown kind or with unknown fields is refused.
"""

from __future__ import annotations

import json
import socket
import struct
import typing
from dataclasses import dataclass, fields, is_dataclass
from types import UnionType
from typing import Any

from report_pipeline.core.model.store_json import record_to_dict

_HEAD = struct.Struct(">II")
MAX_HEADER, MAX_PAYLOAD = 1 << 20, 1 << 30
_KINDS: dict[str, type] = {}
_NESTED: dict[type, dict[str, type]] = {}  # a message's fields that hold a dataclass


class ChildGone(Exception):
    """The other end closed the socket."""


class BadMessage(ValueError):
    """A frame that is not a message this side knows."""


def message(kind: str):
    """Register a message class under `kind` (and make it a frozen dataclass)."""

    def register(cls: type) -> type:
        cls = dataclass(frozen=True)(cls)
        if kind in _KINDS:
            raise ValueError(f"message kind {kind!r} registered twice")
        _KINDS[kind] = cls
        cls.KIND = kind
        return cls

    return register


def send(sock: socket.socket, msg: Any, payload: bytes = b"") -> None:
    header = json.dumps({"t": type(msg).KIND, **record_to_dict(msg)}).encode()
    sock.sendall(_HEAD.pack(len(header), len(payload)) + header)
    if payload:
        sock.sendall(payload)


def receive(sock: socket.socket) -> tuple[Any, bytes]:
    sizes = _exact(sock, _HEAD.size)
    header, payload = _HEAD.unpack(sizes)
    if header > MAX_HEADER or payload > MAX_PAYLOAD:
        raise BadMessage("oversized frame")
    body = json.loads(_exact(sock, header))
    if not isinstance(body, dict) or body.get("t") not in _KINDS:
        raise BadMessage("a frame of no known kind")
    return _build(_KINDS[body.pop("t")], body), _exact(sock, payload)


def _build(cls: type, body: dict) -> Any:
    nested = _nested(cls)
    try:
        values = {k: _build(nested[k], v) if k in nested and v is not None else v
                  for k, v in body.items()}  # fmt: skip
        return cls(**values)
    except (TypeError, AttributeError) as bad:
        raise BadMessage(f"a {cls.__name__} with unexpected fields") from bad


def _nested(cls: type) -> dict[str, type]:
    found = _NESTED.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = {}
        for f in fields(cls):
            hint = hints[f.name]
            options = typing.get_args(hint) if isinstance(hint, UnionType) else (hint,)
            inner = [o for o in options if isinstance(o, type) and is_dataclass(o)]
            if inner:
                found[f.name] = inner[0]
        _NESTED[cls] = found
    return found


def _exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ChildGone()
        data += chunk
    return bytes(data)
