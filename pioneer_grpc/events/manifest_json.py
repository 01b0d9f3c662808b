"""A manifest as the JSON stored on its turn, printed once per distinct manifest.

Printing a message to JSON is pure Python and costs more than the rest of
recording it. Every round of a thread whose compile was a cache hit records the
same manifest but for its thread and turn ids, so the JSON object of the
manifest without them is kept (a few, bounded in bytes) and the ids are added to
a shallow copy. The text is exactly what `json_format.MessageToJson` prints.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format

from pioneer_grpc.remembered import Remembered
from pioneer_grpc.v1 import prompt_pb2

# Bytes of manifests (as keys) kept with their JSON objects; the objects are a few times larger.
_KEPT_BYTES = 4 * 1024 * 1024
_objects: Remembered[dict[str, Any]] = Remembered(_KEPT_BYTES)


def _printed(manifest: prompt_pb2.PromptManifest) -> dict[str, Any]:
    return json_format.MessageToDict(manifest, preserving_proto_field_name=True)


def _object_without_ids(manifest: prompt_pb2.PromptManifest) -> dict[str, Any]:
    bare = prompt_pb2.PromptManifest()
    bare.CopyFrom(manifest)
    bare.ClearField("thread_id")
    bare.ClearField("turn_id")
    key = bare.SerializeToString(deterministic=True)
    found = _objects.get(key)
    if found is None:
        found = _printed(bare)
        _objects.put(key, found)
    return found


def manifest_json(manifest: prompt_pb2.PromptManifest) -> str:
    """`MessageToJson(manifest, preserving_proto_field_name=True, indent=None, sort_keys=True)`."""
    printed = dict(_object_without_ids(manifest))
    for name in ("thread_id", "turn_id"):
        value = getattr(manifest, name)
        if value:
            printed[name] = value
    return json.dumps(printed, indent=None, sort_keys=True, ensure_ascii=True)
