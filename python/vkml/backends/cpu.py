"""vk.backends.cpu: torch.backends.cpu's get_cpu_capability."""

from .. import _C


def get_cpu_capability():
    """The instruction set of the CPU kernels in use: "DEFAULT" (x86-64), "AVX2" (x86-64-v3) or
    "AVX512" (x86-64-v4), torch's names. vkml compiles its kernels for each and picks the widest
    this machine supports at import; the environment variable VKML_CPU_CAPABILITY (default, avx2,
    avx512) picks a narrower one, as torch's ATEN_CPU_CAPABILITY does. A build made with
    VKML_NATIVE=ON holds one copy and names what it was compiled for."""
    return _C._get_cpu_capability()
