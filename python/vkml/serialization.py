"""vk.save / vk.load: one safetensors file for tensors, state dicts and nested containers.

* A flat {str: Tensor} dict is written as an ordinary safetensors file (its keys unchanged), so
  safetensors.torch.load_file reads it, and any safetensors file loads back as {name: Tensor}.
* Anything else (nested dicts/lists/tuples of tensors, Python scalars, strings, None: optimizer and
  scheduler state, RNG state, the epoch) stores its tensors under dotted keys built from the path
  (components percent-escaped) and the structure as JSON in the header's __metadata__["vkml"].

What round-trips: Tensors (detached: loaded tensors do not require grad), None, bool, int, float
(NaN and infinities included), str (any text, lone surrogates too), vk dtypes, numpy arrays and
scalars of the bool, int8-64, uint8-32 (arrays) / uint8-64 (scalars) and float16-64 dtypes, and
dicts, lists and tuples of these, nested up to 100 levels, with dict keys that are None, bool,
int, float, str, vk dtypes, numpy scalars or tuples of these. Subclasses come back as their base
type (an OrderedDict as a dict, a namedtuple as a tuple, an IntEnum as an int); a tensor stored
twice comes back as two tensors. Anything else is refused by vk.save with TypeError (ValueError for
nesting deeper than 100 levels, a container that contains itself, or metadata it cannot store)
before anything is written. `metadata` is a dict of str to str (as safetensors requires) stored in
the file's __metadata__ (safetensors.safe_open(path, "np").metadata() reads it); its key "vkml" is
vk.save's own.

vk.load treats the file as untrusted: the structure may only use the node kinds above, dtype names
from a fixed list, and references to tensors that are in the file (each at most once); anything
else, or nesting deeper than vk.save writes, is a ValueError naming the file. Decoding is
iterative.

The write is atomic (temp file, fsync, rename: vk::io::PendingSave) and writes through a symlink,
keeping the target's permissions; a Ctrl-C (KeyboardInterrupt) during vk.save either stops it with
nothing committed (the interrupt propagates; the previous file and no temp file remain) or, if it
arrives while the new file is being renamed into place, is held back until the rename is done and
then dropped, so that vk.save returns normally: an exception from vk.save always means that the
previous file is still there.
"""

import json
import os
import re
import signal
import sys
import threading
from collections.abc import Mapping

from . import _C, _torch_format
from ._C import Tensor

__all__ = ["save", "load"]

_META_KEY = "vkml"
_FORMAT = "vkml.tree/1"
_MAX_DEPTH = 100  # containers in containers; deeper JSON would reach json's recursion limit
_VK_DTYPES = {name: getattr(_C.dtype, name)
              for name in ("float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32",
                           "int64", "bool")}
# numpy dtypes stored exactly: arrays go through a vkml tensor of the dtype vk.tensor gives them.
_NP_ARRAY_DTYPES = {"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
                    "uint8": "uint8", "uint16": "int64", "uint32": "int64", "float16": "float16",
                    "float32": "float32", "float64": "float64"}
# Files written before vkml had the narrow dtypes (#19) stored these arrays widened: still read.
_NP_ARRAY_WIDENED = {"int8": "int64", "int16": "int64", "uint8": "int64", "float16": "float32"}
_NP_SCALAR_DTYPES = {**{name: "bool" if name == "bool" else name[0] for name in _NP_ARRAY_DTYPES},
                     "uint64": "u"}
_SURROGATE = re.compile("[\ud800-\udfff]")


# ---- paths, metadata, names ----------------------------------------------------------------

def _fspath(f, op):
    try:
        path = os.fspath(f)
    except TypeError:
        raise TypeError(f"{op}: expected a path (str, bytes or os.PathLike), not {type(f).__name__}") from None
    if ("\0" if isinstance(path, str) else b"\0") in path:  # the C API would stop reading it there
        raise ValueError(f"{op}: embedded null byte in the path {path!r}")
    return path


