"""vk.backends.cudnn: torch.backends.cudnn's switches (settable, no effect: vkml has no cuDNN)."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
