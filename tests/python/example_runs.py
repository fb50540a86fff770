"""Running the training examples (python -m vkml.examples.<name>) as subprocesses, and killing them
mid-run: shared by the kill-and-resume tests of digits and charlm."""

import os
import signal
import subprocess
import sys
import time

import vkml

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(vkml.__file__)))


def example_cmd(example, out, *extra):
    return [sys.executable, "-m", f"vkml.examples.{example}", "--out", str(out), "--no-progress", *extra]


def example_env():
    """The environment of this process, with the vkml under test first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_example(example, out, *extra, timeout=600, check=True):
    r = subprocess.run(example_cmd(example, out, *extra), env=example_env(), capture_output=True, text=True,
                       timeout=timeout)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def kill_after_checkpoint(example, out, extra, n_checkpoints, delay):
    """Starts a run and SIGKILLs it `delay` seconds after the n-th checkpoint it writes (a checkpoint
    already there when it starts does not count); True if it was still running and was killed."""
    ckpt = os.path.join(out, "checkpoint.safetensors")
    p = subprocess.Popen(example_cmd(example, out, *extra), env=example_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    seen, last = 0, os.stat(ckpt).st_mtime_ns if os.path.exists(ckpt) else None
    while p.poll() is None and seen < n_checkpoints:
        st = os.stat(ckpt).st_mtime_ns if os.path.exists(ckpt) else None
        if st is not None and st != last:
            seen, last = seen + 1, st
        time.sleep(0.002)
    time.sleep(delay)
    killed = p.poll() is None
    if killed:
        os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stdout.close()
    return killed


def kill_twice_and_resume(example, ref, res, extra, run):
    """Trains `extra` uninterrupted into ref, and into res killed twice (shortly after its first
    checkpoint, then right as the resumed run writes its next one) and resumed to the end; `run` runs
    one training and returns its stdout. Returns (ref stdout, resumed stdout)."""
    ref_out = run(ref, *extra)
    killed = [kill_after_checkpoint(example, str(res), extra, 1, 0.05)]
    killed.append(kill_after_checkpoint(example, str(res), extra + ["--resume"], 1, 0.0))
    assert killed[0], "the run ended before it could be killed: make it longer"
    out = run(res, *extra, "--resume")
    assert "resumed from" in out
    return ref_out, out


def assert_same_training_state(ref, res):
    """The model and checkpoint (optimizer state included) files of two runs are bitwise equal, read
    by the safetensors package (not by vkml), and so are their logs; returns the log."""
    import json

    import numpy as np
    from safetensors.numpy import load_file

    for name in ("model.safetensors", "checkpoint.safetensors"):
        a, b = load_file(ref / name), load_file(res / name)
        assert sorted(a) == sorted(b), name
        for k in a:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), (name, k)
    log_ref, log_res = (json.loads((d / "log.json").read_text()) for d in (ref, res))
    assert log_ref == log_res
    return log_ref
