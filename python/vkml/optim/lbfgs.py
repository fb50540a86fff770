"""LBFGS: torch.optim.LBFGS (Nocedal & Wright's two-loop recursion, optional strong-Wolfe line search).

The search direction, the history and the gradients are flat vkml tensors on the parameters' device; the
scalars of the algorithm (dot products, norms, step sizes, losses) are read back as Python floats, as
torch's reads them (its 0-d tensors hold the same float64 values in a float64 run). The state keeps
torch's keys: func_evals, n_iter, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al."""

from .. import _C, Tensor
from .._grad_mode import enable_grad, no_grad
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _f(x):
    """A Python float from a number or a 1-element tensor (state loaded from torch holds 0-d tensors)."""
    return x.item() if isinstance(x, Tensor) else float(x)


def _dot(a, b):
    return a.dot(b).item()


def _absmax(a):
    return a.abs().max().item()


def _cubic_min(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1), (x2, f2, g2), clamped to bounds (default [x1, x2])."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(pos, lo), hi)


def _strong_wolfe(evaluate, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along d from x satisfying the strong Wolfe conditions: (loss, flat grad, t, evaluations)."""
    d_norm = _absmax(d)
    g = g.clone()
    f_new, g_new = evaluate(x, t, d)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    it = 0
    # bracketing phase
    while it < max_ls:
        if f_new > (f + c1 * t * gtd) or (it > 1 and f_new >= f_prev):
            br, br_f, br_g, br_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            br, br_f, br_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            br, br_f, br_g, br_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        lo, hi = t + 0.01 * (t - t_prev), t * 10  # extrapolate
        t_prev, t = t, _cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(lo, hi))
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        it += 1
    if it == max_ls:
        br, br_f, br_g = [0, t], [f, f_new], [g, g_new]
    # zoom phase: shrink the bracket until a point satisfies the conditions
    insuf_progress = False
    low, high = (0, 1) if br_f[0] <= br_f[-1] else (1, 0)
    while not done and it < max_ls:
        if abs(br[1] - br[0]) * d_norm < tolerance_change:
            break
        t = _cubic_min(br[0], br_f[0], br_gtd[0], br[1], br_f[1], br_gtd[1])
        # keep t away from the bracket's ends (it may otherwise make no progress)
        eps = 0.1 * (max(br) - min(br))
        if min(max(br) - t, t - min(br)) < eps:
            if insuf_progress or t >= max(br) or t <= min(br):
                t = max(br) - eps if abs(t - max(br)) < abs(t - min(br)) else min(br) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        it += 1
        if f_new > (f + c1 * t * gtd) or f_new >= br_f[low]:
            br[high], br_f[high], br_g[high], br_gtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if br_f[0] <= br_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (br[high] - br[low]) >= 0:
                br[high], br_f[high], br_g[high], br_gtd[high] = br[low], br_f[low], br_g[low], br_gtd[low]
            br[low], br_f[low], br_g[low], br_gtd[low] = t, f_new, g_new.clone(), gtd_new
    return br_f[low], br_g[low], br[low], evals


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _numel(self):
        return sum(p.numel() for p in self._params)

    def _flat_grad(self):
        views = [_C.zeros_like(p).reshape(-1) if p.grad is None else p.grad.reshape(-1) for p in self._params]
        return _C.cat(views, 0)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].reshape(p.shape), alpha=step_size)
            offset += n

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        g = self._flat_grad()
        for p, v in zip(self._params, x):
            p.copy_(v)
        return loss, g

    def step(self, closure):
        if closure is None:
            raise RuntimeError("LBFGS.step requires a closure that reevaluates the model and returns the loss")
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = _f(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if _absmax(flat_grad) <= tol_grad:  # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        if ro is not None:
            ro = [_f(r) for r in ro]
        if H_diag is not None:
            H_diag = _f(H_diag)
        if t is not None:
            t = _f(t)
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the direction: steepest descent first, then the two-loop recursion over the history
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > 1e-10:  # the curvature condition: keep the pair
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _dot(y, y)
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    q = q.add(old_dirs[i], alpha=-al[i])
                r = q * H_diag
                for i in range(num_old):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    r = r.add(old_stps[i], alpha=_f(al[i]) - be_i)
                d = r
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            # the step size: scaled by the gradient's size on the first iteration
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tol_change:  # not a descent direction
                break
            ls_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]

                def evaluate(x, step, direction):
                    return self._directional_evaluate(closure, x, step, direction)

                loss, flat_grad, t, ls_evals = _strong_wolfe(evaluate, x_init, t, d, loss, flat_grad, gtd,
                                                             max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = _absmax(flat_grad) <= tol_grad
            else:
                self._add_grad(t, d)  # a fixed step
                opt_cond = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._flat_grad()
                    opt_cond = _absmax(flat_grad) <= tol_grad
                    ls_evals = 1
            current_evals += ls_evals
            state["func_evals"] += ls_evals
            # stopping conditions
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _absmax(d * t) <= tol_change:
                break
            if abs(loss - prev_loss) < tol_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
