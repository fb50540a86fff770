"""vk.nn.CTCLoss (init/utils/hooks (#16)): the module of F.ctc_loss."""

from .. import _ctc
from .loss import _Loss


class CTCLoss(_Loss):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return _ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                             self.zero_infinity)
