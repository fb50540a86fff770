"""The ported programs of tests/programs: each runs as written on PyTorch and again with its torch
imports renamed to vkml, and the losses must agree step by step (tests/programs/README.md)."""
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

import vkml

PROGRAMS = pathlib.Path(__file__).resolve().parents[1] / "programs"
RENAMES = [  # the import forms a program may use, and what a porter writes instead
    (re.compile(r"^(\s*)import torch\s*$", re.M), r"\1import vkml as torch"),
    (re.compile(r"^(\s*)import torch\.([\w.]+) as (\w+)\s*$", re.M), r"\1import vkml.\2 as \3"),
    (re.compile(r"^(\s*)from torch(\.[\w.]+)? import ", re.M), r"\1from vkml\2 import "),
]
LOSS = re.compile(r"^step (\d+) loss (\S+)$", re.M)


def ported(source):
    for pattern, replacement in RENAMES:
        source = pattern.sub(replacement, source)
    left = re.findall(r"^\s*(?:import|from) torch\b.*$", source, re.M)
    assert not left, f"an import form the renaming does not cover: {left}"
    return source


def run(source, name):
    # The vkml this test imported (the release or the ASan build), whatever the working directory.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pathlib.Path(vkml.__file__).parents[1])] + env.get("PYTHONPATH", "").split(os.pathsep))
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=600, env=env, cwd=PROGRAMS)
    assert done.returncode == 0, f"{name} failed:\n{done.stderr[-4000:]}"
    losses = [(int(s), float(v)) for s, v in LOSS.findall(done.stdout)]
    assert losses, f"{name} printed no losses:\n{done.stdout[-2000:]}"
    return losses


def tolerance(source):
    found = re.search(r"^# tolerance: (\S+)$", source, re.M)
    assert found, "each program states its tolerance in a '# tolerance:' line"
    return float(found.group(1))


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.py")), ids=lambda p: p.stem)
def test_program_runs_as_on_torch(path):
    source = path.read_text()
    want = run(source, f"{path.name} on torch")
    got = run(ported(source), f"{path.name} on vkml")
    assert [s for s, _ in got] == [s for s, _ in want], "the steps differ"
    tol = tolerance(source)
    for (step, g), (_, w) in zip(got, want):
        assert math.isclose(g, w, rel_tol=tol, abs_tol=tol), \
            f"{path.name} step {step}: vkml {g!r}, torch {w!r} (tolerance {tol})"


def test_renaming_covers_each_import_form():
    src = "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"
    assert ported(src) == ("import vkml as torch\nimport vkml.nn as nn\n"
                           "from vkml.utils.data import DataLoader\n")
    with pytest.raises(AssertionError, match="does not cover"):
        ported("import torch.nn\n")
