"""vk.utils.data (issue #15): datasets, samplers, collation and the DataLoader, compared with
torch.utils.data; worker processes; a torch-style training script run with `import vkml as
torch`."""

import collections
import gc
import os
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as td

import vkml as vk
import vkml.utils.data as vd


def plain(x):
    """A batch as plain Python (tensors as (dtype name, shape, values)), for either library."""
    if isinstance(x, (vk.Tensor, torch.Tensor)):
        return ("T", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: plain(v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


Point = collections.namedtuple("Point", "x y")


class ListDataset:
    """A map-style dataset over a list (any object with __getitem__ and __len__ will do)."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def samples(lib):
    """Datasets of every kind of sample default_collate handles, for lib (vkml or torch)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3)) for _ in range(7)]
    return {
        "tensor_pairs": [(lib.tensor([float(i), i * 2.0]), lib.tensor(i)) for i in range(7)],
        "dicts": [{"a": lib.tensor([i, i + 1]), "b": float(i), "c": f"s{i}"} for i in range(7)],
        "numpy": [(a, np.float32(i), np.int64(i)) for i, a in enumerate(arrays)],
        "numbers": [(i, i * 0.5, i % 2 == 0) for i in range(7)],
        "namedtuples": [Point(lib.tensor(float(i)), [i, i + 1]) for i in range(7)],
        "lists": [[lib.ones(2) * i, [i, (i, i)]] for i in range(7)],
        "strings": [f"x{i}" for i in range(7)],
        "int32": [lib.tensor([i], dtype=lib.int32) for i in range(7)],
    }


KINDS = list(samples(torch))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (1, False), (7, False),
                                                  (None, False)])
def test_batches_equal_torch(kind, batch_size, drop_last):
    v = vd.DataLoader(ListDataset(samples(vk)[kind]), batch_size=batch_size, drop_last=drop_last)
    t = td.DataLoader(ListDataset(samples(torch)[kind]), batch_size=batch_size,
                      drop_last=drop_last)
    got = [plain(b) for b in v]
    assert got == [plain(b) for b in t]
    assert len(v) == len(t) == len(got)
    assert [plain(b) for b in v] == got  # a second pass: the same batches


def test_default_collate_and_convert_equal_torch():
    for kind in KINDS:
        if kind == "strings":
            continue
        v, t = samples(vk)[kind], samples(torch)[kind]
        assert plain(vd.default_collate(v)) == plain(td.default_collate(t)), kind
        assert plain(vd.default_convert(v[0])) == plain(td.default_convert(t[0])), kind
    with pytest.raises(TypeError):
        td.default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate"):
        vd.default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="equal size"):
        vd.default_collate([[1, 2], [1]])
    with pytest.raises(TypeError):
        vd.default_collate([np.array(["a"]), np.array(["b"])])


def test_default_collate_strings_in_samples_are_a_tuple_as_torch_regression():
    # Strings from (tensor, str) samples came back as a list; torch's collate gives the tuple of
    # zip(*batch) (a top-level batch of strings stays the list it is).
    def batch(L):
        return [(L.tensor([1.0, 2.0]), "a", {"k": "x"}), (L.tensor([3.0, 4.0]), "b", {"k": "y"})]
    v, t = vd.default_collate(batch(vk)), td.default_collate(batch(torch))
    assert type(v) is type(t) is list
    assert v[1] == t[1] == ("a", "b") and type(v[1]) is tuple
    assert v[2] == t[2] == {"k": ["x", "y"]}
    assert vd.default_collate(["a", "b"]) == td.default_collate(["a", "b"]) == ["a", "b"]


def test_tensor_dataset_subset_concat_as_torch():
    xs, ys = np.arange(12.0).reshape(6, 2), np.arange(6)
    v = vd.TensorDataset(vk.tensor(xs), vk.tensor(ys))
    t = td.TensorDataset(torch.tensor(xs), torch.tensor(ys))
    assert len(v) == len(t) == 6
    assert plain(v[2]) == plain(t[2])
    with pytest.raises(AssertionError):
        vd.TensorDataset(vk.zeros(3), vk.zeros(4))
    vs, ts = vd.Subset(v, [4, 0, 2]), td.Subset(t, [4, 0, 2])
    assert [plain(vs[i]) for i in range(3)] == [plain(ts[i]) for i in range(3)]
    vc, tc = vd.ConcatDataset([v, vs]), td.ConcatDataset([t, ts])
    assert len(vc) == len(tc) == 9
    assert vc.cumulative_sizes == tc.cumulative_sizes
    for i in list(range(9)) + [-1, -9]:
        assert plain(vc[i]) == plain(tc[i])
    with pytest.raises(ValueError):
        vc[-10]
    assert isinstance(v + vs, vd.ConcatDataset)
    assert [plain(b) for b in vd.DataLoader(vs, batch_size=2)] == \
        [plain(b) for b in td.DataLoader(ts, batch_size=2)]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.5], [0.33, 0.33, 0.34], [10],
                                     [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [0.25, 0.25, 0.25, 0.25]])
