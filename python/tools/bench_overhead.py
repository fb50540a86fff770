"""Per-op overhead of small ops from Python, vkml against PyTorch (same process, interleaved,
best of several runs). Run: PYTHONPATH=build/python python python/tools/bench_overhead.py"""

import timeit

import torch

import vkml as vk

torch.set_num_threads(1)


def main(n=100_000, repeats=7):
    a, b = vk.tensor([1.5]), vk.tensor([2.5])
    ta, tb = torch.tensor([1.5]), torch.tensor([2.5])
    ag, tag = vk.tensor([1.5], requires_grad=True), torch.tensor([1.5], requires_grad=True)
    m, tm = vk.ones(4, 4), torch.ones(4, 4)
    cases = [
        ("a * b (1 element)", lambda: a * b, lambda: ta * tb),
        ("a + b", lambda: a + b, lambda: ta + tb),
        ("a * 2.0 (Python scalar)", lambda: a * 2.0, lambda: ta * 2.0),
        ("a.exp()", lambda: a.exp(), lambda: ta.exp()),
        ("a * b, a requires grad", lambda: ag * b, lambda: tag * tb),
        ("m.sum(0) (4x4)", lambda: m.sum(0), lambda: tm.sum(0)),
        ("m @ m (4x4)", lambda: m @ m, lambda: tm @ tm),
        ("m[1:3] (slice)", lambda: m[1:3], lambda: tm[1:3]),
        ("m.reshape(16)", lambda: m.reshape(16), lambda: tm.reshape(16)),
    ]
    print(f"{'op':28s} {'vkml us':>9s} {'torch us':>9s} {'ratio':>6s}")
    for name, fv, ft in cases:
        best_v = best_t = float("inf")
        for _ in range(repeats):
            best_v = min(best_v, timeit.timeit(fv, number=n) / n)
            best_t = min(best_t, timeit.timeit(ft, number=n) / n)
        print(f"{name:28s} {best_v * 1e6:9.3f} {best_t * 1e6:9.3f} {best_v / best_t:6.2f}")


if __name__ == "__main__":
    main()