def _is_utf8(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short(obj, limit=80):
    r = repr(obj)
    return r if len(r) <= limit else r[:limit] + "..."


def _check_metadata(metadata):
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"vk.save: metadata must be a dict of str to str, not {type(metadata).__name__}")
    meta = {}
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"vk.save: metadata must map str to str (as safetensors requires), got "
                            f"{_short(k)}: {_short(v)} ({type(k).__name__}: {type(v).__name__})")
        if k == _META_KEY:
            raise ValueError(f"vk.save: metadata key {k!r} is reserved (it holds the structure vk.save stores)")
        for text, what in ((k, "key"), (v, f"value of key {_short(k)}")):
            if not _is_utf8(text):
                raise ValueError(f"vk.save: metadata {what} {_short(text)} is not valid UTF-8 text (it holds a "
                                 "lone surrogate), which safetensors requires")
        meta[str.__str__(k)] = str.__str__(v)
    return meta


def _escape(component):
    """A path component of a tensor name: the separator '.' and '%' percent-escaped, and lone
    surrogates (which UTF-8, and so the format, cannot hold) written as %uXXXX."""
    s = str(component).replace("%", "%25").replace(".", "%2E")
    return _SURROGATE.sub(lambda m: f"%u{ord(m.group()):04X}", s)


def _is_flat(obj):
    return isinstance(obj, dict) and all(
        type(k) is str and k != "__metadata__" and _is_utf8(k) and isinstance(v, Tensor) for k, v in obj.items())


# ---- encoding (iterative: no recursion over the user's containers) ---------------------------

class _Encoder:
    def __init__(self):
        self.tensors = []  # (name, tensor) in the order they are met
        self.names = {"__metadata__"}  # taken; the format reserves this one

    def add(self, tensor, path):
        _refuse_uninitialized(tensor, _where(path))
        key = ".".join(path) if path else "tensor"
        base, n = key, 1
        while key in self.names:
            key = f"{base}%23{n}"
            n += 1
        self.names.add(key)
        self.tensors.append((key, tensor.detach()))
        return key


def _refuse_uninitialized(tensor, where):
    """A lazy module's parameter before its first forward holds no values: saving it would write
    an empty tensor that loads back as a shape-(0,) weight."""
    from .nn.parameter import is_lazy  # nn imports this module: imported when a save needs it
    if is_lazy(tensor):
        raise RuntimeError(f"vk.save: {where} is an uninitialized parameter or buffer of a lazy module; "
                           "run a forward (or load_state_dict) to give it its shape before saving")


def _where(path):
    return "obj" + "".join(f"[{p}]" for p in path)


def _np_dtype(dtype, table, what, path):
    if dtype.name not in table:
        raise TypeError(f"vk.save: cannot store a numpy {what} of dtype {dtype} exactly (at {_where(path)}; "
                        f"supported: {', '.join(table)})")
    return dtype.name


def _encode_leaf(obj, path, in_key, enc):
    """The JSON node of a non-container, or None when obj is a container (or unsupported)."""
    if obj is None or type(obj) in (bool, int, float, str):
        return (obj,)
    if isinstance(obj, _C.dtype):
        return ({"__dtype__": str(obj).rsplit(".", 1)[-1]},)
    np = sys.modules.get("numpy")  # numpy objects exist only if numpy is imported
    if np is not None and isinstance(obj, np.generic) and not isinstance(obj, (np.str_, np.bytes_)):
        name = _np_dtype(obj.dtype, _NP_SCALAR_DTYPES, "scalar", path)
        return ({"__npscalar__": [name, obj.item()]},)
    if isinstance(obj, (bool, int, float, str)):  # subclasses (IntEnum, np.str_): as the base type
        return (next(t for t in (bool, int, float, str) if isinstance(obj, t))(obj),)
    if in_key:
        if isinstance(obj, tuple):
            return None
        raise TypeError(f"vk.save: unsupported dict key type {type(obj).__name__} (at {_where(path)}; keys may be "
                        "None, bool, int, float, str, vk dtypes, numpy scalars and tuples of these)")
    if isinstance(obj, Tensor):
        return ({"__tensor__": enc.add(obj, path)},)
    if np is not None and isinstance(obj, np.ndarray):
        name = _np_dtype(obj.dtype, _NP_ARRAY_DTYPES, "array", path)
        return ({"__ndarray__": enc.add(_C.tensor(obj), path), "dtype": name},)
    return None


