"""vkml.distributions: torch.distributions' families most programs use, composed of vkml's ops
(their log_prob, entropy and rsample differentiate through autograd): Normal, Uniform, Laplace,
Exponential, Cauchy, Bernoulli, Poisson, Geometric, Binomial, Multinomial, Categorical,
OneHotCategorical (and its StraightThrough form), the families sampled through gamma variates (Gamma,
Chi2, Beta, Dirichlet, StudentT, FisherSnedecor, NegativeBinomial), transforms and
TransformedDistribution with the families built on them (LogNormal, HalfNormal, HalfCauchy, Gumbel,
Weibull, Pareto, InverseGamma, LogisticNormal, RelaxedBernoulli, RelaxedOneHotCategorical),
MultivariateNormal, Independent,
MixtureSameFamily, kl_divergence / register_kl, and the constraints that validate arguments (on by default, as
torch's; Distribution.set_default_validate_args(False) turns it off)."""

from . import constraints
from .categorical import Categorical, OneHotCategorical
from .discrete import (Binomial, Cauchy, Geometric, MixtureSameFamily, Multinomial,
                       OneHotCategoricalStraightThrough)
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, NegativeBinomial, StudentT
from . import transforms
from .transforms import *  # noqa: F401,F403  (torch.distributions exports them too)
from .kl import kl_divergence, register_kl
from .transformed import (Gumbel, HalfCauchy, HalfNormal, InverseGamma, LogisticNormal, LogNormal, Pareto,
                          RelaxedBernoulli, RelaxedOneHotCategorical, TransformedDistribution, Weibull)
from .multivariate import Independent, MultivariateNormal
from .univariate import Bernoulli, Exponential, Laplace, Normal, Poisson, Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
           "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Independent", "Laplace",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "StudentT", "Uniform",
           "constraints", "kl_divergence", "register_kl", "transforms", "TransformedDistribution", "LogNormal",
           "HalfNormal", "HalfCauchy", "Gumbel", "Weibull", "Pareto", "InverseGamma", "LogisticNormal",
           "RelaxedBernoulli", "RelaxedOneHotCategorical"] + transforms.__all__
