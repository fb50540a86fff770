"""vk.nn.utils.fusion against torch.nn.utils.fusion: conv + BatchNorm (with and without the conv's
bias, affine or not, ConvTranspose by transpose=True) and linear + BatchNorm1d folded into one
layer -- the fused weights equal torch's and the fused layer's output equals the pair's in eval
mode -- and the refusals (training mode, mismatched features)."""

import numpy as np
import pytest
import torch
import torch.nn.utils.fusion as TF

import vkml as vk
import vkml.nn.utils.fusion as VF
from conftest import assert_close

RNG = np.random.default_rng(77)


def _twins(make, bn_features, bn_cls="BatchNorm2d", affine=True):
    """The same layer and BatchNorm (random statistics and affine parameters) in both libraries."""
    pair = []
    for lib in (vk, torch):
        layer, bn = make(lib), getattr(lib.nn, bn_cls)(bn_features, affine=affine)
        pair.append((layer, bn))
    (vl, vb), (tl, tb) = pair
    stats = {"running_mean": RNG.standard_normal(bn_features), "running_var": RNG.uniform(0.5, 2, bn_features)}
    if affine:
        stats.update(weight=RNG.uniform(0.5, 1.5, bn_features), bias=RNG.standard_normal(bn_features))
    with torch.no_grad(), vk.no_grad():
        for (name, vp), (_, tp) in zip(vl.named_parameters(), tl.named_parameters()):
            a = RNG.standard_normal(tuple(vp.shape)).astype(np.float32)
            vp.copy_(vk.tensor(a))
            tp.copy_(torch.tensor(a))
        for name, a in stats.items():
            getattr(vb, name).copy_(vk.tensor(a.astype(np.float32)))
            getattr(tb, name).copy_(torch.tensor(a.astype(np.float32)))
    return vl.eval(), vb.eval(), tl.eval(), tb.eval()


CONVS = [
    ("conv", lambda L: L.nn.Conv2d(3, 4, 3), 4, False, True),
    ("conv_no_bias", lambda L: L.nn.Conv2d(3, 4, 3, bias=False), 4, False, True),
    ("conv_bn_not_affine", lambda L: L.nn.Conv2d(3, 4, 3), 4, False, False),
    ("conv_transpose", lambda L: L.nn.ConvTranspose2d(3, 4, 3, stride=2), 4, True, True),
]


@pytest.mark.parametrize("name,make,features,transpose,affine", CONVS, ids=[c[0] for c in CONVS])
def test_fuse_conv_bn_eval_matches_torch(name, make, features, transpose, affine):
    vl, vb, tl, tb = _twins(make, features, affine=affine)
    vf = VF.fuse_conv_bn_eval(vl, vb, transpose=transpose)
    tf = TF.fuse_conv_bn_eval(tl, tb, transpose=transpose)
    assert_close(vf.weight, tf.weight, "float32", what=name + " weight")
    assert_close(vf.bias, tf.bias, "float32", what=name + " bias")
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    assert_close(vf(vk.tensor(x)), vb(vl(vk.tensor(x))), "float32", what=name + " fused output")
    assert isinstance(vf.weight, vk.nn.Parameter) and vl.weight is not vf.weight  # the layer is a copy


def test_fuse_linear_bn_eval_matches_torch_and_refuses():
    vl, vb, tl, tb = _twins(lambda L: L.nn.Linear(5, 3), 3, "BatchNorm1d")
    vf, tf = VF.fuse_linear_bn_eval(vl, vb), TF.fuse_linear_bn_eval(tl, tb)
    assert_close(vf.weight, tf.weight, "float32", what="linear weight")
    assert_close(vf.bias, tf.bias, "float32", what="linear bias")
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    assert_close(vf(vk.tensor(x)), vb(vl(vk.tensor(x))), "float32", what="fused linear output")
    with pytest.raises(RuntimeError, match="eval"):
        VF.fuse_conv_bn_eval(vk.nn.Conv2d(1, 2, 1), vk.nn.BatchNorm2d(2))
    with pytest.raises(vk.ShapeError, match="out_features"):
        VF.fuse_linear_bn_eval(vk.nn.Linear(2, 3).eval(), vk.nn.BatchNorm1d(4).eval())
