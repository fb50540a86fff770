"""vk.save / vk.load: round trips of nested state, interop with safetensors.torch, atomic writes."""

import os

import numpy as np
import pytest
import torch

import vkml as vk

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
