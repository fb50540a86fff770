"""vk.backends.mkldnn: torch's switch for oneDNN (once MKL-DNN). vkml uses oneDNN for one thing,
bfloat16 matrix products on AVX512-BF16 / AMX hardware; `enabled` is settable and has no effect."""

from .. import _C

enabled = True


def is_available():
    """Whether this build links oneDNN (Debian's libdnnl-dev was present when it was built)."""
    return _C._has_onednn()
