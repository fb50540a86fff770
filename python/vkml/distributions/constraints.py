"""Constraints on distribution parameters and supports (torch.distributions.constraints): each
checks a tensor element by element (over its last `event_dim` dims for the vector ones) and gives
a bool tensor. Distributions use them to validate their arguments and the values passed to
log_prob when validation is on (Distribution.set_default_validate_args)."""

import vkml as _vk

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "half_open_interval", "independent", "integer_interval", "interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "nonnegative", "nonnegative_integer", "one_hot",
           "positive", "positive_definite", "positive_integer", "positive_semidefinite", "real", "real_vector",
           "simplex", "square", "stack", "symmetric", "unit_interval"]


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


class dependent_property(property, _Dependent):
    """A property that is also a dependent constraint: a family's support computed from its
    parameters (`@constraints.dependent_property(is_discrete=False, event_dim=0)`)."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        super().__init__(fn)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fn):
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


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


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


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


def _all_of_matrix(ok):
    return ok.reshape(tuple(ok.shape[:-2]) + (-1,)).all(-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _all_of_matrix(value.tril() == value)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: rows of unit length."""
    event_dim = 2

    def check(self, value):
        tol = _vk.finfo(value.dtype).eps * value.shape[-1] * 10
        unit_rows = ((_vk.linalg.vector_norm(value.detach(), dim=-1) - 1).abs() <= tol).all(-1)
        return lower_cholesky.check(value) & unit_rows


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return _vk.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=_vk.bool,
                        device=value.device)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        return _all_of_matrix(_vk.isclose(value, value.transpose(-1, -2), atol=1e-6))


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return (_vk.linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return (_vk.linalg.eigvalsh(value) > 0).all(-1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _Cat(Constraint):
    """Constraints on consecutive slices of dim (of the given lengths, 1 each by default)."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq, self.dim = list(cseq), dim
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat: {len(self.cseq)} constraints but {len(self.lengths)} lengths")

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    event_dim = property(lambda self: max(c.event_dim for c in self.cseq))

    def check(self, value):
        checks, start = [], 0
        for c, length in zip(self.cseq, self.lengths):
            checks.append(c.check(value.narrow(self.dim, start, length)))
            start += length
        return _vk.cat(checks, self.dim)


class _Stack(Constraint):
    """A constraint per index along dim."""

    def __init__(self, cseq, dim=0):
        self.cseq, self.dim = list(cseq), dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    @property
    def event_dim(self):  # the stacked dim counts as an event dim when it lies among them
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        if value.shape[self.dim] != len(self.cseq):
            raise ValueError(f"stack: {len(self.cseq)} constraints for a dim of size {value.shape[self.dim]}")
        return _vk.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


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
lower_triangular = _LowerTriangular()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
one_hot = _OneHot()
less_than = _LessThan
cat = _Cat
stack = _Stack
greater_than = _GreaterThan
interval = _Interval
integer_interval = _IntegerInterval
independent = _Independent


def greater_than_eq(lower_bound):
    return _GreaterThan(lower_bound, inclusive=True)


def half_open_interval(lower_bound, upper_bound):
    return _Interval(lower_bound, upper_bound, half_open=True)
