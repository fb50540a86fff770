"""torch.nn.attention's names: SDPBackend and sdpa_kernel, which programs use to pick an attention
kernel. vkml has one scaled_dot_product_attention per device (a fused op), so sdpa_kernel checks
its argument and changes nothing; the can_use_* queries answer False (no flash or memory-efficient
CUDA kernels here)."""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "can_use_flash_attention", "can_use_efficient_attention"]


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    if not isinstance(backends, (SDPBackend, list, tuple, set)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    yield


def can_use_flash_attention(params=None, debug=False):
    return False


def can_use_efficient_attention(params=None, debug=False):
    return False
