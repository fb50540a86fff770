"""vk.backends.opt_einsum: settable, no effect."""

enabled = True
strategy = "auto"


def is_available():
    return False
