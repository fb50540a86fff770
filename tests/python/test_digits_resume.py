"""The digits demo, run for real in subprocesses: SIGKILL mid-run + --resume must end bitwise equal to an
uninterrupted run; and the MLP reaches >= 97% test accuracy."""

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("safetensors.numpy")

from example_runs import assert_same_training_state, kill_twice_and_resume, run_example

# Subprocess trainings of a minute or more: not repeated under ASan (make test-python-asan).
pytestmark = pytest.mark.slow


def _run(out, *extra):
    return run_example("digits", out, *extra, timeout=600).stdout


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_sigkill_and_resume_is_bitwise_identical(tmp_path, model):
    extra = ["--model", model, "--epochs", "3", "--seed", "7", "--batch-size", "4" if model == "mlp" else "16"]
    ref, res = tmp_path / "ref", tmp_path / "resumed"
    kill_twice_and_resume("digits", ref, res, extra, _run)
    # model, checkpoints (optimizer state included) and logs agree bitwise
    log = assert_same_training_state(ref, res)
    assert [r["epoch"] for r in log] == [1, 2, 3]
    assert (res / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mlp_reaches_97_percent(tmp_path):
    out = _run(tmp_path, "--model", "mlp", "--seed", "0")
    line = [l for l in out.splitlines() if l.startswith("final test accuracy")][0]
    assert float(line.split()[3]) >= 0.97, out
    assert "confusion matrix" in out


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mlp_reaches_97_percent_under_autocast(tmp_path, dtype):
    # #19 item 5: the forward under vk.autocast (float16 with a GradScaler), float32 parameters
    out = _run(tmp_path, "--model", "mlp", "--seed", "0", "--dtype", dtype)
    line = [l for l in out.splitlines() if l.startswith("final test accuracy")][0]
    assert float(line.split()[3]) >= 0.97, out
