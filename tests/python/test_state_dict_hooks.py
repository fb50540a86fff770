"""Module's state-dict hooks (register_state_dict_pre_hook / _post_hook,
register_load_state_dict_pre_hook / _post_hook) against torch's: the order they run in over a
nested model (each module's post-hook after its children's), what they see, a pre-hook renaming
an old checkpoint's keys, a post-hook clearing a missing key so strict loading passes, and a hook
that returns a value refused; and load_state_dict(assign=True) as torch's."""

import numpy as np
import pytest
import torch

import vkml as vk


def _logged_model(lib, log):
    m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
    for name, mod in m.named_modules():
        mod.register_state_dict_pre_hook(lambda mm, p, kv, n=name: log.append(("pre", n, p, kv)))
        mod.register_state_dict_post_hook(lambda mm, sd, p, meta, n=name: log.append(("post", n, p, sorted(sd))))
        mod.register_load_state_dict_pre_hook(
            lambda mm, sd, p, meta, strict, mk, uk, em, n=name: log.append(("load pre", n, p, strict, sorted(sd))))
        mod.register_load_state_dict_post_hook(
            lambda mm, keys, n=name: log.append(("load post", n, list(keys.missing_keys), list(keys.unexpected_keys))))
    return m


def test_state_dict_hooks_run_as_torchs():
    logs = {}
    for lib in (vk, torch):
        log = logs[lib.__name__] = []
        m = _logged_model(lib, log)
        sd = m.state_dict()
        del sd["0.bias"]
        with pytest.raises(RuntimeError, match="Missing key"):
            m.load_state_dict(sd)
        m.load_state_dict(sd, strict=False)

        def forgive(mm, keys):
            if "0.bias" in keys.missing_keys:
                keys.missing_keys.remove("0.bias")
        m[0].register_load_state_dict_post_hook(forgive)
        assert str(m.load_state_dict(sd)) == "<All keys matched successfully>"
    assert logs["vkml"] == logs["torch"]


def test_load_pre_hook_renames_an_old_checkpoints_keys():
    class Net(vk.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = vk.nn.Linear(3, 2)
            self.register_load_state_dict_pre_hook(self._rename)

        @staticmethod
        def _rename(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            for old in [k for k in state_dict if k.startswith(prefix + "fc.")]:
                state_dict[prefix + "proj." + old[len(prefix + "fc."):]] = state_dict.pop(old)

    old = {"fc.weight": vk.tensor(np.arange(6.0).reshape(2, 3)).float(), "fc.bias": vk.tensor([1.0, 2.0])}
    net = Net()
    assert str(net.load_state_dict(dict(old))) == "<All keys matched successfully>"
    np.testing.assert_array_equal(net.proj.weight.detach().numpy(), np.arange(6.0).reshape(2, 3))


def test_state_dict_hook_returning_a_value_is_refused():
    m = vk.nn.Linear(2, 2)
    m.register_state_dict_post_hook(lambda mm, sd, p, meta: sd)
    with pytest.raises(RuntimeError, match="must return None"):
        m.state_dict()
    handle_model = vk.nn.Linear(2, 2)
    handle = handle_model.register_state_dict_pre_hook(lambda mm, p, kv: (_ for _ in ()).throw(ValueError("ran")))
    with pytest.raises(ValueError, match="ran"):
        handle_model.state_dict()
    handle.remove()
    assert sorted(handle_model.state_dict()) == ["bias", "weight"]


def test_load_state_dict_assign_takes_the_checkpoints_tensors_regression():
    """assign=True was accepted and ignored (the values copied into the module's tensors): as
    torch's, the module now holds the checkpoint's tensors themselves -- their memory and dtype --
    parameters as Parameters keeping the requires_grad they had, buffers as they are."""
    for lib in (vk, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        m[0].bias.requires_grad_(False)
        sd = {k: v.detach().clone() + 1 for k, v in m.state_dict().items()}
        sd["0.weight"] = sd["0.weight"].double()
        m.load_state_dict(sd, assign=True)
        assert m[0].weight.dtype == lib.float64 and isinstance(m[0].weight, lib.nn.Parameter)
        assert m[0].weight.requires_grad and not m[0].bias.requires_grad
        assert m[1].running_mean is sd["1.running_mean"]
        sd["0.weight"].add_(10.0)  # the module's weight is that tensor
        assert float(m[0].weight.detach().min()) >= 10.0
        with pytest.raises(RuntimeError, match="size mismatch"):
            m.load_state_dict({**sd, "0.bias": lib.zeros(3)}, assign=True)
    lazy = vk.nn.LazyLinear(2)
    lazy.load_state_dict({"weight": vk.ones(2, 3), "bias": vk.zeros(2)}, assign=True)
    assert tuple(lazy.weight.shape) == (2, 3) and lazy.in_features == 3
