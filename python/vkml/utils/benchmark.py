"""vk.utils.benchmark: torch.utils.benchmark's Timer, Measurement and Compare, for timing a
statement as torch's benchmark recipes do (`import vkml as torch` runs them). A Timer runs its
statement with timeit at the thread count asked for (vk.set_num_threads, restored after);
blocked_autorange runs blocks of calls until min_run_time has passed, adaptive_autorange until
the spread settles. No Callgrind (collect_callgrind) and no fuzzers."""
import timeit as _timeit

import numpy as np

__all__ = ["Timer", "Measurement", "TaskSpec", "Compare", "Language"]


class Language:
    PYTHON = 0
    CPP = 1


class TaskSpec:
    def __init__(self, stmt, setup, global_setup="", label=None, sub_label=None, description=None,
                 env=None, num_threads=1):
        self.stmt, self.setup, self.global_setup = stmt, setup, global_setup
        self.label, self.sub_label, self.description = label, sub_label, description
        self.env, self.num_threads = env, num_threads

    @property
    def title(self):
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt: {self.stmt}" if isinstance(self.stmt, str) else "stmt"


def _unit(seconds):
    for scale, name in ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms")):
        if seconds < scale * 1000:
            return scale, name
    return 1.0, "s"


class Measurement:
    """The times of number_per_run calls each (raw_times, seconds); times are per call."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name):  # stmt, label, description, ... as torch's
        if name in ("stmt", "setup", "global_setup", "label", "sub_label", "description", "env",
                    "num_threads", "title"):
            return getattr(self.__dict__["task_spec"], name)
        raise AttributeError(name)

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        return float(np.median(self.times))

    @property
    def mean(self):
        return float(np.mean(self.times))

    @property
    def iqr(self):
        q75, q25 = np.percentile(self.times, [75, 25])
        return float(q75 - q25)

    @property
    def significant_figures(self):
        if len(self.times) < 2 or self.median == 0:
            return 2
        rel = self.iqr / self.median
        return int(max(1, min(6, np.floor(-np.log10(max(rel, 1e-6)) + 1))))

    @property
    def has_warnings(self):
        return len(self.times) > 1 and self.median > 0 and self.iqr / self.median > 0.1

    @staticmethod
    def merge(measurements):
        groups = {}
        for m in measurements:
            key = (m.task_spec.title, m.task_spec.description, m.task_spec.num_threads)
            if key in groups:
                g = groups[key]
                g.raw_times += [t * g.number_per_run / m.number_per_run for t in m.raw_times]
            else:
                groups[key] = Measurement(m.number_per_run, m.raw_times, m.task_spec, m.metadata)
        return list(groups.values())

    def __repr__(self):
        scale, unit = _unit(self.median)
        spec = self.task_spec
        lines = [f"<vkml.utils.benchmark.Measurement object at {hex(id(self))}>", spec.title]
        if spec.description:
            lines.append(spec.description)
        n = len(self.times)
        if n > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({np.percentile(self.times, 25) / scale:.2f} "
                         f"to {np.percentile(self.times, 75) / scale:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        lines.append(f"  {n} measurement{'s' if n != 1 else ''}, {self.number_per_run} runs per measurement, "
                     f"{spec.num_threads} thread{'s' if spec.num_threads != 1 else ''}")
        return "\n".join(lines)


class Timer:
    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=_timeit.default_timer,
                 globals=None, label=None, sub_label=None, description=None, env=None,
                 num_threads=1, language=Language.PYTHON):
        if language != Language.PYTHON:
            raise NotImplementedError("Timer: vkml times Python statements only (no C++ language)")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive integer, got {num_threads!r}")
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description, env,
                                   num_threads)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=dict(globals or {}))

    def _run(self, number):
        import vkml as vk
        before = vk.get_num_threads()
        vk.set_num_threads(self._task_spec.num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            vk.set_num_threads(before)

    def timeit(self, number=1000000):
        return Measurement(number, [self._run(number)], self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("Timer.repeat: use blocked_autorange or adaptive_autorange (as torch's)")

    def autorange(self, callback=None):
        raise NotImplementedError("Timer.autorange: use blocked_autorange or adaptive_autorange (as torch's)")

    def _block_size(self, min_run_time):
        # calls per block: doubled until a block takes a thousandth of the run or more
        number = 1
        while self._run(number) < max(min_run_time / 1000, 1e-4) and number < 1 << 30:
            number *= 2
        return number

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        number = self._block_size(min_run_time)
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._run(number)
            times.append(t)
            total += t
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        number = self._block_size(min_run_time)
        times, total = [], 0.0
        while True:
            t = self._run(number)
            times.append(t)
            total += t
            if callback is not None:
                callback(number, t)
            m = Measurement(number, times, self._task_spec)
            settled = len(times) > 3 and m.median > 0 and m.iqr / m.median < threshold
            if total >= max_run_time or (total >= min_run_time and settled):
                return m

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("Timer.collect_callgrind: vkml has no Callgrind collection")


class Compare:
    """A table of measurements: one per label, rows by sub_label (and thread count), columns by
    description, each cell the median in one unit."""

    def __init__(self, results):
        self._results = Measurement.merge(results)
        self._trim = False

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise=False):
        pass

    def highlight_warnings(self):
        pass

    def __str__(self):
        out = []
        labels = list(dict.fromkeys(m.task_spec.label for m in self._results))
        for label in labels:
            group = [m for m in self._results if m.task_spec.label == label]
            cols = list(dict.fromkeys(m.task_spec.description for m in group))
            rows = list(dict.fromkeys((m.task_spec.num_threads, m.task_spec.sub_label) for m in group))
            scale, unit = _unit(min(m.median for m in group))
            cell = {(m.task_spec.num_threads, m.task_spec.sub_label, m.task_spec.description): m.median
                    for m in group}
            names = [str(s) if s is not None else "" for _, s in rows]
            w = max([len(n) for n in names] + [4])
            heads = [str(c) if c is not None else "" for c in cols]
            widths = [max(len(h), 8) for h in heads]
            out.append(f"[{('-' * 2)} {label} {'-' * 2}]")
            out.append(" " * w + "  |  " + "  |  ".join(h.rjust(cw) for h, cw in zip(heads, widths)))
            threads = None
            for (nt, sub), name in zip(rows, names):
                if nt != threads:
                    threads = nt
                    out.append(f"{nt} thread{'s' if nt != 1 else ''}:")
                vals = [cell.get((nt, sub, c)) for c in cols]
                out.append(name.rjust(w) + "  |  " + "  |  ".join(
                    (f"{v / scale:.1f}" if v is not None else "").rjust(cw) for v, cw in zip(vals, widths)))
            out.append("")
            out.append(f"Times are in {dict(ns='nanoseconds', us='microseconds', ms='milliseconds', s='seconds')[unit]} ({unit}).")
            out.append("")
        return "\n".join(out)

    def print(self):
        print(str(self))
