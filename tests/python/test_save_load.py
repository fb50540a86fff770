"""vk.save / vk.load: round trips of nested state, interop with safetensors.torch, atomic writes."""

import io
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import serialization

from conftest import to_np

st = pytest.importorskip("safetensors.torch")


def test_flat_dict_is_plain_safetensors_both_ways(tmp_path):
    sd = {"a.weight": vk.randn(3, 4), "b": vk.arange(5), "c": vk.randn(2, dtype=vk.float64),
          "m": vk.tensor([True, False])}
    p = tmp_path / "x.safetensors"
    vk.save(sd, p)
    back = st.load_file(str(p))
    assert list(back) == sorted(sd) or set(back) == set(sd)
    for k in sd:
        assert np.array_equal(back[k].numpy(), to_np(sd[k])), k
        assert str(back[k].dtype).split(".")[-1] == {"a.weight": "float32", "b": "int64", "c": "float64",
                                                     "m": "bool"}[k]
    tp = tmp_path / "t.safetensors"
    tsd = {"w": torch.randn(2, 3), "i": torch.arange(4, dtype=torch.int32), "x.y": torch.randn(1, dtype=torch.float64)}
    st.save_file(tsd, str(tp), metadata={"format": "pt"})
    loaded = vk.load(tp)
    assert set(loaded) == set(tsd)
    for k in tsd:
        assert np.array_equal(to_np(loaded[k]), tsd[k].numpy()), k


