"""Constraints on distribution parameters and supports (torch.distributions.constraints): each
checks a tensor element by element (over its last `event_dim` dims for the vector ones) and gives
a bool tensor. Distributions use them to validate their arguments and the values passed to
log_prob when validation is on (Distribution.set_default_validate_args)."""

import vkml as _vk

__all__ = ["Constraint", "boolean", "dependent", "greater_than", "greater_than_eq", "half_open_interval",
           "independent", "integer_interval", "interval", "is_dependent", "lower_cholesky", "nonnegative",
           "nonnegative_integer", "positive", "positive_definite", "positive_integer", "real", "real_vector",
           "simplex", "unit_interval"]


class Constraint:
    """A region of values; check(value) is True where a value lies inside (its last event_dim
    dims reduced)."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A support that depends on the distribution's parameters: it has no check of its own."""

    def __init__(self, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete, event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    def check(self, value):
        return value == value  # NaN is not real


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound, inclusive=False):
        self.lower_bound, self.inclusive = lower_bound, inclusive

    def check(self, value):
        return value >= self.lower_bound if self.inclusive else value > self.lower_bound

    def __repr__(self):
        name = "GreaterThanEq" if self.inclusive else "GreaterThan"
        return f"{name}(lower_bound={self.lower_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound, half_open=False):
        self.lower_bound, self.upper_bound, self.half_open = lower_bound, upper_bound, half_open

    def check(self, value):
        upper = value < self.upper_bound if self.half_open else value <= self.upper_bound
        return (value >= self.lower_bound) & upper

    def __repr__(self):
        name = "HalfOpenInterval" if self.half_open else "Interval"
        return f"{name}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Independent(Constraint):
    """base_constraint over the last reinterpreted_batch_ndims dims as one event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        ok = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if n:
            ok = ok.reshape(tuple(ok.shape[:ok.ndim - n]) + (-1,)).all(-1)
        return ok

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value):
        symmetric = (value - value.transpose(-1, -2)).abs() <= 1e-6 * value.abs().amax((-1, -2), keepdim=True)
        symmetric = symmetric.reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return symmetric & (_vk.linalg.eigvalsh(value) > 0).all(-1)


dependent = _Dependent()
real = _Real()
real_vector = _Independent(real, 1)
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThan(0.0, inclusive=True)
unit_interval = _Interval(0.0, 1.0)
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
simplex = _Simplex()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
greater_than = _GreaterThan
interval = _Interval
integer_interval = _IntegerInterval
independent = _Independent


def greater_than_eq(lower_bound):
    return _GreaterThan(lower_bound, inclusive=True)


def half_open_interval(lower_bound, upper_bound):
    return _Interval(lower_bound, upper_bound, half_open=True)
