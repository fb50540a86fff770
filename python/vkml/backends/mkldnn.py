"""vk.backends.mkldnn: settable, no effect (vkml does not use oneDNN)."""

enabled = True


def is_available():
    return False
