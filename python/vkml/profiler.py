"""vk.profiler: torch.profiler's API over vkml's op-level profiler (ops/profile.h). While a
profile is on, every op is timed from its checks to its outputs (on the Vulkan device: as it is
recorded into a batch, not as the device runs it), backward times each node's rule as a range
named "backward: <op>", and record_function names spans of user code. key_averages() groups the
events by name (and input shapes), table() prints them as torch's does, export_chrome_trace()
writes a trace for chrome://tracing or Perfetto, and a schedule with on_trace_ready profiles
chosen steps of a training loop."""
import contextlib
import enum
import json
import os
import socket
import time

from . import _C

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule",
           "tensorboard_trace_handler", "supported_activities", "kineto_available", "DeviceType"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1  # vkml's device ops are timed on the host with the rest
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities():
    return {ProfilerActivity.CPU}


def kineto_available():
    """False: vkml's profiler is its own (ops/profile.h), not Kineto."""
    return False


class DeviceType(enum.Enum):
    CPU = 0
    CUDA = 1
    Vulkan = 10


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The action for each step, as torch.profiler.schedule: skip_first steps, then cycles of
    `wait` idle, `warmup` and `active` recorded steps (the last of each cycle saves), `repeat`
    cycles (0: for ever); skip_first_wait: the first cycle does not wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"Invalid profiler schedule arguments. Got wait={wait}, warmup={warmup}, "
                         f"active={active}, repeat={repeat}, skip_first={skip_first}")
    period = wait + warmup + active

    def action(step):
        if step < 0:
            raise ValueError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and step / period >= repeat:
            return ProfilerAction.NONE
        mod = step % period
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < period - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def _always_record(_step):
    return ProfilerAction.RECORD


# ---- events ----

class FunctionEvent:
    """One timed op or range; times in microseconds, as torch's."""

    def __init__(self, id, name, thread, start_ns, end_ns, is_range, input_shapes):
        self.id, self.name, self.thread = id, name, thread
        self.start_ns, self.end_ns = start_ns, end_ns
        self.is_range = is_range
        self.input_shapes = input_shapes
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1

    key = property(lambda self: self.name)
    cpu_time_total = property(lambda self: (self.end_ns - self.start_ns) / 1e3)
    cpu_time = cpu_time_total
    self_cpu_time_total = property(
        lambda self: self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children))
    device_time_total = cuda_time_total = self_device_time_total = self_cuda_time_total = 0.0
    time_range = property(lambda self: (self.start_ns / 1e3, self.end_ns / 1e3))

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={self.cpu_time_total:.3f}us>")


class FunctionEventAvg:
    """The events of one key (name, and input shapes when grouped by them) summed."""

    def __init__(self, key, input_shapes=None):
        self.key, self.input_shapes = key, input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.cuda_time_total = 0.0
        self.self_device_time_total = self.self_cuda_time_total = 0.0

    def add(self, e):
        self.count += e.count
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        return self

    cpu_time = property(lambda self: self.cpu_time_total / max(self.count, 1))

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} "
                f"cpu_time_total={self.cpu_time_total:.3f}us>")


def _fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


# torch's sort keys; the device and memory columns are 0 here (every op is timed on the host)
_SORT_KEYS = {"cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "device_time",
              "device_time_total", "self_device_time_total", "cuda_time", "cuda_time_total",
              "self_cuda_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
              "cuda_memory_usage", "self_cuda_memory_usage", "device_memory_usage",
              "self_device_memory_usage"}


