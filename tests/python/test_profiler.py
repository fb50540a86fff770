"""vk.profiler (torch.profiler's API over ops/profile.h): what a profile collects, its tables and
traces, and its schedule against torch's."""
import json

import numpy as np
import pytest
import torch

import vkml as vk
from vkml.profiler import ProfilerActivity, profile, record_function, schedule


def _model_step(lib, x, w):
    with lib.profiler.record_function("forward"):
        y = lib.relu(x @ w)
        loss = (y * y).sum()
    loss.backward()
    return loss


def test_a_profile_collects_ops_ranges_and_backward_rules():
    x, w = vk.randn(8, 4), vk.randn(4, 3, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _model_step(vk, x, w)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["matmul"].count == 1 + 1  # forward, and w's gradient in backward
    assert avg["relu"].count == 1 and avg["sum"].count == 1
    for key in ("forward", "backward: matmul", "backward: relu", "backward: sum"):
        assert key in avg, sorted(avg)
    fwd = [e for e in prof.events() if e.name == "forward"][0]
    kids = {c.name for c in fwd.cpu_children}
    assert {"matmul", "relu", "mul", "sum"} <= kids, kids
    assert fwd.self_cpu_time_total <= fwd.cpu_time_total
    assert fwd.cpu_time_total >= sum(c.cpu_time_total for c in fwd.cpu_children) - 1e-9
    mm = [e for e in prof.events() if e.name == "matmul" and e.cpu_parent is fwd][0]
    assert mm.input_shapes == [[8, 4], [4, 3]]


def test_an_optimizer_step_is_a_range_named_as_torchs():
    names = []
    for lib in (torch, vk):
        w = lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        (w * w).sum().backward()
        with lib.profiler.profile() as prof:
            opt.step()
        names.append({e.key for e in prof.key_averages()})
    assert "Optimizer.step#SGD.step" in names[0] and "Optimizer.step#SGD.step" in names[1]


def test_nothing_is_recorded_outside_a_profile_and_ranges_cost_nothing_then():
    with record_function("idle"):  # no profile on: a no-op
        vk.ones(3) + 1
    with profile() as prof:
        pass
    assert list(prof.events()) == []
    with profile() as prof:
        vk.ones(3).exp()
    names = [e.name for e in prof.events()]
    assert "exp" in names and "idle" not in names
    with pytest.raises(RuntimeError, match="already on"):
        with profile():
            with profile():
                pass


def test_table_and_key_averages_as_torch_prints_them():
    x = vk.randn(16, 16)
    with profile(record_shapes=True) as prof:
        for _ in range(3):
            x = (x @ x).tanh()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=1)
    lines = table.splitlines()
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                   "# of Calls"):
        assert column in lines[1]
    rows = lines[3:-2]
    assert len(rows) == 1 and rows[0].split()[0] in ("matmul", "tanh")
    assert lines[-1].startswith("Self CPU time total:")
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(e.key, e.count, e.input_shapes) for e in grouped if e.key == "matmul"] == \
        [("matmul", 3, [[16, 16], [16, 16]])]
    total = sum(e.self_cpu_time_total for e in prof.key_averages())
    assert total == pytest.approx(prof.self_cpu_time_total)
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")


def test_a_decorated_function_that_recurses_gets_a_range_per_call():
    counts = []
    for lib in (torch, vk):
        @lib.profiler.record_function("fact")
        def fact(n, x):
            return x if n == 0 else fact(n - 1, x * n)
        with lib.profiler.profile() as prof:
            fact(3, lib.ones(2))
        ranges = [e for e in prof.events() if e.name == "fact"]
        counts.append(len(ranges))
    assert counts == [4, 4]
    ranges.sort(key=lambda e: e.start_ns)
    for outer, inner in zip(ranges, ranges[1:]):  # each call's range holds the next one
        assert outer.start_ns < inner.start_ns and inner.end_ns < outer.end_ns
        assert inner.cpu_parent is outer


def test_the_chrome_trace_holds_every_event(tmp_path):
    with profile() as prof:
        with record_function("block"):
            vk.ones(4).sin().sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = [e["name"] for e in trace["traceEvents"]]
    assert {"block", "sin", "sum"} <= set(names)
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace["traceEvents"])


@pytest.mark.parametrize("args", [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=0, active=1, repeat=2),
                                  dict(wait=2, warmup=1, active=1, repeat=1, skip_first=3),
                                  dict(wait=3, warmup=1, active=2, skip_first=2, skip_first_wait=1)])
def test_schedule_gives_torchs_actions(args):
    ours, theirs = schedule(**args), torch.profiler.schedule(**args)
    assert [ours(s).name for s in range(24)] == [theirs(s).name for s in range(24)]


def test_a_scheduled_profile_saves_the_steps_torch_saves():
    """A training loop with prof.step(): on_trace_ready runs after the same steps as torch's, and
    each trace holds the ops of its active steps, named ProfilerStep#N."""
    def run(lib):
        saved = []

        def ready(p):
            steps = sorted({e.name for e in p.events() if e.name.startswith("ProfilerStep#")})
            saved.append((p.step_num, steps))
        x = lib.ones(4, 4)
        with lib.profiler.profile(schedule=lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
                                  on_trace_ready=ready) as prof:
            for _ in range(10):
                x = (x @ x) * 0.25
                prof.step()
        return saved
    ours, theirs = run(vk), run(torch)
    assert [s for s, _ in ours] == [s for s, _ in theirs] == [4, 8]
    assert [steps for _, steps in ours] == [["ProfilerStep#2", "ProfilerStep#3"],
                                            ["ProfilerStep#6", "ProfilerStep#7"]]


def test_a_profile_without_schedule_calls_on_trace_ready_at_exit(tmp_path):
    with profile(on_trace_ready=vk.profiler.tensorboard_trace_handler(str(tmp_path), "w0")):
        vk.ones(2).exp()
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("w0.") and files[0].name.endswith(".pt.trace.json")
    assert "exp" in {e["name"] for e in json.loads(files[0].read_text())["traceEvents"]}


def test_the_profiler_tutorial_runs_as_written():
    # torch's "Profiling your PyTorch module" recipe, under `import vkml as torch`
    import vkml as torch  # noqa: F811
    from vkml.profiler import ProfilerActivity as PA, profile as prof_, record_function as rf
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(8, 10))
    inputs = torch.randn(2, 3, 16, 16)
    with prof_(activities=[PA.CPU], record_shapes=True) as prof:
        with rf("model_inference"):
            model(inputs)
    text = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    assert "model_inference" in text and "conv2d" in text
    text = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=10)
    assert "[[2, 3, 16, 16], [8, 3, 3, 3]" in text
    legacy = torch.autograd.profiler
    with legacy.profile(record_shapes=False) as p2:
        with legacy.record_function("step"):
            model(inputs).sum().backward()
    assert any(e.name == "step" for e in p2.function_events)
    assert np.isfinite(p2.self_cpu_time_total)
