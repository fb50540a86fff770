"""vk.cuda.amp: torch.cuda.amp's GradScaler and autocast (see vk.amp: as torch without CUDA, they warn and disable themselves)."""

from .. import amp as _amp

__all__ = ["GradScaler", "autocast"]


class GradScaler(_amp.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class autocast(_amp.autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=None):
        super().__init__("cuda", dtype, enabled, cache_enabled)
