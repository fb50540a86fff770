"""DataLoader (torch.utils.data's): batches of a dataset, in the main process or in worker
processes (num_workers > 0).

Workers are started with multiprocessing (the platform's default start method: fork on Linux).
The core re-creates its thread pool in a forked child, and each worker runs with one vkml
thread, as torch's workers do. A worker fetches and collates whole batches and sends them back
pickled (a tensor travels as a numpy copy); the main process hands them out in the sampler's
order whatever order they arrive in. pin_memory, pin_memory_device and persistent_workers are
accepted and change nothing (workers are started for each pass over the data)."""

import itertools
import os
import queue
import random

from ... import _C as _vk
from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _randint

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]


# ---- worker side ----

class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


_worker_info = None


def get_worker_info():
    """The WorkerInfo of this DataLoader worker process; None in the main process."""
    return _worker_info


class _WorkerError:
    """An exception raised in a worker, carried back to the main process."""

    def __init__(self, exc, where):
        import traceback
        self.exc_type = type(exc)
        self.message = f"Caught {type(exc).__name__} {where}.\nOriginal " + \
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self):
        try:
            err = self.exc_type(self.message)
        except Exception:
            err = RuntimeError(self.message)
        raise err


class _StreamEnd:
    """A worker's answer once its copy of an IterableDataset is exhausted."""