def _encode_container(obj, path, depth, in_key):
    """(node, children): the node of a container, its children as stack entries that fill it."""
    if depth >= _MAX_DEPTH:
        raise ValueError(f"vk.save: containers nested deeper than {_MAX_DEPTH} levels (at {_where(path[:8])}...; "
                         "a container that contains itself?)")
    if isinstance(obj, dict):
        pairs, children = [], []
        for k, v in obj.items():
            pair = []
            pairs.append(pair)
            children.append((k, path, depth + 1, pair, True))
            children.append((v, path + (_escape(k),), depth + 1, pair, False))
        return {"__dict__": pairs}, children
    if isinstance(obj, (tuple, list)):
        items = []
        children = [(v, path + (str(i),), depth + 1, items, in_key) for i, v in enumerate(obj)]
        return ({"__tuple__": items} if isinstance(obj, tuple) else items), children
    raise TypeError(f"vk.save: cannot store an object of type {type(obj).__name__} (at {_where(path)}; tensors, "
                    "dicts, lists, tuples, numbers, strings, None, dtypes and numpy arrays are supported)")


def _encode(obj):
    """(tree, [(name, tensor)]): obj as JSON-ready nodes, depth first with an explicit stack."""
    enc = _Encoder()
    root = []
    stack = [(obj, (), 0, root, False)]  # (object, path, depth, list its node goes into, is a key)
    while stack:
        item, path, depth, sink, in_key = stack.pop()
        leaf = _encode_leaf(item, path, in_key, enc)
        if leaf is not None:
            sink.append(leaf[0])
            continue
        node, children = _encode_container(item, path, depth, in_key)
        sink.append(node)
        stack.extend(reversed(children))
    return root[0], enc.tensors


def _dump(tree):
    try:
        return json.dumps({"format": _FORMAT, "tree": tree}, separators=(",", ":"))
    except RecursionError:  # only when called from deep in the caller's own stack
        raise ValueError("vk.save: the structure is nested too deeply for the current Python stack") from None
    except ValueError as e:  # an int too long to write in decimal (sys.get_int_max_str_digits)
        raise ValueError(f"vk.save: {e}") from None


# ---- decoding (iterative; the file is untrusted) ---------------------------------------------

class _Frame:
    """A container being decoded: its child nodes, and the values decoded so far."""
    __slots__ = ("kind", "children", "depth", "in_key", "i", "values")

    def __init__(self, kind, children, depth, in_key):
        self.kind, self.children, self.depth, self.in_key = kind, children, depth, in_key
        self.i, self.values = 0, []