def test_model_state_dict_interop_with_torch(tmp_path):
    m = vk.nn.Sequential(vk.nn.Linear(4, 3), vk.nn.BatchNorm1d(3))
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    p = tmp_path / "m.safetensors"
    vk.save(m.state_dict(), p)
    tm.load_state_dict(st.load_file(str(p)))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    m.eval(), tm.eval()
    np.testing.assert_allclose(to_np(m(vk.tensor(x))), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    st.save_file(tm.state_dict(), str(p))
    m2 = vk.nn.Sequential(vk.nn.Linear(4, 3), vk.nn.BatchNorm1d(3))
    m2.load_state_dict(vk.load(p))
    m2.eval()
    np.testing.assert_allclose(to_np(m2(vk.tensor(x))), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_nested_round_trip(tmp_path):
    obj = {"model": {"w": vk.randn(2, 2)}, "opt": {"state": {0: {"step": 3, "buf": vk.ones(3)}, 1: {}},
                                                   "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0, 1]}]},
           "rng": (12, 345), "epoch": 7, "name": "a.b%c", "none": None, "flag": True, "x": 1.5,
           "list": [vk.zeros(1), [vk.ones(2), "s"]], "a.b": {"c": vk.full((1,), 2.0)}, "a": {"b.c": vk.full((1,), 3.0)},
           "big": 2 ** 100}
    p = tmp_path / "n.safetensors"
    vk.save(obj, p)
    back = vk.load(p)

    def same(a, b):
        if isinstance(a, vk.Tensor):
            assert isinstance(b, vk.Tensor) and a.dtype == b.dtype and np.array_equal(to_np(a), to_np(b))
        elif isinstance(a, dict):
            assert list(a) == list(b)
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, (list, tuple)):
            assert type(a) is type(b) and len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        else:
            assert a == b and type(a) is type(b)
    same(obj, back)
    # the tensors are in an ordinary safetensors file that the safetensors package can read
    assert len(st.load_file(str(p))) == 6
    vk.save(vk.arange(3), p)
    assert np.array_equal(to_np(vk.load(p)), [0, 1, 2])


def test_failed_save_leaves_previous_file_intact(tmp_path):
    p = tmp_path / "ck.safetensors"
    vk.save({"w": vk.ones(3)}, p)
    before = p.read_bytes()
    with pytest.raises(TypeError):
        vk.save({"w": vk.ones(3), "bad": object()}, p)
    with pytest.raises(Exception):
        vk.save({"w": vk.ones(3)}, tmp_path / "missing_dir" / "x.safetensors")
    assert p.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["ck.safetensors"]  # no temp files left over
    assert np.array_equal(to_np(vk.load(p)["w"]), [1, 1, 1])


def test_rng_state_round_trip(tmp_path):
    vk.manual_seed(3)
    vk.rand(5)
    state = vk.get_rng_state()
    vk.save({"rng": state}, tmp_path / "r.safetensors")
    a = to_np(vk.rand(4))
    vk.manual_seed(99)
    vk.set_rng_state(tuple(vk.load(tmp_path / "r.safetensors")["rng"]))
    assert np.array_equal(to_np(vk.rand(4)), a)


# ------------------------------------------------------------------------------------------
# GitHub issue 12, items 6-10 and 17: saved-data defects
# ------------------------------------------------------------------------------------------


def _listing(d):
    return sorted(os.listdir(d))


def _temps(d):
    return [n for n in os.listdir(d) if ".tmp." in n]


def _same(a, b):
    """Structure, exact types, values and dtypes equal (iterative: objects nest 100 deep)."""
    stack = [(a, b, "obj")]
    while stack:
        x, y, where = stack.pop()
        assert type(x) is type(y), f"{where}: {type(x).__name__} came back as {type(y).__name__}"
        if isinstance(x, vk.Tensor):
            assert x.dtype == y.dtype and x.shape == y.shape, where
            assert np.array_equal(to_np(x), to_np(y), equal_nan=x.dtype in (vk.float32, vk.float64)), where
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, where
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), where
        elif isinstance(x, np.generic):
            assert x.dtype == y.dtype and (x == y or (np.isnan(x) and np.isnan(y))), where
        elif isinstance(x, dict):
            assert len(x) == len(y) and all(type(k) is type(j) and (k == j or k != k) for k, j in zip(x, y)), where
            for k, j in zip(x, y):
                stack.append((x[k], y[j], f"{where}[{k!r}]"))
        elif isinstance(x, (list, tuple)):
            assert len(x) == len(y), where
            stack.extend((u, v, f"{where}[{i}]") for i, (u, v) in enumerate(zip(x, y)))
        elif isinstance(x, float):
            assert (x == y and math.copysign(1, x) == math.copysign(1, y)) or (x != x and y != y), where
        else:
            assert x == y, where


def _nested(depth, leaf, wrap=lambda x: [x]):
    for _ in range(depth):
        leaf = wrap(leaf)
    return leaf


def _round_trip_objects():
    state = {"state": {0: {"step": 3, "exp_avg": vk.randn(3)}, 1: {}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False}]}
    return [
        {}, [], (), None, {"a": {}, "b": [], "c": ()}, [[], {}, ()],
        0, -1, 2 ** 100, -(2 ** 80), 1.5, -0.0, float("nan"), float("inf"), -float("inf"), True, False,
        "", "héllo ✓ 𝄞 \x00\n\t\"'\\ end", "lone \udc80 surrogate", "%2E.%25",
        vk.float32, [vk.int64, vk.bool_, vk.int32, vk.float64],
        vk.randn(2, 3), vk.arange(5), vk.tensor([True, False]), vk.tensor(3.5, dtype=vk.float64), vk.zeros(0, 3),
        vk.arange(12.0).reshape(3, 4)[:, ::2], vk.tensor([1, -2], dtype=vk.int32), vk.ones(2, requires_grad=True),
        {"w": vk.randn(2), "x.y": vk.zeros(1)},  # flat: an ordinary safetensors file
        {"__metadata__": vk.ones(1)}, {"__metadata__": vk.ones(1), "a": vk.ones(2), "tensor": vk.zeros(1)},
        {"a.b": vk.ones(1), "a": {"b": vk.zeros(1)}, "a%2Eb": vk.full((1,), 2.0), 1: vk.full((1,), 3.0),
         "1": vk.full((1,), 4.0), "x%231": vk.full((1,), 5.0), "x": [vk.full((1,), 6.0), vk.full((1,), 7.0)]},
        {(1, 2): "tuple key", (1, (2, (3, "x", None))): [1], (): 0, None: 1, True: 2, 2.5: 3, "s": 4,
         float("inf"): 5, vk.float64: 6, (vk.int64, 1.5): 7},
        {"\udc80": vk.ones(2), "ok": vk.ones(1)}, {"a\udcff.b": {"\ud800": vk.zeros(1)}},
        {"": vk.ones(1)}, {"é": vk.ones(1), "a b": vk.ones(2), "\x00": vk.zeros(1)},
        (vk.ones(1), [vk.ones(1), (vk.zeros(1),)]), vk.ones(3),
        np.arange(6, dtype=np.uint8).reshape(2, 3), np.array([1.5, -0.0], np.float16), np.array(3.0),
        np.zeros((0,), np.int16), np.array([[True]]), np.arange(4, dtype=np.uint32) * 1_000_000_000,
        np.float32(0.1), np.int8(-3), np.uint64(2 ** 64 - 1), np.bool_(True), np.float64("nan"),
        {np.int64(3): "numpy key", np.float32(0.5): [np.arange(2)]},
        {"model": {"w": vk.randn(2, 2)}, "optim": state, "epoch": 7, "rng": (12, 345)},
        # the deepest vk.save takes: 100 containers, a key's tuples counted from their dict
        _nested(100, vk.ones(1)), _nested(99, {"t": vk.ones(1)}, lambda x: {"k": x}),
        _nested(100, 5, lambda x: (x,)), {_nested(99, 1, lambda x: (x,)): "deep tuple key"},
    ]


