"""vk.backends: torch.backends' switches, for programs that set them (allow_tf32, cudnn.benchmark
...). vkml has no CUDA, cuDNN or MPS; every switch is a settable attribute with torch's default
that changes nothing (vkml's float32 matmul never uses TF32), and every is_available() is
False. cpu.get_cpu_capability() names the instruction set of the CPU kernels in use."""

from . import cpu, cuda, cudnn, mkldnn, mps, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]
