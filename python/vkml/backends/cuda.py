"""vk.backends.cuda: torch.backends.cuda's switches (no-ops: vkml has no CUDA)."""


class _Matmul:
    """torch.backends.cuda.matmul: settable, no effect."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "ieee"

    def __repr__(self):
        return "vkml.backends.cuda.matmul (no-op switches: vkml has no CUDA)"


matmul = _Matmul()
_sdp = {"flash": False, "mem_efficient": False, "math": True, "cudnn": False}


def is_built():
    return False


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = bool(enabled)


def flash_sdp_enabled():
    return _sdp["flash"]


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def math_sdp_enabled():
    return _sdp["math"]


def cudnn_sdp_enabled():
    return _sdp["cudnn"]