def test_save_load_round_trips_everything_save_accepts(tmp_path):
    p = tmp_path / "x.safetensors"
    for i, obj in enumerate(_round_trip_objects()):
        vk.save(obj, p)
        back = vk.load(p)
        try:
            _same(obj, back)
        except AssertionError as e:
            raise AssertionError(f"object {i}: {_short(obj)}: {e}") from None
        assert _listing(tmp_path) == ["x.safetensors"], i


def _short(obj):
    r = repr(obj)
    return r[:100]


def test_save_subclasses_come_back_as_the_base_type(tmp_path):
    import collections
    import enum

    class Color(enum.IntEnum):
        RED = 1

    P = collections.namedtuple("P", "x y")
    obj = collections.OrderedDict(a=P(1, vk.ones(1)), c=Color.RED, d=collections.defaultdict(list, k=[1]))
    vk.save(obj, tmp_path / "s.st")
    back = vk.load(tmp_path / "s.st")
    _same({"a": (1, vk.ones(1)), "c": 1, "d": {"k": [1]}}, back)


def test_save_metadata_round_trips(tmp_path):
    safe_open = pytest.importorskip("safetensors").safe_open
    meta = {"format": "pt", "note": "héllo ✓ 𝄞", "empty": "", "quote\"key": "a\nb"}
    for obj in ({"w": vk.ones(2)}, {"w": vk.ones(2), "step": 3}):
        p = tmp_path / "m.safetensors"
        vk.save(obj, p, metadata=meta)
        _same(obj, vk.load(p))  # loads, whatever the metadata
        with safe_open(str(p), "np") as f:
            got = f.metadata()
        assert {k: v for k, v in got.items() if k != "vkml"} == meta


@pytest.mark.parametrize("metadata, exc", [
    ({"vkml": "x"}, ValueError),  # vk.save's own key: load would read it as a structure
    ({"k": 1}, TypeError), ({1: "v"}, TypeError), ([("k", "v")], TypeError), ("k=v", TypeError),
    ({"\udc80": "v"}, ValueError), ({"k": "\udcff"}, ValueError),
], ids=["reserved-key", "int-value", "int-key", "list", "str", "surrogate-key", "surrogate-value"])
def test_save_metadata_that_cannot_round_trip_raises_up_front(tmp_path, metadata, exc):
    p = tmp_path / "m.safetensors"
    vk.save({"w": vk.ones(2)}, p)
    before = p.read_bytes()
    with pytest.raises(exc, match="vk.save: metadata"):
        vk.save({"w": vk.zeros(2)}, p, metadata=metadata)
    assert p.read_bytes() == before and _listing(tmp_path) == ["m.safetensors"]


