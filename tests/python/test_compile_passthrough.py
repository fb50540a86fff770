"""vk.compile: a program that compiles its model (nanoGPT's train.py, compile=True by default)
runs unchanged -- the module or function itself comes back, with one UserWarning that says so,
as a decorator too; a non-callable raises TypeError (torch asserts)."""

import warnings

import numpy as np
import pytest

import vkml as vk
import vkml._compile as vk_compile


def test_compile_returns_its_argument_and_says_so_once(monkeypatch):
    monkeypatch.setattr(vk_compile, "_warned", False)
    model = vk.nn.Linear(3, 2)
    with pytest.warns(UserWarning, match="no graph compiler"):
        compiled = vk.compile(model, mode="max-autotune", fullgraph=True)
    assert compiled is model
    x = vk.randn(4, 3)
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process
        assert vk.compile(model) is model

    @vk.compile
    def double(t):
        return t * 2

    @vk.compile(mode="reduce-overhead", dynamic=True)
    def triple(t):
        return t * 3

    assert double(vk.tensor(2.0)).item() == 4.0 and triple(vk.tensor(2.0)).item() == 6.0
    with pytest.raises(TypeError, match="callable"):
        vk.compile(3)
