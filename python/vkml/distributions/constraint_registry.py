"""biject_to and transform_to (torch.distributions.constraint_registry): the transform from
unconstrained reals onto a constraint's region, for optimising a constrained parameter through an
unconstrained one (`transform_to(constraints.positive)(raw)`). biject_to gives bijections (an
unconstrained vector of K - 1 for the K-simplex: stick breaking), transform_to any onto map
(softmax for the simplex). Each looks the constraint's class up; register adds one."""

import numbers

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint classes to factories constraint -> Transform."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Registers factory for constraint's class (usable as a decorator without factory)."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    """Registers factory(constraint, registry) with both registries (the registry for the
    constraints nested in this one)."""
    def decorate(factory):
        biject_to.register(constraint, lambda c: factory(c, biject_to))
        transform_to.register(constraint, lambda c: factory(c, transform_to))
        return factory
    return decorate


@_both(constraints.real)
def _to_real(constraint, registry):
    return transforms.identity_transform


@_both(constraints.independent)
def _to_independent(constraint, registry):
    return transforms.IndependentTransform(registry(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


# (positive and nonnegative are greater_than instances: lower bound 0, as torch's registry gives)
@_both(constraints.greater_than)
def _to_greater_than(constraint, registry):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint, registry):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
def _to_interval(constraint, registry):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, numbers.Number) and lower == 0 and isinstance(upper, numbers.Number) and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lower, upper - lower)])


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint, registry):
    return transforms.CorrCholeskyTransform()


@_both(constraints.cat)
def _to_cat(constraint, registry):
    return transforms.CatTransform([registry(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@_both(constraints.stack)
def _to_stack(constraint, registry):
    return transforms.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)


biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda c: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda c: transforms.PositiveDefiniteTransform())