def _self_containing():
    x = []
    x.append(x)
    return x


@pytest.mark.parametrize("make, exc, part", [
    (lambda: object(), TypeError, "object"),
    (lambda: {"a": [1, {2: object()}]}, TypeError, "obj[a][1][2]"),
    (lambda: {frozenset(): 1}, TypeError, "dict key type frozenset"),
    (lambda: {(1, frozenset()): 1}, TypeError, "dict key type frozenset"),
    (lambda: {vk.dtype.float32: {b"k": 1}}, TypeError, "dict key type bytes"),
    (lambda: b"bytes", TypeError, "bytes"),
    (lambda: {1, 2}, TypeError, "set"),
    (lambda: 1 + 2j, TypeError, "complex"),
    (lambda: np.array(["a"]), TypeError, "dtype <U1"),
    (lambda: np.array([1], np.uint64), TypeError, "uint64"),
    (lambda: np.complex64(1), TypeError, "complex64"),
    (lambda: _nested(101, 1), ValueError, "deeper than 100"),
    (lambda: _nested(100_000, 1), ValueError, "deeper than 100"),
    (lambda: _nested(100_000, 1, lambda x: {"k": x}), ValueError, "deeper than 100"),
    (lambda: {_nested(100, 1, lambda x: (x,)): 1}, ValueError, "deeper than 100"),
    (_self_containing, ValueError, "contains itself"),
    (lambda: [10 ** 5000], ValueError, "vk.save"),
], ids=["object", "nested-object", "frozenset-key", "frozenset-in-tuple-key", "bytes-key", "bytes", "set",
        "complex", "np-str", "np-uint64-array", "np-complex", "depth-101", "depth-100000-list",
        "depth-100000-dict", "deep-tuple-key", "self-containing", "huge-int"])
def test_save_rejects_what_load_cannot_give_back_before_writing(tmp_path, make, exc, part):
    p = tmp_path / "c.safetensors"
    vk.save({"w": vk.ones(3), "step": 1}, p)
    before = p.read_bytes()
    with pytest.raises(exc) as info:
        vk.save(make(), p)
    assert part in str(info.value) and "vk.save" in str(info.value)
    assert p.read_bytes() == before, "nothing already saved is ever lost by a failed save"
    assert _listing(tmp_path) == ["c.safetensors"]


def test_save_nul_byte_in_path_raises(tmp_path):
    for path in (str(tmp_path / "a\x00b.st"), os.fsencode(tmp_path / "a\x00b.st")):
        with pytest.raises(ValueError, match="vk.save: embedded null byte"):
            vk.save({"w": vk.ones(1)}, path)
    with pytest.raises(ValueError, match="save_safetensors: embedded null byte"):
        vk._C._io.save_safetensors(str(tmp_path / "a\x00b.st"), [("w", vk.ones(1))])
    assert _listing(tmp_path) == []


def test_load_nul_byte_in_path_raises(tmp_path):
    p = str(tmp_path / "m.st")
    vk.save({"w": vk.ones(1)}, p)
    with pytest.raises(ValueError, match="vk.load: embedded null byte"):
        vk.load(p + "\x00x")
    with pytest.raises(ValueError, match="load_safetensors: embedded null byte"):
        vk._C._io.load_safetensors(p + "\x00x")


