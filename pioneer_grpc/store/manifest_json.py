"""A manifest as the JSON stored on its turn, printed once per distinct manifest.

Printing a message to JSON is pure Python and costs more than the rest of
recording it. Every round of a thread whose compile was a cache hit records the
same manifest but for its thread and turn ids, so the manifest without them is
kept (a few, bounded in bytes) as its top-level fields, each name with its value
already printed, and a round only places its two ids among them. The text is
exactly what `json_format.MessageToJson` prints (sorted keys, no indent).
"""

from __future__ import annotations

import bisect
import json

from google.protobuf import json_format

from pioneer_grpc.remembered import Remembered
from pioneer_grpc.v1 import prompt_pb2

# Bytes of manifests (as keys) kept with their JSON objects; the objects are a few times larger.
_KEPT_BYTES = 4 * 1024 * 1024
# (names, "name": value texts), in name order, as json.dumps(sort_keys=True) joins them.
_Fields = tuple[list[str], list[str]]
_fields: Remembered[_Fields] = Remembered(_KEPT_BYTES)


def _field(name: str, value: object) -> str:
    return f"{json.dumps(name)}: {json.dumps(value, indent=None, sort_keys=True, ensure_ascii=True)}"


def _printed(manifest: prompt_pb2.PromptManifest) -> _Fields:
    printed = json_format.MessageToDict(manifest, preserving_proto_field_name=True)
    names = sorted(printed)
    return names, [_field(name, printed[name]) for name in names]


def _fields_without_ids(manifest: prompt_pb2.PromptManifest) -> _Fields:
    bare = prompt_pb2.PromptManifest()
    bare.CopyFrom(manifest)
    bare.ClearField("thread_id")
    bare.ClearField("turn_id")
    key = bare.SerializeToString(deterministic=True)
    found = _fields.get(key)
    if found is None:
        found = _printed(bare)
        _fields.put(key, found)
    return found


def manifest_json(manifest: prompt_pb2.PromptManifest) -> str:
    """`MessageToJson(manifest, preserving_proto_field_name=True, indent=None, sort_keys=True)`."""
    names, texts = _fields_without_ids(manifest)
    names, texts = list(names), list(texts)
    for name in ("thread_id", "turn_id"):
        value = getattr(manifest, name)
        if value:
            at = bisect.bisect(names, name)
            names.insert(at, name)
            texts.insert(at, _field(name, value))
    return "{" + ", ".join(texts) + "}"
