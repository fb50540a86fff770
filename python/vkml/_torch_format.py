"""Reading the files torch.save writes (a zip archive: a pickle, data.pkl, and one raw file per
storage) without torch and without running code from the file: the pickle is read by an
unpickler that builds only tensors, parameters, containers, numbers, strings and torch's small
value types (device, dtype, Size) -- the set torch.load(weights_only=True), torch's default,
allows -- and raises UnpicklingError naming any other class. Tensors that shared a storage in
torch (a view saved with its base) come back as separate tensors."""
import collections
import functools
import io
import pickle
import zipfile

import numpy as np

from . import _C

# torch's typed storage classes (as the pickle names them) -> the numpy dtype of their bytes;
# bfloat16 is read as its 16 bits and widened exactly through float32.
_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
             "BFloat16Storage": np.uint16, "LongStorage": np.int64, "IntStorage": np.int32,
             "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
             "BoolStorage": np.bool_}
_DTYPES = {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
           "int32", "int", "int16", "short", "int8", "uint8", "bool"}


def is_torch_zip(path):
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist())


class _StorageType:
    def __init__(self, name):
        self.name = name


class _Storage:
    def __init__(self, flat, bfloat16):
        self.flat, self.bfloat16 = flat, bfloat16


def _device(map_location):
    """The device map_location names (a string or a vk.device); None for the CPU, a callable or a
    dict (torch's storage remappings: every storage here is read on the CPU)."""
    if isinstance(map_location, str):
        return _C.device(map_location)
    return map_location if isinstance(map_location, _C.device) else None


def _rebuild_tensor(storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None,
                    *, device=None):
    import vkml as vk
    flat, n = storage.flat, 1
    for s in size:
        n *= s
    if n == 0:
        values = np.zeros(tuple(size), flat.dtype)
    else:
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if offset < 0 or last >= flat.size or any(st < 0 for st in stride):
            raise pickle.UnpicklingError(f"a tensor of size {list(size)}, stride {list(stride)} and offset "
                                         f"{offset} reaches past its storage of {flat.size} elements")
        values = np.lib.stride_tricks.as_strided(flat[offset:], shape=tuple(size),
                                                 strides=tuple(st * flat.itemsize for st in stride))
    values = np.array(values, order="C")  # a copy (ascontiguousarray would make a 0-d array 1-d)
    if storage.bfloat16:
        t = vk.tensor((values.astype(np.uint32) << 16).view(np.float32)).to(vk.bfloat16)
    else:
        t = vk.tensor(values)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, hooks=None):
    import vkml as vk
    return vk.nn.Parameter(data, requires_grad=requires_grad)


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, read_storage, where, device):
        super().__init__(io.BytesIO(data))
        self._read_storage, self._where, self._device = read_storage, where, device

    def find_class(self, module, name):
        import vkml as vk
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return functools.partial(_rebuild_tensor, device=self._device)
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return _rebuild_parameter
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name in ("device", "Size"):
            return getattr(vk, name)
        if module == "torch" and name in _DTYPES:
            return getattr(vk, name)
        if module in ("builtins", "__builtin__") and name in ("set", "frozenset", "slice"):
            return {"set": set, "frozenset": frozenset, "slice": slice}[name]
        raise pickle.UnpicklingError(
            f"{self._where}: the file's pickle names {module}.{name}, which vkml does not build: it "
            "reads tensors, parameters, containers, numbers, strings and torch's device, dtype and "
            "Size (what torch.load(weights_only=True) allows), so that loading a file runs no code "
            "from it")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"{self._where}: unknown persistent id {pid!r}")
        return self._read_storage(pid[1].name, str(pid[2]))


def load(path, map_location=None):
    """The object torch.save(obj, path) wrote, its tensors vkml tensors (on the CPU, or on
    map_location when that names a device)."""
    where = f"vk.load({path!r})"
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        pkl = sorted(n for n in names if n == "data.pkl" or n.endswith("/data.pkl"))[0]
        root = pkl[:-len("data.pkl")]
        big = root + "byteorder" in names and z.read(root + "byteorder").strip() == b"big"
        cache = {}

        def read_storage(kind, key):
            if key not in cache:
                member = f"{root}data/{key}"
                if member not in names:
                    raise pickle.UnpicklingError(f"{where}: the archive has no storage {member!r}")
                dtype = np.dtype(_STORAGES[kind]).newbyteorder(">" if big else "<")
                flat = np.frombuffer(z.read(member), dtype=dtype).astype(_STORAGES[kind])
                cache[key] = _Storage(flat, kind == "BFloat16Storage")
            return cache[key]

        obj = _Unpickler(z.read(pkl), read_storage, where, _device(map_location)).load()
    return obj

