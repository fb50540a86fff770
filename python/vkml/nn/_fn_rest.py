"""torch.nn.functional's last porting names (issue #15): the __torch_function__ protocol hooks, the
TorchScript-era helpers boolean_dispatch and assert_int_or_pair, and conv_tbc (a conv1d over a
time-major input). Nothing here needs a kernel of its own."""

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "boolean_dispatch", "assert_int_or_pair", "conv_tbc"]


# ---- the __torch_function__ protocol: vkml has no overrides, so nothing ever dispatches ----

def has_torch_function(relevant_args):
    """False: vkml tensors have no __torch_function__ overrides and vkml has no function modes, so
    code that guards a call to handle_torch_function with this check takes its ordinary path."""
    return False


def has_torch_function_unary(arg):
    """False, as has_torch_function (the one-argument form torch uses on its hot paths)."""
    return False


def has_torch_function_variadic(*args):
    """False, as has_torch_function (the any-number-of-arguments form)."""
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Always raises: it is only reached when a has_torch_function check said True, which in vkml
    never happens, so a call means code that assumes an override protocol vkml does not have."""
    name = getattr(public_api, "__name__", repr(public_api))
    raise NotImplementedError(f"handle_torch_function({name}): vkml has no __torch_function__ overrides, "
                              "so there is nothing to dispatch to")


# ---- TorchScript-era helpers, kept because module code written for torch calls them ----

def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name=None, func_name=None):
    """A function that calls `if_true` or `if_false` by the truth of one argument, found by keyword
    `arg_name`, else at position `arg_index`, else `default` (torch builds F.max_pool2d's
    return_indices forms this way). It takes the docstring of whichever of the two has one."""
    def dispatch(*args, **kwargs):
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return (if_true if flag else if_false)(*args, **kwargs)

    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    dispatch.__doc__ = docs[0] if docs else None
    if_true.__doc__ = if_false.__doc__ = dispatch.__doc__
    if module_name is not None:
        dispatch.__module__ = module_name
    if func_name is not None:
        dispatch.__name__ = func_name
    return dispatch


def assert_int_or_pair(arg, arg_name, message):
    """Raises AssertionError(message.format(arg_name)) unless `arg` is an int or has length 2."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


# ---- conv_tbc ----

def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution over a (time, batch, channels) input with a (kernel, in, out) weight and an
    (out,) bias, padded by `pad` steps at both ends; returns (time_out, batch, out). It is conv1d on
    the batch-major views, so values and gradients are conv1d's."""
    from . import functional as F
    if input.ndim != 3:
        raise RuntimeError("conv_tbc: input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("conv_tbc: weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("conv_tbc: bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("conv_tbc: input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("conv_tbc: bias size must equal dim 2 in the weight tensor (output channels).")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)