def test_random_split_lengths_equal_torch(lengths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = vd.random_split(range(10), lengths)
        t = td.random_split(range(10), lengths)
    assert [len(s) for s in v] == [len(s) for s in t]
    assert sorted(i for s in v for i in s) == list(range(10))


def test_random_split_depends_only_on_the_seed_and_rejects_bad_lengths():
    vk.manual_seed(5)
    a = [list(s) for s in vd.random_split(range(20), [0.5, 0.5])]
    vk.manual_seed(5)
    b = [list(s) for s in vd.random_split(range(20), [0.5, 0.5])]
    vk.manual_seed(6)
    c = [list(s) for s in vd.random_split(range(20), [0.5, 0.5])]
    assert a == b and a != c and a[0] != list(range(10))
    for bad in ([3, 3], [0.5, 0.6], [11]):
        with pytest.raises(ValueError):
            td.random_split(range(10), bad)
        with pytest.raises(ValueError):
            vd.random_split(range(10), bad)


def test_samplers_as_torch():
    data = list(range(10))
    assert list(vd.SequentialSampler(data)) == list(td.SequentialSampler(data))
    for bs, dl in [(3, False), (3, True), (5, False), (20, True)]:
        v = vd.BatchSampler(vd.SequentialSampler(data), bs, dl)
        t = td.BatchSampler(td.SequentialSampler(data), bs, dl)
        assert list(v) == list(t) and len(v) == len(t)
    for bad in [(0, False), (-1, False), (2.0, False), (True, False), (2, 1)]:
        with pytest.raises(ValueError):
            td.BatchSampler(data, *bad)
        with pytest.raises(ValueError):
            vd.BatchSampler(data, *bad)
    vk.manual_seed(0)
    perm = list(vd.RandomSampler(data))
    assert sorted(perm) == data and perm != data
    assert len(vd.RandomSampler(data, num_samples=25)) == 25
    long = list(vd.RandomSampler(data, num_samples=25))
    assert sorted(long[:10]) == data and sorted(long[10:20]) == data and len(long) == 25
    rep = list(vd.RandomSampler(data, replacement=True, num_samples=100))
    assert len(rep) == 100 and set(rep) <= set(data) and len(set(rep)) < 10 + 1
    for kw, err in [({"num_samples": 0}, ValueError), ({"replacement": 1}, TypeError)]:
        with pytest.raises(err):
            td.RandomSampler(data, **kw)
        with pytest.raises(err):
            vd.RandomSampler(data, **kw)
    sub = list(vd.SubsetRandomSampler([7, 8, 9]))
    assert sorted(sub) == [7, 8, 9]


def test_shuffle_depends_only_on_the_seed():
    ds = ListDataset(list(range(50)))
    orders = []
    for seed in (1, 1, 2):
        vk.manual_seed(seed)
        orders.append([b.tolist() for b in vd.DataLoader(ds, batch_size=10, shuffle=True)])
    assert orders[0] == orders[1] != orders[2]
    assert sorted(sum(orders[0], [])) == list(range(50))
    vk.manual_seed(1)
    loader = vd.DataLoader(ds, batch_size=10, shuffle=True)
    assert [b.tolist() for b in loader] == orders[0]
    assert [b.tolist() for b in loader] != orders[0]  # each pass reshuffles


def test_dataloader_rejects_what_torch_rejects():
    ds = ListDataset(list(range(4)))
    sampler = vd.SequentialSampler(ds)
    cases = [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
             dict(persistent_workers=True), dict(sampler=sampler, shuffle=True),
             dict(batch_sampler=vd.BatchSampler(sampler, 2, False), batch_size=2),
             dict(batch_size=None, drop_last=True)]
    for kw in cases:
        tkw = dict(kw)
        if "sampler" in kw:
            tkw["sampler"] = td.SequentialSampler(ds)
        if "batch_sampler" in kw:
            tkw["batch_sampler"] = td.BatchSampler(td.SequentialSampler(ds), 2, False)
        with pytest.raises(ValueError):
            td.DataLoader(ds, **tkw)
        with pytest.raises(ValueError):
            vd.DataLoader(ds, **kw)


def test_batch_sampler_and_collate_fn_as_torch():
    ds = ListDataset([(i, float(i)) for i in range(7)])
    vb = vd.BatchSampler(vd.SequentialSampler(ds), 3, True)
    tb = td.BatchSampler(td.SequentialSampler(ds), 3, True)
    v = vd.DataLoader(ds, batch_sampler=vb, collate_fn=lambda b: b)
    t = td.DataLoader(ds, batch_sampler=tb, collate_fn=lambda b: b)
    assert list(v) == list(t) and len(v) == len(t)


class Stream(vd.IterableDataset):
    """A stream split between workers with get_worker_info(), as torch's documentation does."""

    def __init__(self, n, info):
        self.n, self.info = n, info

    def __iter__(self):
        w = self.info()
        lo, step = (0, 1) if w is None else (w.id, w.num_workers)
        return iter(range(lo, self.n, step))

    def __len__(self):
        return self.n


class TStream(td.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        w = td.get_worker_info()
        lo, step = (0, 1) if w is None else (w.id, w.num_workers)
        return iter(range(lo, self.n, step))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.fork)])
