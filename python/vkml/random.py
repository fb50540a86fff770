"""vk.random, as torch.random: the default generator's seeding and state, and fork_rng (a block
after which the generator is where it was before)."""

import contextlib

from ._C import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Runs the block and puts the default generator (every device's: vkml has one) back where it
    was; enabled=False does nothing."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
