"""vk.save / vk.load: one safetensors file for tensors, state dicts and nested containers.

* A flat {str: Tensor} dict is written as an ordinary safetensors file (its keys unchanged), so
  safetensors.torch.load_file reads it, and any safetensors file loads back as {name: Tensor}.
* Anything else (nested dicts/lists/tuples of tensors, Python scalars, strings, None: optimizer and
  scheduler state, RNG state, the epoch) stores its tensors under dotted keys built from the path
  (components percent-escaped) and the structure as JSON in the header's __metadata__["vkml"].
The write is atomic (temp file, fsync, rename: vk::io::save_safetensors).
"""

import json
import os

from . import _C
from ._C import Tensor

__all__ = ["save", "load"]

_META_KEY = "vkml"
_FORMAT = "vkml.tree/1"


def _escape(component):
    return str(component).replace("%", "%25").replace(".", "%2E")


def _is_flat(obj):
    return (isinstance(obj, dict) and all(isinstance(k, str) for k in obj)
            and all(isinstance(v, Tensor) for v in obj.values()))


def _encode(obj, path, tensors, names):
    if isinstance(obj, Tensor):
        key = ".".join(path) if path else "tensor"
        base, n = key, 1
        while key in names:
            key = f"{base}%23{n}"
            n += 1
        names.add(key)
        tensors.append((key, obj.detach()))
        return {"__tensor__": key}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, _C.dtype):
        return {"__dtype__": str(obj).split(".")[-1]}
    try:  # numpy scalars and arrays, without importing numpy unless it is in use
        import numpy as np
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return {"__ndarray__": _encode(_C.tensor(obj), path, tensors, names)["__tensor__"]}
    except ImportError:
        pass
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool, tuple)) and k is not None:
                raise TypeError(f"vk.save: unsupported dict key type {type(k).__name__}")
            items.append([_encode(k, [], [], set()) if not isinstance(k, tuple) else {"__tuple__": list(k)},
                          _encode(v, path + [_escape(k)], tensors, names)])
        return {"__dict__": items}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, path + [str(i)], tensors, names) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, path + [str(i)], tensors, names) for i, v in enumerate(obj)]
    raise TypeError(f"vk.save: cannot store an object of type {type(obj).__name__} "
                    "(tensors, dicts, lists, tuples, numbers, strings and None are supported)")


def _decode(node, tensors):
    if isinstance(node, list):
        return [_decode(v, tensors) for v in node]
    if not isinstance(node, dict):
        return node
    if "__tensor__" in node:
        return tensors[node["__tensor__"]]
    if "__ndarray__" in node:
        return tensors[node["__ndarray__"]].numpy().copy()
    if "__tuple__" in node:
        return tuple(_decode(v, tensors) for v in node["__tuple__"])
    if "__dtype__" in node:
        return getattr(_C.dtype, node["__dtype__"])
    if "__dict__" in node:
        out = {}
        for k, v in node["__dict__"]:
            k = _decode(k, tensors)
            out[k] = _decode(v, tensors)
        return out
    raise ValueError(f"vk.load: malformed structure node {node!r}")


def save(obj, f, metadata=None):
    """Writes obj to the safetensors file f (a path), atomically."""
    path = os.fspath(f)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    if _is_flat(obj):
        tensors = [(k, v.detach()) for k, v in obj.items()]
    else:
        tensors = []
        tree = _encode(obj, [], tensors, set())
        meta[_META_KEY] = json.dumps({"format": _FORMAT, "tree": tree}, separators=(",", ":"))
    _C._io.save_safetensors(path, tensors, meta)


def load(f, map_location=None, weights_only=True):
    """Reads a file written by vk.save (or any safetensors file, as {name: Tensor})."""
    named, meta = _C._io.load_safetensors(os.fspath(f))
    tensors = dict(named)
    if _META_KEY in meta:
        doc = json.loads(meta[_META_KEY])
        if doc.get("format") != _FORMAT:
            raise ValueError(f"vk.load: unknown vkml structure format {doc.get('format')!r}")
        return _decode(doc["tree"], tensors)
    return {k: v for k, v in named}
