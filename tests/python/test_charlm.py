"""The char-level GPT demo, run for real in subprocesses: a short run learns (val loss below the unigram
entropy of the corpus), and SIGKILL mid-run + --resume ends bitwise equal to an uninterrupted run."""

import json
import re

import numpy as np
import pytest

safetensors_numpy = pytest.importorskip("safetensors.numpy")

from example_runs import assert_same_training_state, kill_twice_and_resume, run_example

# Subprocess trainings of a minute or more: not repeated under ASan (make test-python-asan).
pytestmark = pytest.mark.slow

# ~30 ms/step on a 2-core CPU
TINY = ["--d-model", "64", "--n-heads", "4", "--n-layers", "2", "--context", "32", "--batch-size", "16",
        "--corpus-chars", "100000", "--eval-batches", "4", "--sample-chars", "40"]


def _run(out, *extra):
    return run_example("charlm", out, *(*TINY, *extra), timeout=300).stdout


def _params(path):
    return safetensors_numpy.load_file(path)  # read by the safetensors package, not by vkml


def test_short_run_beats_unigram_entropy(tmp_path):
    out = _run(tmp_path, "--steps", "60", "--eval-every", "20", "--seed", "1")
    m = re.search(r"final val loss ([0-9.]+) nats/char vs unigram entropy ([0-9.]+)", out)
    assert m, out
    val, h0 = float(m.group(1)), float(m.group(2))
    assert 2.0 < h0 < 5.0, out  # python source: ~3 nats/char without context
    assert val < h0 - 0.2, out
    log = json.loads((tmp_path / "log.json").read_text())
    assert [r["step"] for r in log] == [20, 40, 60]
    assert log[-1]["val_loss"] < log[0]["val_loss"], log
    assert "sample (temperature" in out
    params = _params(tmp_path / "model.safetensors")
    assert "head.weight" in params and all(np.isfinite(v).all() for v in params.values())


def test_sigkill_and_resume_is_bitwise_identical(tmp_path):
    # checkpoints every 10 steps, log lines every 25: the kills land between log lines as well; dropout
    # makes vkml's RNG state part of what must be restored.
    extra = ["--steps", "120", "--eval-every", "25", "--ckpt-every", "10", "--seed", "3", "--dropout", "0.1"]
    ref_out, out = kill_twice_and_resume("charlm", tmp_path / "ref", tmp_path / "resumed", TINY + extra,
                                         lambda out, *args: run_example("charlm", out, *args, timeout=300).stdout)
    # model, checkpoints (optimizer and RNG state included), logs and the samples agree bitwise
    log = assert_same_training_state(tmp_path / "ref", tmp_path / "resumed")
    assert [r["step"] for r in log] == [25, 50, 75, 100, 120]
    sample = lambda s: s[s.index("sample (temperature"):]
    assert sample(ref_out) == sample(out)


def test_resume_refuses_other_settings(tmp_path):
    _run(tmp_path, "--steps", "2", "--eval-every", "1", "--sample-chars", "0")
    r = run_example("charlm", tmp_path, *TINY, "--steps", "2", "--eval-every", "1", "--seed", "9", "--resume",
                    timeout=300, check=False)
    assert r.returncode != 0 and "seed" in r.stderr


def test_bfloat16_autocast_loss_curve_follows_float32(tmp_path):
    # #19 item 5: --dtype bfloat16 trains under vk.autocast (matmuls in bfloat16, softmax, norms
    # and the loss in float32, parameters and AdamW state float32); its validation losses stay
    # within a few percent of the float32 run's at every log point
    curves = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / dtype
        _run(out, "--steps", "60", "--eval-every", "20", "--seed", "1", "--dtype", dtype)
        curves[dtype] = [r["val_loss"] for r in json.loads((out / "log.json").read_text())]
    assert len(curves["bfloat16"]) == 3
    for a, b in zip(curves["float32"], curves["bfloat16"]):
        assert abs(b - a) <= 0.03 * a, curves
    assert curves["bfloat16"][-1] < curves["bfloat16"][0]
