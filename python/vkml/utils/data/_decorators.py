"""torch.utils.data's DataPipe decorators and switches (issue #15) and _DatasetKind. vkml has no
DataPipes (they are not planned): the decorators act on vkml's datasets instead, IterableDataset
where torch wants an IterDataPipe and Dataset where it wants a MapDataPipe, with torch's flags,
checks and messages."""

import functools
import inspect
import typing

from .dataset import Dataset, IterableDataset

__all__ = ["functional_datapipe", "runtime_validation", "runtime_validation_disabled", "non_deterministic",
           "guaranteed_datapipes_determinism", "argument_validation"]

# process-wide switches, flipped by the context managers below (as torch's, on construction)
_runtime_validation_enabled = True
_determinism = False


class functional_datapipe:
    """Class decorator: registers the dataset class `cls` as a method `name` on every
    IterableDataset (or every Dataset, for a map-style class), so that `ds.name(*args)` builds
    `cls(ds, *args)`, the way torch chains DataPipes."""

    def __init__(self, name, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = _registered_base(cls)
        if self.name in target.__dict__:
            raise Exception(f"Unable to add DataPipe function name {self.name} as it is already taken")

        def chained(source, *args, **kwargs):
            return cls(source, *args, **kwargs)
        chained.__name__ = self.name
        chained.__doc__ = f"{cls.__name__}(self, ...): registered by functional_datapipe."
        setattr(target, self.name, chained)
        return cls


def _registered_base(cls):
    if isinstance(cls, non_deterministic):
        cls = cls.cls
    if isinstance(cls, type) and issubclass(cls, IterableDataset):
        return IterableDataset
    if isinstance(cls, type) and issubclass(cls, Dataset):
        return Dataset
    raise TypeError("`functional_datapipe` can only decorate IterDataPipe")


def runtime_validation(f):
    """Decorator for a dataset's __iter__: while validation is on (see runtime_validation_disabled),
    every item must be an instance of the dataset's `type` attribute when it has one."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        expected = getattr(self, "type", None)
        for item in f(self):
            if _runtime_validation_enabled and isinstance(expected, type) and not isinstance(item, expected):
                raise RuntimeError(f"Expected an instance as subtype of {expected}, but found {item}({type(item)})")
            yield item
    return wrapper


class runtime_validation_disabled:
    """Turns runtime_validation's checks off from construction until the with block ends."""

    def __init__(self):
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


class guaranteed_datapipes_determinism:
    """Makes non_deterministic datasets refuse to be built, from construction until the with block
    ends."""

    def __init__(self):
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Marks an IterableDataset class as non-deterministic (building one raises TypeError under
    guaranteed_datapipes_determinism), or, given a function of the constructor's arguments that
    says whether that instance is, decorates the class with it."""
    cls = None

    def __init__(self, arg):
        if isinstance(arg, type):
            if not issubclass(arg, IterableDataset):
                raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`, "
                                f"but {arg.__name__} is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                                "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                                "DataPipe if that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (args and isinstance(args[0], type) and issubclass(args[0], IterableDataset)):
            found = getattr(args[0], "__name__", type(args[0]).__name__) if args else "nothing"
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {found} is found")
        self.cls = args[0]
        return self._build_checked

    def _build_checked(self, *args, **kwargs):
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required to return a boolean "
                            f"value, but {type(res)} is found")
        if _determinism and res:
            raise TypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism for this DataPipe "
                            "if that is acceptable for your application")
        return self.cls(*args, **kwargs)


def argument_validation(f):
    """Decorator: each argument annotated with a dataset class must be an instance of it (torch
    checks its DataPipe-typed arguments this way)."""
    signature = inspect.signature(f)
    hints = typing.get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        for name, value in signature.bind(*args, **kwargs).arguments.items():
            hint = hints.get(name)
            if isinstance(hint, type) and issubclass(hint, Dataset) and not isinstance(value, hint):
                raise TypeError(f"Expected argument '{name}' as a {hint.__name__}, but found {type(value)}")
        return f(*args, **kwargs)
    return wrapper


class _DatasetKind:
    """The DataLoader's two kinds of dataset, and the fetcher for each: fetch(indices) returns one
    collated batch; for an iterable dataset it reads len(indices) items (one without
    auto-collation) and raises StopIteration at the end, as torch's fetchers."""
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        return _KindFetcher(kind, dataset, auto_collation, collate_fn, drop_last)


class _KindFetcher:
    def __init__(self, kind, dataset, auto_collation, collate_fn, drop_last):
        from .dataloader import _Fetcher
        self._iterable = kind != _DatasetKind.Map
        self._fetcher = _Fetcher(dataset, auto_collation, collate_fn, drop_last)
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        if not self._iterable:
            return self._fetcher.fetch(possibly_batched_index)
        from .dataloader import _StreamEnd
        out = self._fetcher.fetch(len(possibly_batched_index) if self.auto_collation else None)
        if out is _StreamEnd:
            raise StopIteration
        return out