def test_save_load_paths_as_open_takes_them(tmp_path):
    # bytes, os.PathLike, and a file name that is not UTF-8 (os.fsdecode gives it surrogates)
    name = os.fsdecode(b"\xff\xfe.st")
    for p in (os.fsencode(tmp_path / "b.st"), tmp_path / "p.st", str(tmp_path / name)):
        vk.save({"w": vk.ones(2), "n": 1}, p)
        _same({"w": vk.ones(2), "n": 1}, vk.load(p))
    assert b"\xff\xfe.st" in os.listdir(os.fsencode(tmp_path))
    with pytest.raises(TypeError, match="vk.save: expected a path"):
        vk.save({"w": vk.ones(1)}, io.BytesIO())


def test_save_non_utf8_key_is_typed_error_or_round_trips(tmp_path):
    p = tmp_path / "k.st"
    # vk.save stores such keys (escaped in the tensor names, exact in the structure)
    vk.save({"\udc80": vk.ones(2)}, p)
    _same({"\udc80": vk.ones(2)}, vk.load(p))
    # the low-level writer takes names as they go into the file: a typed error naming the key
    with pytest.raises(ValueError, match=r"save_safetensors: a tensor name '\\udc80' is not valid UTF-8"):
        vk._C._io.save_safetensors(str(p), [("\udc80", vk.ones(1))])
    with pytest.raises(TypeError, match="a tensor name must be a str, not bytes"):
        vk._C._io.save_safetensors(str(p), [(b"\xff", vk.ones(1))])
    with pytest.raises(TypeError, match="tensor 'w' is a int, not a Tensor"):
        vk._C._io.save_safetensors(str(p), [("w", 1)])
    with pytest.raises(ValueError, match="a metadata value"):
        vk._C._io.save_safetensors(str(p), [("w", vk.ones(1))], {"k": "\udc80"})
    _same({"\udc80": vk.ones(2)}, vk.load(p))  # untouched, and the process lives on


def _crafted(path, tree_json, tensors=(("t", None),)):
    """A valid safetensors file whose vkml structure is the given JSON text."""
    named = [(n, vk.ones(2) if t is None else t) for n, t in tensors]
    vk._C._io.save_safetensors(str(path), named, {"vkml": tree_json})
    return path


def _doc(tree):
    return json.dumps({"format": "vkml.tree/1", "tree": tree})


