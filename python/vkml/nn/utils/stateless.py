"""torch.nn.utils.stateless: functional_call, the older home of torch.func.functional_call."""
from ...func import functional_call

__all__ = ["functional_call"]
