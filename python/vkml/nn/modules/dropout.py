"""vk.nn: Dropout."""

from .. import functional as F

from .module import Module


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


# ---- nn breadth (issue #16) ----

class _DropoutNd(Dropout):
    _fn = None

    def forward(self, input):
        return getattr(F, self._fn)(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    _fn = "dropout1d"


class Dropout2d(_DropoutNd):
    _fn = "dropout2d"


class AlphaDropout(_DropoutNd):
    _fn = "alpha_dropout"