class _Decoder:
    def __init__(self, tensors, where):
        self.tensors, self.where, self.used = tensors, where, set()

    def bad(self, what, node=None):
        detail = "" if node is None else f": {_short(node)}"
        raise ValueError(f"{self.where}: the structure stored in the file is invalid: {what}{detail}")

    def tensor(self, name, node):
        if type(name) is not str or name not in self.tensors:
            self.bad("a reference to a tensor that is not in the file", node)
        if name in self.used:
            self.bad("a tensor referenced twice", node)
        self.used.add(name)
        return self.tensors[name]

    def frame(self, kind, children, depth, in_key, node):
        if type(children) is not list:
            self.bad(f"{kind} items that are not a JSON array", node)
        if depth > _MAX_DEPTH:
            self.bad(f"containers nested deeper than {_MAX_DEPTH} levels")
        return _Frame(kind, children, depth, in_key)

    def node(self, node, depth, in_key):
        """The value of a leaf node, or a _Frame for a container."""
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            if in_key:
                self.bad("a list as a dict key", node)
            return self.frame("list", node, depth, False, node)
        if type(node) is not dict or not node:
            self.bad("an unknown node", node)
        if len(node) == 1:
            tag = next(iter(node))
        elif set(node) == {"__ndarray__", "dtype"}:
            tag = "__ndarray__"
        else:
            self.bad("an unknown node", node)
        value = node[tag]
        if tag == "__tuple__":
            return self.frame("tuple", value, depth, in_key, node)
        if tag == "__dtype__":
            if type(value) is not str or value not in _VK_DTYPES:
                self.bad("an unknown dtype", node)
            return _VK_DTYPES[value]
        if tag == "__npscalar__":
            return self.npscalar(value, node)
        if in_key and tag in ("__dict__", "__tensor__", "__ndarray__"):
            self.bad("a dict key that vk.save does not write", node)
        if tag == "__dict__":
            if type(value) is not list or any(type(p) is not list or len(p) != 2 for p in value):
                self.bad("dict items that are not [key, value] pairs", node)
            return self.frame("dict", [x for p in value for x in p], depth, False, node)
        if tag == "__tensor__":
            return self.tensor(value, node)
        if tag == "__ndarray__":
            return self.ndarray(value, node.get("dtype"), node)
        self.bad("an unknown node", node)

    def ndarray(self, name, dtype, node):
        if dtype is not None and (type(dtype) is not str or dtype not in _NP_ARRAY_DTYPES):
            self.bad("an unknown numpy dtype", node)
        t = self.tensor(name, node)
        stored = str(t.dtype).rsplit(".", 1)[-1]
        if dtype is not None and stored not in (_NP_ARRAY_DTYPES[dtype], _NP_ARRAY_WIDENED.get(dtype)):
            self.bad(f"a numpy {dtype} array stored as a {t.dtype} tensor", node)
        a = t.numpy()
        return a.copy() if dtype is None else a.astype(dtype)

    def npscalar(self, value, node):
        import numpy as np
        if type(value) is not list or len(value) != 2 or type(value[0]) is not str:
            self.bad("a numpy scalar that is not [dtype, value]", node)
        name, v = value
        kind = _NP_SCALAR_DTYPES.get(name)
        want = {None: (), "bool": (bool,), "f": (float,)}.get(kind, (int,))
        if type(v) not in want:
            self.bad("a numpy scalar with an unknown dtype or a value of the wrong type", node)
        if kind in ("i", "u") and not np.iinfo(name).min <= v <= np.iinfo(name).max:
            self.bad(f"a numpy {name} out of range", node)
        return np.dtype(name).type(v)

    def finish(self, fr):
        if fr.kind == "tuple":
            return tuple(fr.values)
        if fr.kind != "dict":
            return fr.values  # a list, or the root's one value
        out = {}
        vals = fr.values
        for k, v in zip(vals[::2], vals[1::2]):
            if k in out:
                self.bad(f"a duplicated dict key {_short(k)}")
            out[k] = v
        return out

    def decode(self, tree):
        root = _Frame("root", [tree], 0, False)
        stack = [root]
        while True:
            fr = stack[-1]
            if fr.i < len(fr.children):
                child = fr.children[fr.i]
                in_key = fr.in_key or (fr.kind == "dict" and fr.i % 2 == 0)
                fr.i += 1
                v = self.node(child, fr.depth + 1, in_key)
                if isinstance(v, _Frame):
                    stack.append(v)
                else:
                    fr.values.append(v)
                continue
            stack.pop()
            v = self.finish(fr)
            if not stack:
                return v[0]
            stack[-1].values.append(v)


