"""default_collate and default_convert: how a DataLoader turns samples into a batch, with
torch's rules (tensors are stacked; numpy arrays and numbers become tensors; dicts, namedtuples,
tuples and lists are collated field by field; a tuple of fields becomes a list, as in torch)."""

import collections.abc
import copy

import numpy as np

from ... import _C as _vk

__all__ = ["default_collate", "default_convert"]

_BAD = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _numpy_ok(a):
    if a.dtype.kind in "OSUV":
        raise TypeError(_BAD.format(a.dtype))
    return a


def _rebuild(elem, values):
    """A container of elem's type holding values (a plain one when the type cannot be built so)."""
    try:
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch):
    """Puts a list of samples together into one batch."""
    elem = batch[0]
    if isinstance(elem, _vk.Tensor):
        return _vk.stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and type(elem).__module__ == "numpy":
        return default_collate([_vk.as_tensor(_numpy_ok(b)) for b in batch])
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return _vk.as_tensor(np.array(batch))
    if isinstance(elem, float):
        return _vk.tensor(batch, dtype=_vk.dtype.float64)
    if isinstance(elem, int):
        return _vk.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)  # keeps the mapping's type and attributes, as torch
            out.update(fields)
            return out
        return _rebuild(elem, fields)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(s) != size for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return fields
        return _rebuild(elem, fields)
    raise TypeError(_BAD.format(type(elem)))


def default_convert(data):
    """One sample as a DataLoader without batching (batch_size=None) gives it: numpy arrays and
    numbers inside become tensors, containers are walked, anything else is unchanged."""
    if isinstance(data, _vk.Tensor):
        return data
    if isinstance(data, np.ndarray) and type(data).__module__ == "numpy":
        return data if data.dtype.kind in "OSUV" else _vk.as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return _vk.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
