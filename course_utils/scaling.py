"""Scaling laws in miniature: the power-law fit of validation loss against model size or
training tokens, a joint fit in both that extrapolates with an uncertainty, and the
compute-optimal arithmetic of Kaplan et al. (2020) and Hoffmann et al. (2022). Chapter 12.

``benchmarks/scaling.py`` trains Chapter 8's character LM at several sizes and training
lengths (``course_utils.runs.scaling``: the recipe, the runs and the shipped table); the
chapter reads the table and fits it live with :func:`fit_power_law` and :func:`fit_loss_surface`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .validate import check_finite, check_int, check_module, check_number


def non_embedding_params(model: nn.Module) -> int:
    """Parameters outside the token embedding, position table and output projection (Kaplan's N). Chapter 12."""
    check_module("model", model)
    skip = ("embedding.", "positional_scheme.", "output_projection.")  # DecoderOnly's parameter names
    names = [name for name, _ in model.named_parameters()]
    if not any(name.startswith(skip) for name in names):
        # another class names its tables otherwise: counting them into N would be silent and wrong
        raise ValueError(f"model must name its token table 'embedding' like DecoderOnly (the parameters skipped "
                         f"from N start with {', '.join(skip)}), got {type(model).__name__} with parameters "
                         f"{', '.join(names[:3]) or 'none'}{', ...' if len(names) > 3 else ''}")
    return sum(p.numel() for name, p in model.named_parameters() if not name.startswith(skip))


def training_flops(params: int, tokens: int) -> float:
    """Training compute C = 6 N D floating-point operations (Kaplan et al. 2020, section 2.1). Chapter 12."""
    check_int("params", params, low=1)
    check_int("tokens", tokens, low=1)
    return 6.0 * params * tokens


@dataclass(frozen=True)
class PowerLawFit:
    """y = coefficient * x ** (-exponent), fitted by least squares on log y against log x. Chapter 12."""

    exponent: float
    exponent_se: float  # standard error of the exponent (from the residuals of the log-log line)
    coefficient: float
    n_points: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "exponent", check_number("exponent", self.exponent))
        object.__setattr__(self, "exponent_se", check_number("exponent_se", self.exponent_se, low=0.0))
        object.__setattr__(self, "coefficient", check_number("coefficient", self.coefficient, low=0.0, low_open=True))
        object.__setattr__(self, "n_points", check_int("n_points", self.n_points, low=2))  # a line needs two points

    def predict(self, x: float | Tensor) -> float | Tensor:
        """The fitted y at x (a positive number, or a tensor of them)."""
        if isinstance(x, Tensor):
            check_finite("x", x, "the fit is evaluated at measured, finite sizes")
            if not x.dtype.is_floating_point:
                x = x.double()
            if x.numel() == 0 or bool((x <= 0).any()):
                raise ValueError(f"x must hold positive numbers (a power law lives on log axes), got "
                                 f"{'an empty tensor' if x.numel() == 0 else f'min {float(x.min())}'}")
        else:
            x = check_number("x", x, low=0.0, low_open=True)
        return self.coefficient * x ** (-self.exponent)


def fit_power_law(x: Any, y: Any) -> PowerLawFit:
    """Least-squares line through (log x, log y); the exponent is minus its slope, with its standard error. Chapter 12.

    With n points the standard error of the slope is sqrt(sum r^2 / (n - 2) / sum (u - mean u)^2),
    r the residuals, u = log x (the textbook formula for simple linear regression).
    """
    for name, v in (("x", x), ("y", y)):
        if isinstance(v, (str, bytes, bool)) or (not isinstance(v, Tensor) and not hasattr(v, "__len__")):
            raise TypeError(f"{name} must be a sequence of positive numbers, got {type(v).__name__}")
    try:
        xs = torch.as_tensor(x, dtype=torch.float64).flatten()
        ys = torch.as_tensor(y, dtype=torch.float64).flatten()
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"x and y must be sequences of numbers, got {type(x).__name__} and "
                        f"{type(y).__name__}") from None
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same length, got {xs.numel()} and {ys.numel()}")
    check_finite("x", xs, "a power law is fitted to measured, finite values")
    check_finite("y", ys, "a power law is fitted to measured, finite values")
    if xs.numel() < 3:
        raise ValueError(f"x must hold at least 3 points to fit a line with an uncertainty, got {xs.numel()}")
    if bool((xs <= 0).any()) or bool((ys <= 0).any()):
        raise ValueError("x and y must be positive (a power law is a line on log-log axes), got a value <= 0")
    u, v = xs.log(), ys.log()
    du = u - u.mean()
    if float((du**2).sum()) == 0.0:
        raise ValueError("x must hold at least two different values, got all equal")
    slope = float((du * (v - v.mean())).sum() / (du**2).sum())
    intercept = float(v.mean() - slope * u.mean())
    residuals = v - (intercept + slope * u)
    n = xs.numel()
    se = math.sqrt(float((residuals**2).sum()) / (n - 2) / float((du**2).sum()))
    return PowerLawFit(exponent=-slope, exponent_se=se, coefficient=math.exp(intercept), n_points=n)