class EventList(list):
    def key_averages(self, group_by_input_shape=False):
        groups = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            k = (e.key, shapes)
            if k not in groups:
                groups[k] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None)
            groups[k].add(e)
        return EventList(groups.values())

    def total_average(self):
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, **_):
        rows = list(self)
        if top_level_events_only:
            rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"table: cannot sort by {sort_by!r}")
            rows.sort(key=lambda e: getattr(e, sort_by, 0.0), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total_self = self.self_cpu_time_total or 1e-30
        shapes = any(getattr(e, "input_shapes", None) is not None for e in rows)
        width = min(max([len(e.key) for e in rows] + [4]), max_name_column_width)
        cols = [("Name", width), ("Self CPU %", 12), ("Self CPU", 12), ("CPU total %", 12),
                ("CPU total", 12), ("CPU time avg", 13), ("# of Calls", 11)]
        if shapes:
            cols.append(("Input Shapes", max_shapes_column_width))
        line = "-" * (sum(w for _, w in cols) + 2 * (len(cols) - 1))
        out = [line] if header is None else [header, line]
        out.append("  ".join(n.rjust(w) if i else n.ljust(w) for i, (n, w) in enumerate(cols)))
        out.append(line)
        for e in rows:
            name = e.key if len(e.key) <= width else e.key[:width - 3] + "..."
            cells = [name.ljust(width),
                     f"{100 * e.self_cpu_time_total / total_self:.2f}%".rjust(12),
                     _fmt_us(e.self_cpu_time_total).rjust(12),
                     f"{100 * e.cpu_time_total / total_self:.2f}%".rjust(12),
                     _fmt_us(e.cpu_time_total).rjust(12),
                     _fmt_us(e.cpu_time).rjust(13), str(e.count).rjust(11)]
            if shapes:
                cells.append(str(e.input_shapes if e.input_shapes is not None else "")
                             [:max_shapes_column_width].rjust(max_shapes_column_width))
            out.append("  ".join(cells))
        out.append(line)
        out.append(f"Self CPU time total: {_fmt_us(self.self_cpu_time_total)}")
        return "\n".join(out) + "\n"

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        pid = os.getpid()
        trace = {"traceEvents": [
            {"name": e.name, "ph": "X", "cat": "user_annotation" if e.is_range else "cpu_op",
             "ts": e.start_ns / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3, "pid": pid, "tid": e.thread,
             "args": {"Input Dims": e.input_shapes} if e.input_shapes is not None else {}}
            for e in self], "displayTimeUnit": "ms"}
        with open(path, "w") as f:
            json.dump(trace, f)


def _events(raw, record_shapes):
    """FunctionEvents from the collector's tuples, each op or range linked to the innermost event
    around it on its thread (children's time is not self time)."""
    events = [FunctionEvent(i, name, thread, start, end, is_range,
                            [list(s) for s in shapes] if record_shapes and not is_range else None)
              for i, (name, start, end, thread, is_range, shapes) in enumerate(raw)]
    by_thread = {}
    for e in sorted(events, key=lambda e: (e.thread, e.start_ns, -e.end_ns)):
        stack = by_thread.setdefault(e.thread, [])
        while stack and stack[-1].end_ns <= e.start_ns:
            stack.pop()
        if stack and e.end_ns <= stack[-1].end_ns:
            e.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(e)
        stack.append(e)
    return EventList(sorted(events, key=lambda e: (e.start_ns, -e.end_ns)))


# ---- the profiler ----

_REC = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """torch.profiler.profile: `with profile(...) as prof:` collects every op run inside (every
    activity is timed on the host); with a schedule, prof.step() ends each step of a loop, the
    steps are named ProfilerStep#N, and on_trace_ready(prof) runs at the end of each active span
    (and at the exit of one), as torch's."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, custom_trace_id_callback=None, enabled=True, use_device=None, **_):
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.enabled = enabled
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._recording = False
        self._step_start = None
        self._events = EventList()

    def _start_trace(self):
        _C._profiler_start(self.record_shapes)
        self._recording = True

    def _stop_trace(self):
        if self._recording:
            self._recording = False
            self._events = _events(_C._profiler_stop(), self.record_shapes)

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev, cur):
        # torch's action map: what happens between a step's action and the next's (None: the exit)
        if prev in (ProfilerAction.NONE, ProfilerAction.WARMUP) and cur in _REC:
            self._start_trace()
        elif prev == ProfilerAction.WARMUP and cur in (ProfilerAction.NONE, None):
            self._start_trace()  # an empty trace, as torch's
            self._stop_trace()
        elif prev == ProfilerAction.RECORD and cur in (ProfilerAction.NONE, ProfilerAction.WARMUP):
            self._stop_trace()  # torch warns: an incorrect schedule, and saves nothing
        elif (prev == ProfilerAction.RECORD and cur is None) or prev == ProfilerAction.RECORD_AND_SAVE:
            self._stop_trace()
            self._trace_ready()
            if cur in _REC:
                self._start_trace()

    def _begin_step(self):
        if self.record_steps and _C._profiler_on():
            self._step_start = _C._profiler_now()

    def _end_step(self):
        if self._step_start is not None and _C._profiler_on():
            _C._profiler_add_range(f"ProfilerStep#{self.step_num}", self._step_start)
        self._step_start = None

    def start(self):
        if self.enabled:
            self._transit(ProfilerAction.NONE, self.current_action)
            self._begin_step()
        return self

    def stop(self):
        if self.enabled:
            self._end_step()
            self._transit(self.current_action, None)

    def step(self):
        """Ends step step_num and begins the next, moving through the schedule."""
        if not self.enabled:
            return
        self._end_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._begin_step()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # results: those of the last trace
    def events(self):
        return self._events

    function_events = property(events)  # torch.autograd.profiler.profile's name

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._events.key_averages(group_by_input_shape)

    def table(self, *args, **kwargs):
        return self.key_averages().table(*args, **kwargs)

    def export_chrome_trace(self, path):
        self._events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        raise NotImplementedError("export_stacks: vkml's profiler records no stacks (with_stack)")

    @property
    def self_cpu_time_total(self):
        return self._events.self_cpu_time_total


class record_function(contextlib.ContextDecorator):
    """A named range around a block or a function: its time, and the ops inside it as its
    children, in the profile (nothing when no profile is on)."""

    def __init__(self, name, args=None):
        self.name = name
        self._starts = []  # one per open entry: a decorated function may recurse

    def __enter__(self):
        self._starts.append(_C._profiler_now() if _C._profiler_on() else None)
        return self

    def __exit__(self, *exc):
        start = self._starts.pop()
        if start is not None:
            _C._profiler_add_range(self.name, start)
        return False


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace as <worker>.<ms>.pt.trace.json into dir_name
    (TensorBoard's profiler plugin and Perfetto read it)."""
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        path = os.path.join(dir_name, f"{worker}.{int(time.time() * 1000)}.pt.trace.json")
        if use_gzip:
            import gzip
            tmp = path + ".tmp"
            prof.export_chrome_trace(tmp)
            with open(tmp, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                g.write(f.read())
            os.remove(tmp)
        else:
            prof.export_chrome_trace(path)
    return handler
