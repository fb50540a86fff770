"""vkml.distributions: torch.distributions' families most programs use, composed of vkml's ops
(their log_prob, entropy and rsample differentiate through autograd): Normal, Uniform, Laplace,
Exponential, Cauchy, Bernoulli, Poisson, Geometric, Binomial, Multinomial, Categorical,
OneHotCategorical (and its StraightThrough form), the families sampled through gamma variates (Gamma,
Chi2, Beta, Dirichlet, StudentT, FisherSnedecor, NegativeBinomial), transforms and
TransformedDistribution with the families built on them (LogNormal, HalfNormal, HalfCauchy, Gumbel,
Weibull, Pareto, InverseGamma, LogisticNormal, RelaxedBernoulli, RelaxedOneHotCategorical),
MultivariateNormal, LowRankMultivariateNormal, Independent, ContinuousBernoulli, Kumaraswamy,
GeneralizedPareto, VonMises, LKJCholesky, Wishart,
MixtureSameFamily, kl_divergence / register_kl, the constraints that validate arguments (on by default, as
torch's; Distribution.set_default_validate_args(False) turns it off) and biject_to / transform_to, the
transforms onto them. Every family broadcasts to a larger batch with expand()."""

from . import constraints
from .constraint_registry import biject_to, transform_to
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
from .matrix_families import LKJCholesky, Wishart
from .multivariate import Independent, LowRankMultivariateNormal, MultivariateNormal
from .special_families import ContinuousBernoulli, GeneralizedPareto, Kumaraswamy, VonMises
from .univariate import Bernoulli, Exponential, Laplace, Normal, Poisson, Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
           "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Independent", "Laplace",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "StudentT", "Uniform",
           "constraints", "kl_divergence", "register_kl", "transforms", "TransformedDistribution", "LogNormal",
           "HalfNormal", "HalfCauchy", "Gumbel", "Weibull", "Pareto", "InverseGamma", "LogisticNormal",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "LowRankMultivariateNormal", "ContinuousBernoulli",
           "GeneralizedPareto", "Kumaraswamy", "VonMises", "LKJCholesky", "Wishart", "biject_to", "transform_to"] + transforms.__all__
