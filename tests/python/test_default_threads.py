"""The default thread count is the CPUs the process may run on, not the machine's.

Under `taskset -c 1` (or a container's cpuset) on a 2-CPU machine vkml started 2 threads on one
CPU, which polled and yielded to each other: a gpt_small training step took a third longer than
with 1. torch reported 1 thread there (its count is not asserted here: on machines with SMT it
counts physical cores).
"""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity API")

PROGRAM = """
import vkml
x = vkml.randn(256, 256)
(x @ x).sum().item()  # the pool runs
print(vkml.get_num_threads())
"""


def _threads(cpus, **env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("VKML_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120,
                       env=env, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    assert r.returncode == 0, r.stderr[-3000:]
    return int(r.stdout)


def test_default_threads_count_the_affinity_mask_not_the_machine():
    mine = sorted(os.sched_getaffinity(0))
    assert _threads({mine[0]}) == 1
    assert _threads(set(mine)) == len(mine)
    if len(mine) >= 2:
        assert _threads(set(mine[:2])) == 2


def test_vkml_num_threads_overrides_the_affinity_mask():
    mine = sorted(os.sched_getaffinity(0))
    assert _threads({mine[0]}, VKML_NUM_THREADS="3") == 3