class _Fetcher:
    """Turns a list of indices (map-style) or a count (iterable) into one collated batch."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.iterable = isinstance(dataset, IterableDataset)
        self.stream = iter(dataset) if self.iterable else None
        self.ended = False

    def fetch(self, task):
        if self.iterable:
            return self._fetch_stream(task)
        if not self.auto_collation:
            return self.collate_fn(self.dataset[task])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(task) if callable(getitems) else [self.dataset[i] for i in task]
        return self.collate_fn(data)

    def _fetch_stream(self, batch_size):
        """The next batch of the stream, or _StreamEnd when it has none."""
        if self.ended:
            return _StreamEnd
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.stream))
            except StopIteration:
                self.ended = True
                return _StreamEnd
        data = list(itertools.islice(self.stream, batch_size))
        if len(data) < batch_size:
            self.ended = True
        if not data or (self.drop_last and len(data) < batch_size):
            return _StreamEnd
        return self.collate_fn(data)


def _worker_loop(dataset, index_queue, result_queue, fetcher_args, seed, worker_id,
                 num_workers, worker_init_fn):
    global _worker_info
    result_queue.cancel_join_thread()  # the main process may stop reading before the end
    try:
        _vk.set_num_threads(1)
        random.seed(seed)
        _vk.manual_seed(seed)
        try:
            import numpy as np
            np.random.seed(seed % 2 ** 32)
        except ImportError:
            pass
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        error = None
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = _Fetcher(dataset, *fetcher_args)
    except Exception as exc:
        error = _WorkerError(exc, f"in DataLoader worker process {worker_id} while starting")
    while True:
        try:
            task = index_queue.get(timeout=5.0)
        except queue.Empty:
            if os.getppid() == 1:  # the main process is gone
                return
            continue
        if task is None:
            return
        idx, work = task
        if error is not None:
            result_queue.put((idx, error))
            continue
        try:
            out = fetcher.fetch(work)
        except Exception as exc:
            out = _WorkerError(exc, f"in DataLoader worker process {worker_id}")
        result_queue.put((idx, out))


# ---- main-process iterators ----

class _SingleProcessIter:
    def __init__(self, loader):
        # One draw from the generator, as the multi-process iterator's workers' seed: both
        # leave the generator in the same state, so shuffling is the same for any num_workers.
        _randint(2 ** 62, 1, loader.generator)
        self._fetcher = _Fetcher(loader.dataset, loader._auto_collation, loader.collate_fn,
                                 loader.drop_last)
        self._tasks = loader._tasks()

    def __iter__(self):
        return self

    def __next__(self):
        batch = self._fetcher.fetch(next(self._tasks))
        if batch is _StreamEnd:
            raise StopIteration
        return batch


class _MultiProcessIter:
    def __init__(self, loader):
        self._loader = loader
        self._owner_pid = os.getpid()
        n = loader.num_workers
        self._timeout = loader.timeout
        import multiprocessing  # (here: importing it costs every `import vkml` a few ms)
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        base_seed = _randint(2 ** 62, 1, loader.generator)[0]
        self._tasks = loader._tasks()
        self._result_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        fetcher_args = (loader._auto_collation, loader.collate_fn, loader.drop_last)
        for i in range(n):
            q = ctx.Queue()
            q.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, daemon=True,
                            args=(loader.dataset, q, self._result_queue, fetcher_args,
                                  base_seed + i, i, n, loader.worker_init_fn))
            w.start()
            self._index_queues.append(q)
            self._workers.append(w)
        self._active = [True] * n
        self._next_worker = itertools.cycle(range(n))
        self._send_idx = 0       # tasks sent so far
        self._rcvd_idx = 0       # the next task whose result is handed out
        self._task_worker = {}   # task -> worker, for the tasks still outstanding
        self._stash = {}         # results that arrived before their turn
        self._sampler_done = False
        self._shut = False
        for _ in range(n * loader.prefetch_factor):
            self._send()

    def __iter__(self):
        return self

    def _send(self):
        if self._sampler_done or not any(self._active):
            return
        try:
            work = next(self._tasks)
        except StopIteration:
            self._sampler_done = True
            return
        for _ in range(len(self._workers)):
            w = next(self._next_worker)
            if self._active[w]:
                break
        self._index_queues[w].put((self._send_idx, work))
        self._task_worker[self._send_idx] = w
        self._send_idx += 1

    def _get(self):
        waited = 0.0
        while True:
            try:
                return self._result_queue.get(timeout=1.0)
            except queue.Empty:
                waited += 1.0
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader worker (pid {dead[0].pid}) exited "
                                       f"unexpectedly with exit code {dead[0].exitcode}")
                if self._timeout > 0 and waited >= self._timeout:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def __next__(self):
        while True:
            if self._rcvd_idx in self._stash:
                out = self._stash.pop(self._rcvd_idx)
            elif self._rcvd_idx >= self._send_idx:
                self._shutdown()
                raise StopIteration
            else:
                idx, out = self._get()
                if idx != self._rcvd_idx:
                    self._stash[idx] = out
                    continue
            w = self._task_worker.pop(self._rcvd_idx)
            self._rcvd_idx += 1
            if out is _StreamEnd or isinstance(out, _StreamEnd):
                self._active[w] = False
                self._send()
                continue
            if isinstance(out, _WorkerError):
                self._shutdown()
                out.reraise()
            self._send()
            return out

    def _shutdown(self):
        # A forked child (a worker of another loader, a user's Process) holds a copy of this
        # iterator, and its garbage collector may finalize it: the workers are the parent's, and
        # stopping them from there would leave the parent waiting for batches that never come.
        if self._shut or os.getpid() != self._owner_pid:
            return
        self._shut = True
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
                w.join()
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:
            pass


# ---- DataLoader ----

class DataLoader:
    """torch.utils.data.DataLoader: iterates over batches of dataset.

    batch_size (None: no batching), shuffle, sampler, batch_sampler, drop_last, collate_fn,
    generator (for shuffling and the workers' seeds), num_workers (processes), worker_init_fn,
    timeout, multiprocessing_context and prefetch_factor as in torch; pin_memory,
    pin_memory_device, persistent_workers and in_order are accepted and change nothing."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if isinstance(dataset, IterableDataset):
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if (batch_size is not None or batch_sampler is not None) \
                else default_convert
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (
            isinstance(self.dataset, IterableDataset) and self.batch_size is not None)

    def _tasks(self):
        """What each batch is fetched from: index lists, single indices, or (for an
        IterableDataset) the batch size, forever."""
        if isinstance(self.dataset, IterableDataset):
            return itertools.repeat(self.batch_size)
        return iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