CRAFTED = {
    "unknown-tag": _doc({"__class__": "x"}),
    "two-tags": _doc({"__tensor__": "t", "__tuple__": []}),
    "empty-object": _doc({}),
    "dtype-class": _doc({"__dtype__": "__class__"}),
    "dtype-complex64": _doc({"__dtype__": "complex64"}),
    "dtype-int": _doc({"__dtype__": 3}),
    "tensor-missing": _doc({"__tensor__": "missing"}),
    "tensor-not-str": _doc({"__tensor__": ["t"]}),
    "tensor-twice": _doc([{"__tensor__": "t"}, {"__tensor__": "t"}]),
    "ndarray-dtype-object": _doc({"__ndarray__": "t", "dtype": "object"}),
    "ndarray-dtype-lies": _doc({"__ndarray__": "t", "dtype": "int64"}),
    "ndarray-extra-field": _doc({"__ndarray__": "t", "shape": [2]}),
    "npscalar-class": _doc({"__npscalar__": ["__class__", 1]}),
    "npscalar-out-of-range": _doc({"__npscalar__": ["uint8", 300]}),
    "npscalar-wrong-type": _doc({"__npscalar__": ["int64", 1.5]}),
    "npscalar-not-pair": _doc({"__npscalar__": "int64"}),
    "tuple-not-list": _doc({"__tuple__": 5}),
    "dict-not-list": _doc({"__dict__": "x"}),
    "dict-bad-pair": _doc({"__dict__": [[1]]}),
    "dict-list-key": _doc({"__dict__": [[[1], 2]]}),
    "dict-dict-key": _doc({"__dict__": [[{"__dict__": []}, 2]]}),
    "dict-tensor-key": _doc({"__dict__": [[{"__tensor__": "t"}, 2]]}),
    "dict-duplicate-keys": _doc({"__dict__": [[1, 2], [1, 3]]}),
    "dict-true-equals-1": _doc({"__dict__": [[1, 2], [True, 3]]}),
    "json-duplicate-keys": '{"format":"vkml.tree/1","tree":{"__tensor__":"t","__tensor__":"t"}}',
    "depth-101": _doc(_nested(101, 1)),
    "depth-100000": '{"format":"vkml.tree/1","tree":' + "[" * 100_000 + "]" * 100_000 + "}",
    "deep-key": _doc({"__dict__": [[_nested(101, 1, lambda x: {"__tuple__": [x]}), 1]]}),
    "not-json": "{",
    "empty": "",
    "metadata-list": "[1]",
    "metadata-string": '"s"',
    "metadata-empty-object": "{}",
    "metadata-extra-key": '{"format":"vkml.tree/1","tree":1,"x":2}',
    "metadata-no-tree": '{"format":"vkml.tree/1"}',
    "unknown-format": '{"format":"vkml.tree/9","tree":1}',
    "format-not-str": '{"format":[1],"tree":1}',
    "huge-int": '{"format":"vkml.tree/1","tree":' + "1" * 5000 + "}",
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_load_crafted_structure_raises_typed_error(tmp_path, name):
    p = _crafted(tmp_path / "c.st", CRAFTED[name])
    with pytest.raises(ValueError) as info:
        vk.load(p)
    assert type(info.value) is ValueError, f"{type(info.value).__name__}: {info.value}"
    assert f"vk.load({str(p)!r})" in str(info.value)


def test_load_crafted_structures_that_are_valid_load(tmp_path):
    # the forms vk.save wrote before numpy dtypes were recorded, and keys in any order
    p = _crafted(tmp_path / "c.st", _doc({"__dict__": [["a", {"__ndarray__": "t"}],
                                                       ["b", {"dtype": "float32", "__ndarray__": "u"}]]}),
                 [("t", vk.ones(2)), ("u", vk.zeros(1))])
    _same({"a": np.ones(2, np.float32), "b": np.zeros(1, np.float32)}, vk.load(p))


def test_load_narrow_numpy_arrays_written_widened_before_19(tmp_path):
    # before vkml had uint8/int8/int16/float16 (#19), vk.save stored such arrays as int64/float32
    p = _crafted(tmp_path / "c.st", _doc({"__dict__": [["a", {"__ndarray__": "t", "dtype": "uint8"}],
                                                       ["b", {"__ndarray__": "u", "dtype": "float16"}]]}),
                 [("t", vk.tensor([1, 255])), ("u", vk.tensor([1.5, -2.0]))])
    _same({"a": np.array([1, 255], np.uint8), "b": np.array([1.5, -2.0], np.float16)}, vk.load(p))


def test_load_fifo_raises_without_blocking(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    got = {}

    def run():
        try:
            vk.load(p)
        except BaseException as e:  # noqa: B036 (reported below)
            got["error"] = e

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(10)
    if th.is_alive():
        os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))  # let the reader through, so the test ends
        th.join(10)
        pytest.fail("vk.load blocked on a FIFO")
    assert isinstance(got.get("error"), RuntimeError) and "a FIFO, not a regular file" in str(got["error"])
    for other, kind in ((tmp_path, "a directory"), ("/dev/zero", "a character device")):
        with pytest.raises(RuntimeError, match=f"{kind}, not a regular file"):
            vk.load(other)


def test_save_keeps_permission_bits(tmp_path):
    p = tmp_path / "m.st"
    vk.save({"w": vk.ones(1)}, p)
    umask = os.umask(0)
    os.umask(umask)
    assert p.stat().st_mode & 0o777 == 0o666 & ~umask  # a new file: as open() makes it
    for mode in (0o600, 0o640, 0o604):
        p.chmod(mode)
        vk.save({"w": vk.ones(2), "n": 1}, p)
        assert p.stat().st_mode & 0o777 == mode
    assert _listing(tmp_path) == ["m.st"]