def _no_duplicate_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicated key {_short(k)}")
        out[k] = v
    return out


def _parse(text, where):
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except RecursionError:
        raise ValueError(f"{where}: the structure stored in the file is nested too deeply") from None
    except ValueError as e:  # not JSON, a duplicated key, an int too long to read
        raise ValueError(f"{where}: the structure stored in the file is not valid JSON: {e}") from None
    if type(doc) is not dict or set(doc) != {"format", "tree"}:
        raise ValueError(f"{where}: the structure stored in the file is not a vkml structure: {_short(doc)}")
    if doc["format"] != _FORMAT:
        raise ValueError(f"{where}: unknown vkml structure format {_short(doc['format'])}")
    return doc["tree"]


# ---- the API ---------------------------------------------------------------------------------

def _commit(pending):
    """pending.commit(), with Ctrl-C held back while the rename runs (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pending.commit()  # the interrupt cannot land here, or its handler is the caller's own
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        pending.commit()
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and not pending.committed:
            raise KeyboardInterrupt


def save(obj, f, metadata=None):
    """Writes obj to the safetensors file f (a path), atomically. See the module docstring for
    what can be stored, what comes back, and what a Ctrl-C during the save does."""
    path = _fspath(f, "vk.save")
    meta = _check_metadata(metadata)
    if _is_flat(obj):
        for k, v in obj.items():
            _refuse_uninitialized(v, f"obj[{k}]")
        tensors = [(k, v.detach()) for k, v in obj.items()]
    else:
        tree, tensors = _encode(obj)
        meta[_META_KEY] = _dump(tree)
    # Written and fsynced here; a Ctrl-C that arrived meanwhile raises as this returns, and the
    # finally below removes the temp file.
    pending = _C._io.save_safetensors(path, tensors, meta, commit=False)
    try:
        _commit(pending)
    finally:
        pending.discard()  # a no-op after the commit


# ---- init/utils/hooks (#16): torch.save's files are named, not misread ----------------------------

def _refuse_torch_pickle(path):
    """A bare pickle (torch.save before torch 1.6, or with _use_new_zipfile_serialization=False)
    is a clear error: vkml reads safetensors and torch's zip archives (vkml/_torch_format.py)."""
    if not os.path.isfile(path):  # (opening a FIFO would block) the safetensors reader says what it is
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(9)
    except OSError:
        return  # the safetensors reader reports why the file cannot be read
    if len(head) == 9 and head[8:] == b"{":  # a safetensors header (its length may start with 0x80)
        return
    if head[:1] == b"\x80":
        raise ValueError(f"vk.load({path!r}): the file is a bare pickle, torch.save's format before torch "
                         "1.6 (or with _use_new_zipfile_serialization=False); vkml reads torch's zip archives "
                         "and safetensors files. Save it again with torch.save's default, or write the "
                         "state_dict with safetensors.torch.save_file(model.state_dict(), path).")


def load(f, map_location=None, weights_only=True):
    """Reads a file written by vk.save, any safetensors file (as {name: Tensor}: a state_dict that
    torch wrote with safetensors.torch.save_file loads with model.load_state_dict(vk.load(path))),
    or a file torch.save wrote (its zip archive: checkpoints and pretrained weights), whose pickle
    is read without running code from it, as torch.load(weights_only=True) reads it
    (vkml/_torch_format.py; weights_only=False reads no more). A bare pickle is a ValueError that
    says so. map_location: a device to put the tensors on."""
    path = _fspath(f, "vk.load")
    if os.path.isfile(path) and _torch_format.is_torch_zip(path):
        return _torch_format.load(path, map_location)
    _refuse_torch_pickle(path)
    named, meta = _C._io.load_safetensors(path)
    if _META_KEY not in meta:
        return dict(named)
    where = f"vk.load({path!r})"
    return _Decoder(dict(named), where).decode(_parse(meta[_META_KEY], where))