def compute_optimal(compute: float, tokens_per_param: float = 20.0) -> tuple[float, float]:
    """(N, D) that spend ``compute`` = 6 N D with D = tokens_per_param * N (Hoffmann et al. 2022). Chapter 12."""
    check_number("compute", compute, low=0.0, low_open=True)
    check_number("tokens_per_param", tokens_per_param, low=0.0, low_open=True)
    n = math.sqrt(compute / (6.0 * tokens_per_param))
    return n, tokens_per_param * n


def _positive_column(name: str, values: Any) -> Tensor:
    """``values`` as a 1-D float64 tensor of finite, positive numbers (a list, array or tensor)."""
    if isinstance(values, (str, bytes)) or isinstance(values, bool):
        raise TypeError(f"{name} must be a sequence of positive numbers, got {type(values).__name__}")
    try:
        t = torch.as_tensor(values, dtype=torch.float64).flatten()
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a sequence of positive numbers, got {type(values).__name__}") from None
    check_finite(name, t, "a power law is fitted to measured, finite values")
    if t.numel() and bool((t <= 0).any()):
        raise ValueError(f"{name} must hold positive numbers (a power law lives on log axes), got min {float(t.min())}")
    return t


@dataclass(frozen=True)
class LossSurfaceFit:
    """L(N, D) = coefficient * N ** (-alpha_n) * D ** (-alpha_d), least squares on log L. Chapter 12.

    ``covariance`` is the 3 x 3 covariance of (log coefficient, -alpha_n, -alpha_d) and
    ``residual_sd`` the scatter of the points about the fitted plane (in log L), with
    ``n_points - 3`` degrees of freedom.
    """

    alpha_n: float
    alpha_d: float
    coefficient: float
    covariance: tuple[tuple[float, ...], ...]
    residual_sd: float
    n_points: int

    def predict(self, n: float, d: float) -> float:
        """The fitted loss at N = n parameters and D = d tokens."""
        n = check_number("n", n, low=0.0, low_open=True)
        d = check_number("d", d, low=0.0, low_open=True)
        return self.coefficient * n ** (-self.alpha_n) * d ** (-self.alpha_d)

    def interval(self, n: float, d: float, level: float = 0.95) -> tuple[float, float]:
        """The ``level`` prediction interval of one new run's loss at (n, d): (low, high). Chapter 12.

        It adds the uncertainty of the fitted plane at (n, d) (which grows the farther (n, d)
        lies from the fitted runs) to the scatter of single runs about it, with Student's t.
        """
        from scipy.stats import t as student_t

        mid = self.predict(n, d)
        check_number("level", level, 0.0, 1.0, low_open=True, high_open=True)
        x = torch.tensor([1.0, math.log(n), math.log(d)], dtype=torch.float64)
        cov = torch.tensor(self.covariance, dtype=torch.float64)
        se = math.sqrt(float(x @ cov @ x) + self.residual_sd**2)  # in log L
        q = float(student_t.ppf(0.5 + level / 2, self.n_points - 3))
        return mid * math.exp(-q * se), mid * math.exp(q * se)


def fit_loss_surface(n: Any, d: Any, loss: Any) -> LossSurfaceFit:
    """Least-squares plane log L = c - alpha_n log N - alpha_d log D through the runs. Chapter 12.

    Needs at least 4 runs that vary both N and D (not all on one line). Duplicate runs
    (the same N and D twice) count once.
    """
    cols = [_positive_column(name, v) for name, v in (("n", n), ("d", d), ("loss", loss))]
    if len({c.numel() for c in cols}) != 1:
        raise ValueError(f"n, d and loss must have the same length, got {[c.numel() for c in cols]}")
    seen: dict[tuple[float, float], float] = {}
    for a, b, c in zip(*(col.tolist() for col in cols), strict=True):
        seen.setdefault((a, b), c)
    if len(seen) < 4:
        raise ValueError(f"n and d must hold at least 4 different runs to fit 3 numbers with an uncertainty, "
                         f"got {len(seen)}")
    keys = list(seen)
    X = torch.tensor([[1.0, math.log(a), math.log(b)] for a, b in keys], dtype=torch.float64)  # (n, 3)
    y = torch.tensor([math.log(seen[k]) for k in keys], dtype=torch.float64)  # (n,)
    gram = X.T @ X
    if float(torch.linalg.matrix_rank(gram)) < 3:
        raise ValueError("n and d must vary independently (not all runs on one line in log N, log D), got a "
                         "degenerate set of runs")
    inv = torch.linalg.inv(gram)
    beta = inv @ X.T @ y
    residuals = y - X @ beta
    dof = len(keys) - 3
    sd = math.sqrt(float((residuals**2).sum()) / dof) if dof > 0 else 0.0
    cov = inv * sd**2
    return LossSurfaceFit(alpha_n=-float(beta[1]), alpha_d=-float(beta[2]), coefficient=math.exp(float(beta[0])),
                          covariance=tuple(tuple(float(v) for v in row) for row in cov.tolist()),
                          residual_sd=sd, n_points=len(keys))
