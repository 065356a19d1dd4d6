"""Errors of strict files (scenarios, fixtures) said in a user's terms: where, and for an
unknown key, the closest key that the object at that place accepts."""

from __future__ import annotations

import difflib
import re
from typing import Any

import msgspec
from msgspec import inspect as mi

from emulator.wire import decode, split_validation_error

_UNKNOWN = re.compile(r"^Object contains unknown field `([^`]*)`")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[(\.\.\.)\]")
ANY_KEY = "[...]"  # msgspec's name for "a value of this dict"


def explain(
    exc: msgspec.ValidationError | msgspec.DecodeError, root: Any, data: Any
) -> tuple[str, str]:
    """(JSON path, message) of a decoding error of `data` (the decoded JSON, or its bytes)
    as `root`. An unknown key is named in the path, and the message suggests the nearest
    accepted key ("unknown key `expcet` (did you mean `expect`?)")."""
    where, message = split_validation_error(exc)
    unknown = _UNKNOWN.match(str(exc))
    if unknown is None:
        return where, message
    key = unknown.group(1)
    if isinstance(data, str | bytes | bytearray | memoryview | msgspec.Raw):
        try:
            data = decode(data if isinstance(data, str) else bytes(data))
        except msgspec.DecodeError:
            data = None
    keys = accepted_keys(root, steps(where), data)
    path = f"{where}.{key}" if where else key
    return path, unknown_key_message(key, keys)


def unknown_key_message(key: str, keys: list[str]) -> str:
    """`unknown key `k` (did you mean `x`?)`, or the accepted keys when none is close."""
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    if close:
        return f"unknown key `{key}` (did you mean `{close[0]}`?)"
    if not keys:
        return f"unknown key `{key}`"
    return f"unknown key `{key}` (accepted: {', '.join(f'`{k}`' for k in sorted(keys))})"


def steps(path: str) -> list[str | int]:
    """'steps[0].expect' -> ['steps', 0, 'expect']; a dict's value ('[...]') is ANY_KEY."""
    out: list[str | int] = []
    for match in _STEP.finditer("." + path if path and not path.startswith("[") else path):
        name, index, any_key = match.groups()
        out.append(int(index) if index is not None else ANY_KEY if any_key else name)
    return out


def accepted_keys(root: Any, path: list[str | int], data: Any) -> list[str]:
    """The keys the object at `path` of `data`, decoded as `root`, accepts (empty when no
    struct is found there)."""
    node: mi.Type | None = mi.type_info(root)
    value = data
    for step in path:
        node = _narrow(node, value)
        if isinstance(step, int):
            node = node.item_type if isinstance(node, mi.ListType | mi.VarTupleType) else None
            value = value[step] if isinstance(value, list) and step < len(value) else None
        else:
            if isinstance(node, mi.StructType):
                field = next((f for f in node.fields if f.encode_name == step), None)
                node = None if field is None else field.type
            elif isinstance(node, mi.DictType):
                node = node.value_type
            else:
                node = None
            value = value.get(step) if isinstance(value, dict) and step != ANY_KEY else None
    node = _narrow(node, value)
    if not isinstance(node, mi.StructType):
        return []
    keys = [f.encode_name for f in node.fields]
    return [node.tag_field, *keys] if node.tag_field else keys


def _narrow(node: mi.Type | None, value: Any) -> mi.Type | None:
    """The type a value takes: metadata unwrapped, the member of a union its shape (and a
    tagged union's tag) selects."""
    while isinstance(node, mi.Metadata):
        node = node.type
    if not isinstance(node, mi.UnionType):
        return node
    members = [t.type if isinstance(t, mi.Metadata) else t for t in node.types]
    structs = [t for t in members if isinstance(t, mi.StructType)]
    if isinstance(value, dict) and structs:
        for struct in structs:
            if struct.tag_field is not None and value.get(struct.tag_field) == struct.tag:
                return struct
        return structs[0]
    if isinstance(value, list):
        return next((t for t in members if isinstance(t, mi.ListType)), None)
    return next((t for t in members if isinstance(t, mi.StructType | mi.DictType)), None)
