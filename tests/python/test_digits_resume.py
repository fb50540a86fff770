"""The digits demo, run for real in subprocesses: SIGKILL mid-run + --resume must end bitwise equal to an
uninterrupted run; and the MLP reaches >= 97% test accuracy."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("sklearn")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

import vkml

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(vkml.__file__)))


def _cmd(out, *extra):
    return [sys.executable, "-m", "vkml.examples.digits", "--out", str(out), "--no-progress", *extra]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(out, *extra):
    r = subprocess.run(_cmd(out, *extra), env=_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _kill_after_checkpoint(out, extra, n_checkpoints, delay):
    """Starts a run, SIGKILLs it `delay` seconds after its n-th checkpoint appears; True if it was killed."""
    ckpt = os.path.join(out, "checkpoint.safetensors")
    p = subprocess.Popen(_cmd(out, *extra), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen, last = 0, None
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


def _params(path):
    return safetensors_numpy.load_file(path)  # read by the safetensors package, not by vkml


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_sigkill_and_resume_is_bitwise_identical(tmp_path, model):
    extra = ["--model", model, "--epochs", "3", "--seed", "7", "--batch-size", "4" if model == "mlp" else "16"]
    ref, res = tmp_path / "ref", tmp_path / "resumed"
    _run(ref, *extra)
    # Killed twice: shortly after the first checkpoint (mid epoch 2), then right as the next one lands.
    killed = [_kill_after_checkpoint(str(res), extra, 1, 0.05)]
    killed.append(_kill_after_checkpoint(str(res), extra + ["--resume"], 1, 0.0))
    assert killed[0], "the run ended before it could be killed: make it longer"
    out = _run(res, *extra, "--resume")
    assert "resumed from" in out
    a, b = _params(ref / "model.safetensors"), _params(res / "model.safetensors")
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
    # the checkpoints (optimizer state included) agree too, and so do the logs
    ca, cb = _params(ref / "checkpoint.safetensors"), _params(res / "checkpoint.safetensors")
    assert sorted(ca) == sorted(cb)
    for k in ca:
        assert np.array_equal(ca[k], cb[k]), k
    la, lb = json.loads((ref / "log.json").read_text()), json.loads((res / "log.json").read_text())
    assert la == lb and [r["epoch"] for r in la] == [1, 2, 3]
    assert (res / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mlp_reaches_97_percent(tmp_path):
    out = _run(tmp_path, "--model", "mlp", "--seed", "0")
    line = [l for l in out.splitlines() if l.startswith("final test accuracy")][0]
    assert float(line.split()[3]) >= 0.97, out
    assert "confusion matrix" in out
