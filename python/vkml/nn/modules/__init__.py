"""vk.nn modules: torch.nn.Module's bookkeeping over vkml tensors; the math lives in F (C++).

One file per family, as torch.nn.modules: module.py (Parameter, Module), then the layers."""

from .activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
                         LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmax2d, Softmin,
                         Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold)
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .linear import Bilinear, Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
                   HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   MultiLabelSoftMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss)
from .module import Module, Parameter
from .normalization import (BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm1d, InstanceNorm2d, LayerNorm,
                            RMSNorm)
from .padding import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                      ReplicationPad1d, ReplicationPad2d, ZeroPad1d, ZeroPad2d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle
# recurrent layers (issue #16 item 2: rnn)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d,
                      MaxPool1d, MaxPool2d)
from .sparse import Embedding
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
# attention and Transformer layers (issue #16)
from .attention import MultiheadAttention
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = ["Parameter", "Module", "Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d",
           "LayerNorm", "Embedding", "Dropout", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Flatten",
           "Identity", "Sequential", "ModuleList", "ModuleDict", "CrossEntropyLoss", "MSELoss"]
# nn breadth (issue #16)
__all__ += ["CELU", "ELU", "GLU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
            "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU6", "Softmax", "Softmax2d", "Softmin", "Softplus",
            "Softshrink", "Softsign", "Tanhshrink", "Threshold", "Conv1d", "CosineSimilarity", "PairwiseDistance",
            "AlphaDropout", "Dropout1d", "Dropout2d", "Unflatten", "Fold", "Unfold", "Bilinear", "BCELoss",
            "BCEWithLogitsLoss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss",
            "KLDivLoss", "L1Loss", "MarginRankingLoss", "MultiLabelSoftMarginLoss", "NLLLoss", "PoissonNLLLoss",
            "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
            "RMSNorm", "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
            "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d", "PixelShuffle",
            "PixelUnshuffle", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "MaxPool1d", "Upsample",
            "UpsamplingBilinear2d", "UpsamplingNearest2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]
# attention and Transformer layers (issue #16)
__all__ += ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
            "TransformerDecoderLayer"]
# conv/pool/embedding breadth (issue #16)
from .conv_breadth import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402
from .pooling import AvgPool3d, MaxPool3d  # noqa: E402
from .embedding_bag import EmbeddingBag  # noqa: E402
from .normalization import BatchNorm3d  # noqa: E402

__all__ += ["Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "EmbeddingBag", "BatchNorm3d",
            "MaxPool3d", "AvgPool3d"]
# init/utils/hooks (#16)
from .param_container import ParameterDict, ParameterList  # noqa: E402
__all__ += ["ParameterDict", "ParameterList"]
from .ctc import CTCLoss  # noqa: E402
__all__ += ["CTCLoss"]
# recurrent layers (issue #16 item 2: rnn)
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
# aliases and nn breadth (issues #15/#16): modules over nn/_more.py
from .more import *  # noqa: E402,F401,F403
from . import more as _more  # noqa: E402
__all__ += _more.__all__
# lazy modules (torch.nn.Lazy*): nn/modules/lazy.py; InstanceNorm3d for LazyInstanceNorm3d
from .normalization import InstanceNorm3d  # noqa: E402
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,  # noqa: E402
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear)
from . import lazy as _lazy  # noqa: E402
__all__ += ["InstanceNorm3d"] + _lazy._LAZY
# porting breadth (#15): Buffer, NLLLoss2d, SyncBatchNorm
from .loss import NLLLoss2d  # noqa: E402
from .module import Buffer  # noqa: E402
from .normalization import SyncBatchNorm  # noqa: E402
__all__ += ["Buffer", "NLLLoss2d", "SyncBatchNorm"]
# the rest of torch.nn (issue #16): the 3-D pads, and modules/rest.py over nn/_rest.py
from .padding import CircularPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad3d  # noqa: E402
from .rest import *  # noqa: E402,F401,F403
from . import rest as _rest  # noqa: E402
__all__ += ["CircularPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "ZeroPad3d"] + _rest.__all__
