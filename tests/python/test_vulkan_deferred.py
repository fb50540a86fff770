"""vkfix (issue #14, item 3): an embedding + cross-entropy training step on the Vulkan device never
waits for the device before its loss is read (the index ops check their index on the device), an
index out of range is an IndexError raised at the next read, naming the op, and scatter_add is
bitwise the same from run to run. Compared with torch on the CPU."""
import os

import numpy as np
import pytest
import torch

import vkml as vk

if not vk.vulkan.is_available():
    if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
        raise RuntimeError("VKML_REQUIRE_VULKAN=1 but the Vulkan device is unavailable")
    pytest.skip("no Vulkan device", allow_module_level=True)


def _step_losses(m, device, steps, on_step=None):
    gen = np.random.default_rng(5)
    tokens = gen.integers(0, 11, size=(steps, 3, 4))
    targets = gen.integers(0, 7, size=(steps, 12))
    m.manual_seed(0)
    emb = m.nn.Embedding(11, 6)
    head = m.nn.Linear(6, 7)
    with m.no_grad():
        emb.weight.copy_(m.tensor(np.linspace(-1, 1, 66).reshape(11, 6), dtype=m.float32))
        head.weight.copy_(m.tensor(np.linspace(1, -1, 42).reshape(7, 6), dtype=m.float32))
        head.bias.zero_()
    emb.to(device)
    head.to(device)
    opt = m.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.5)
    losses = []
    for s in range(steps):
        x = m.tensor(tokens[s]).to(device)
        y = m.tensor(targets[s]).to(device)
        opt.zero_grad()
        loss = m.nn.functional.cross_entropy(head(emb(x)).reshape(12, 7), y)
        loss.backward()
        opt.step()
        if on_step:
            on_step(lambda: losses.append(loss.item()))
        else:
            losses.append(loss.item())
    return losses


def test_an_embedding_cross_entropy_step_waits_only_for_its_loss():
    waits = []

    def on_step(read_loss):
        before = vk.vulkan.memory_stats()["host_waits"]
        read_loss()
        after = vk.vulkan.memory_stats()["host_waits"]
        waits.append((before, after))

    got = _step_losses(vk, "vulkan", 4, on_step)
    want = _step_losses(torch, "cpu", 4)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # One whole step (after the first: its uploads of fresh tensors) from one loss read to the
    # next: the read is its only wait.
    for (_, a0), (b1, a1) in zip(waits[1:], waits[2:]):
        assert b1 == a0, "the step waited for the device before its loss was read"
        assert a1 - b1 == 1


def test_an_index_out_of_range_is_raised_at_the_next_read_naming_the_op():
    x = vk.arange(6.0).reshape(2, 3).to("vulkan")
    y = vk.index_select(x, 1, vk.tensor([0, 3]).to("vulkan"))  # recorded: no error yet
    with pytest.raises(IndexError, match=r"index_select: index 3 is out of range for dim 1 of size 3"):
        y.tolist()
    assert x.index_select(1, vk.tensor([2]).to("vulkan")).tolist() == [[2.0], [5.0]]
    emb = vk.nn.Embedding(4, 2).to("vulkan")
    out = emb(vk.tensor([1, -1]).to("vulkan"))
    with pytest.raises(IndexError, match="index -1"):
        vk.vulkan.synchronize()
    logits = vk.zeros(2, 3, device="vulkan")
    with pytest.raises(IndexError, match="gather: index 5"):
        vk.nn.functional.cross_entropy(logits, vk.tensor([0, 5]).to("vulkan")).item()
    with pytest.raises(IndexError):  # torch too, at its call
        torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 5]))
    del out


def test_scatter_add_is_bitwise_the_same_every_run_and_torchs_sum():
    gen = np.random.default_rng(3)
    src = (gen.standard_normal((300, 5)) * 10.0 ** gen.integers(-3, 4, (300, 5))).astype(np.float32)
    index = gen.integers(0, 4, size=(300, 5))
    base = np.zeros((4, 5), dtype=np.float32)
    d = [vk.tensor(base).to("vulkan").scatter_add(0, vk.tensor(index).to("vulkan"),
                                                  vk.tensor(src).to("vulkan")).cpu().numpy()
         for _ in range(2)]
    assert d[0].tobytes() == d[1].tobytes()
    cpu = vk.tensor(base).scatter_add(0, vk.tensor(index), vk.tensor(src)).numpy()
    assert d[0].tobytes() == cpu.tobytes()  # the CPU's order of the sums
    want = torch.zeros(4, 5, dtype=torch.float64).scatter_add(
        0, torch.tensor(index), torch.tensor(src, dtype=torch.float64))
    np.testing.assert_allclose(d[0], want.numpy(), rtol=1e-5, atol=1e-5)