def test_save_symlink_writes_through_to_target(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "m.st"
    vk.save({"w": vk.ones(1)}, target)
    target.chmod(0o600)
    link = tmp_path / "link.st"
    link.symlink_to(os.path.join("real", "m.st"))
    vk.save({"w": vk.zeros(2), "n": 1}, link)
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "m.st")
    _same({"w": vk.zeros(2), "n": 1}, vk.load(target))
    assert target.stat().st_mode & 0o777 == 0o600
    assert _listing(tmp_path / "real") == ["m.st"] and _listing(tmp_path) == ["link.st", "real"]


def test_save_over_non_regular_file_raises(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(RuntimeError, match="a FIFO, not a regular file"):
        vk.save({"w": vk.ones(1)}, fifo)
    assert _listing(tmp_path) == ["fifo"]


_WRITER = """
import os, sys, time
import vkml as vk
path, n = sys.argv[1], int(sys.argv[2])
big = vk.full((n,), 2.0)
print("ready", flush=True)
{body}
"""


def _child(tmp_path, body, n):
    script = tmp_path / "child.py"
    script.write_text(_WRITER.format(body=textwrap.dedent(body)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    # Ctrl-C must reach the child as Ctrl-C even when this run started with SIGINT ignored (a job
    # started in the background by a non-interactive shell): Python then installs no handler.
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "d" / "m.st"), str(n)],
                            stdout=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_save_removes_stale_temp_files_of_killed_save(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    vk.save({"w": vk.ones(1)}, d / "m.st")
    for attempt in range(5):
        proc = _child(tmp_path, "while True:\n    vk.save({'w': big}, path)\n", 8 << 20)
        deadline = time.monotonic() + 20
        while not _temps(d) and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.kill()  # SIGKILL, mid-save
        proc.wait()
        if _temps(d):
            break
    stale = _temps(d)
    assert stale and all(f".tmp.{proc.pid}." in n for n in stale), stale
    # a temp file of a live process (this one) and one of another target stay
    live = f".m.st.tmp.{os.getpid()}.999"
    other = f".other.st.tmp.{proc.pid}.0"
    for n in (live, other):
        (d / n).write_bytes(b"x")
    vk.save({"w": vk.zeros(1)}, d / "m.st")
    assert _listing(d) == sorted(["m.st", live, other])
    assert to_np(vk.load(d / "m.st")["w"]).tolist() == [0.0]


def test_save_sigint_mid_write_commits_nothing(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    seen = set()
    for delay in (0.0, 0.01, 0.03, 0.1):
        vk.save({"w": vk.ones(1)}, d / "m.st")
        proc = _child(tmp_path, """
            try:
                vk.save({"w": big}, path)
                print("returned", flush=True)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            """, 16 << 20)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out = proc.stdout.read().split()
        proc.wait()
        w = vk.load(d / "m.st")["w"]
        assert _temps(d) == []
        if out in ([], ["interrupted"]):  # [] : interrupted before vk.save began
            assert w.shape == (1,), "vk.save raised KeyboardInterrupt but replaced the file"
        elif out == ["returned"]:
            assert w.shape == (16 << 20,)
        seen.update(out)
    assert "interrupted" in seen


class _FakePending:
    """Stands for _C._io.PendingSave: Ctrl-C arrives while the rename runs."""

    def __init__(self, fail=False):
        self.committed, self.fail = False, fail

    def commit(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the Python-level handler runs in here
        if self.fail:
            raise RuntimeError("rename failed")
        self.committed = True


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raising KeyboardInterrupt for the test, whatever the runner started with (a
    background job of a non-interactive shell starts with SIGINT ignored)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_save_sigint_during_commit_returns_normally(ctrl_c_raises):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    try:
        pending = _FakePending()
        serialization._commit(pending)  # committed: returns normally
        assert pending.committed
        with pytest.raises(KeyboardInterrupt):  # not committed: the interrupt propagates
            serialization._commit(_FakePending(fail=True))
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped a committed save")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
