"""The digits demo, run for real in subprocesses: SIGKILL mid-run + --resume must end bitwise equal to an
uninterrupted run; and the MLP reaches >= 97% test accuracy."""

import json

import numpy as np
import pytest

pytest.importorskip("sklearn")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

from example_runs import kill_after_checkpoint, run_example

# Subprocess trainings of a minute or more: not repeated under ASan (make test-python-asan).
pytestmark = pytest.mark.slow


def _run(out, *extra):
    return run_example("digits", out, *extra, timeout=600).stdout


def _kill_after_checkpoint(out, extra, n_checkpoints, delay):
    return kill_after_checkpoint("digits", out, extra, n_checkpoints, delay)


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