@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_dataset_equals_torch(workers, batch_size, drop_last):
    v = vd.DataLoader(Stream(11, vd.get_worker_info), batch_size=batch_size, drop_last=drop_last,
                      num_workers=workers)
    t = td.DataLoader(TStream(11), batch_size=batch_size, drop_last=drop_last,
                      num_workers=workers)
    assert [plain(b) for b in v] == [plain(b) for b in t]
    if batch_size is not None or workers == 0:
        assert len(v) == len(t)


class Squares(vd.Dataset):
    """Each sample is computed with vkml ops, in the worker process that fetches it."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        w = vd.get_worker_info()
        if w is not None and w.id == 0:
            time.sleep(0.02)  # worker 0's batches arrive late: the loader must reorder them
        x = vk.arange(4, dtype=vk.float32) + i
        return {"x": x * x, "i": i, "w": w.id if w else -1}


@pytest.mark.fork
def test_workers_give_the_batches_of_the_main_process():
    if vk.vulkan.is_available():  # the workers fork a process that has a Vulkan device open
        assert (vk.ones(2, device="vulkan") + 1).cpu().tolist() == [2.0, 2.0]
    ds = Squares()
    for shuffle in (False, True):
        vk.manual_seed(7)
        single = [plain({"x": b["x"], "i": b["i"]}) for b in
                  vd.DataLoader(ds, batch_size=4, shuffle=shuffle)]
        vk.manual_seed(7)
        batches = list(vd.DataLoader(ds, batch_size=4, shuffle=shuffle, num_workers=2,
                                     prefetch_factor=3, pin_memory=True,
                                     persistent_workers=True))
        assert [plain({"x": b["x"], "i": b["i"]}) for b in batches] == single
        assert {w for b in batches for w in b["w"].tolist()} == {0, 1}  # both workers worked
    assert vd.get_worker_info() is None
    # vkml still computes and trains in the main process after the workers are gone
    lin = vk.nn.Linear(4, 1)
    opt = vk.optim.SGD(lin.parameters(), lr=0.01)
    for b in vd.DataLoader(ds, batch_size=8, num_workers=2):
        opt.zero_grad()
        loss = lin(b["x"] / 100.0).pow(2).mean()
        loss.backward()
        opt.step()
    assert np.isfinite(loss.item())


def _init(worker_id):
    vd.get_worker_info().dataset.items[0] = 100 + worker_id


class Failing(vd.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"bad sample {i}")
        return i


@pytest.mark.fork
def test_worker_init_fn_seeds_and_errors():
    ds = ListDataset([0, 1, 2, 3])
    batches = [b.tolist() for b in vd.DataLoader(ds, batch_size=1, num_workers=2,
                                                 worker_init_fn=_init)]
    assert batches == [[100], [1], [2], [3]]  # worker 0 fetched the first batch
    with pytest.raises(KeyError, match="bad sample 5"):
        list(vd.DataLoader(Failing(), batch_size=2, num_workers=2))
    with pytest.raises(KeyError, match="bad sample 5"):
        list(td.DataLoader(Failing(), batch_size=2, num_workers=2))
    # torch's iterator stays alive in the exception's reference cycle and shuts its workers down
    # from its finalizer: collected here, not at a random later point (it hung the next loader's
    # start under ASan, inside the garbage collection that creating a queue's lock set off).
    gc.collect()
    loader = vd.DataLoader(ListDataset(list(range(100))), batch_size=2, num_workers=2)
    for i, b in enumerate(loader):  # leaving early shuts the workers down
        if i == 2:
            break
    assert [b.tolist() for b in loader][:2] == [[0, 1], [2, 3]]


def _finalize_and_live_on(it):
    it.__del__()  # as the child's garbage collector would
    time.sleep(1.0)  # (a queue's messages leave from a feeder thread)


@pytest.mark.fork
def test_a_forked_child_finalizing_an_iterator_leaves_the_parents_workers_running():
    # The defect: a process forked while a multi-worker iterator was alive (another loader's
    # worker, a user's Process) finalized its copy, which sent the stop message to the parent's
    # workers; the parent then waited for batches no worker would make.
    import multiprocessing
    it = iter(vd.DataLoader(ListDataset(list(range(12))), batch_size=2, num_workers=2, timeout=60))
    first = next(it).tolist()
    child = multiprocessing.get_context("fork").Process(target=_finalize_and_live_on, args=(it,))
    child.start()
    child.join()
    assert child.exitcode == 0
    assert [first] + [b.tolist() for b in it] == [[2 * i, 2 * i + 1] for i in range(6)]


def test_a_torch_training_script_runs_with_vkml_as_torch(monkeypatch):
    monkeypatch.setattr(vk.backends.cudnn, "benchmark", False)  # restored after the test
    import vkml as torch  # noqa: F811  (the point of the test)
    import vkml.nn as nn
    import vkml.nn.functional as F
    import vkml.optim as optim
    from vkml.optim.lr_scheduler import StepLR
    from vkml.utils.data import DataLoader, Dataset

    class Digits(Dataset):
        def __init__(self, n):
            g = np.random.default_rng(0)
            self.labels = g.integers(0, 4, n)
            self.images = (g.standard_normal((n, 1, 8, 8)) * 0.3).astype(np.float32)
            for k in range(4):  # class k: a bright row 2k
                self.images[self.labels == k, 0, 2 * k, :] += 1.0

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return torch.from_numpy(self.images[i]), int(self.labels[i])

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.dropout = nn.Dropout(0.25)
            self.fc1 = nn.Linear(8 * 3 * 3, 4)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout(x)
            x = torch.flatten(x, 1)
            return F.log_softmax(self.fc1(x), dim=1)

    use_accel = torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    assert not torch.cuda.is_available()
    torch.manual_seed(1)
    torch.cuda.manual_seed_all(1)
    torch.backends.cudnn.benchmark = True
    train_loader = DataLoader(Digits(256), batch_size=32, shuffle=True)
    test_loader = DataLoader(Digits(64), batch_size=64)
    model = Net().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    for epoch in range(3):
        model.train()
        for data, target in train_loader:
            data, target = data.to(device), target.to(device, non_blocking=True)
            optimizer.zero_grad()
            with torch.autocast(device_type=device.type, enabled=False):
                loss = F.nll_loss(model(data), target)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        scheduler.step()
        line = f"epoch {epoch} loss {loss:.4f} {loss}"
        assert line.startswith(f"epoch {epoch} loss ") and "tensor" not in line
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            pred = model(data).argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    assert correct >= 56, correct  # the classes are easy: training must have worked
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-2 * 0.7 ** 3)


@pytest.mark.slow  # each spawned worker imports the test module, and so torch: ~15 s
def test_workers_started_by_spawn():
    ds = ListDataset([(i, float(i)) for i in range(9)])
    v = vd.DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="spawn")
    t = td.DataLoader(ds, batch_size=4)
    assert [plain(b) for b in v] == [plain(b) for b in t]
