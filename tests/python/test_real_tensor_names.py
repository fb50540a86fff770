"""The complex-, sparse- and storage-kind names generic torch code asks of every tensor (x.real,
x.conj(), x.is_complex(), torch.angle, x.is_sparse, ...) give torch's answers for real tensors
(they were AttributeErrors: a library's `if x.is_complex():` stopped a port)."""
import numpy as np
import pytest
import torch

import vkml as vk

VALUES = [1.0, -2.0, float("nan"), 0.0, -0.0, float("inf"), -float("inf")]


@pytest.mark.parametrize("lib", [vk, torch], ids=["vkml", "torch"])
def test_real_tensors_are_their_own_real_part_and_conjugate(lib):
    x = lib.tensor(VALUES, requires_grad=True)
    for same in (x.real, lib.real(x), x.conj(), lib.conj(x), x.resolve_conj(), x.resolve_neg(),
                 x.conj_physical(), lib.resolve_conj(x), lib.resolve_neg(x)):
        assert same is x
    assert not x.is_complex() and not lib.is_complex(x) and not x.is_neg()
    assert not lib.is_neg(x)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        x.imag
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        lib.imag(x)
    assert x.isreal().tolist() == [True] * len(VALUES)
    assert lib.isreal(lib.tensor([1, 2])).tolist() == [True, True]
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                 "is_nested"):
        assert getattr(x, flag) is False, flag


def test_angle_matches_torch_values_dtypes_and_zero_gradient():
    got, want = [], []
    for lib, out in ((vk, got), (torch, want)):
        x = lib.tensor(VALUES, dtype=lib.float64, requires_grad=True)
        a = lib.angle(x)
        (a * lib.arange(len(VALUES), dtype=lib.float64)).sum().backward()
        ints = lib.tensor([3, -1, 0]).angle()
        out.append((a.detach().numpy(), x.grad.numpy(), ints.numpy(), str(ints.dtype)[-7:],
                    x.angle().requires_grad))
        with lib.no_grad():
            assert not x.angle().requires_grad
    for g, w in zip(got[0], want[0]):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w
