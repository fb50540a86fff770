"""vkml.distributions: torch.distributions' families most programs use, composed of vkml's ops
(their log_prob, entropy and rsample differentiate through autograd): Normal, Uniform, Laplace,
Exponential, Cauchy, Bernoulli, Poisson, Geometric, Binomial, Multinomial, Categorical,
OneHotCategorical (and its StraightThrough form), MultivariateNormal, Independent,
MixtureSameFamily, kl_divergence / register_kl, and the constraints that validate arguments (on by default, as
torch's; Distribution.set_default_validate_args(False) turns it off)."""

from . import constraints
from .categorical import Categorical, OneHotCategorical
from .discrete import (Binomial, Cauchy, Geometric, MixtureSameFamily, Multinomial,
                       OneHotCategoricalStraightThrough)
from .distribution import Distribution, ExponentialFamily
from .kl import kl_divergence, register_kl
from .multivariate import Independent, MultivariateNormal
from .univariate import Bernoulli, Exponential, Laplace, Normal, Poisson, Uniform

__all__ = ["Bernoulli", "Binomial", "Categorical", "Cauchy", "Distribution", "Exponential",
           "ExponentialFamily", "Geometric", "Independent", "Laplace", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson",
           "Uniform", "constraints", "kl_divergence", "register_kl"]
