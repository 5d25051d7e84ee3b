"""Checkers for the exercises of Chapter 3 (layer normalisation and residual connections).

Each checker runs the learner's function on seeded random and edge-case inputs, compares with
the reference in :mod:`course_utils.norm` / :mod:`course_utils.schedules`, and names the likely
mistake when the answer matches what a typical wrong implementation would return.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any

import torch
from torch import Tensor, nn

from ..norm import masked_feature_stats, residual_sublayer
from .core import CheckFailed, call_student, checker, close, expect_close, expect_tensor, fail_on_mistake
from .experiment import Expected, compare_prediction, judge_range, measure, read_prediction, require_own_run

__all__ = ["check_identity_init", "check_masked_stats", "check_residual_experiment", "check_residual_sublayer",
           "check_rms_norm", "check_stream_growth", "run_residual_stack"]


# ---------------------------------------------------------------- 3.1 RMS norm
def _rms(x: Tensor, gamma: Tensor, eps: float, dim: int = -1, centre: bool = False, eps_outside: bool = False,
         affine: bool = True, no_sqrt: bool = False, reduce: str = "mean") -> Tensor:
    """RMS norm with one deliberate change (which dim, a subtracted mean, where eps goes, sum for mean, gamma)."""
    if centre:
        x = x - x.mean(dim=dim, keepdim=True)
    sq = x.pow(2).sum(dim=dim, keepdim=True) if reduce == "sum" else x.pow(2).mean(dim=dim, keepdim=True)
    if no_sqrt:
        y = x / (sq + eps)
    else:
        y = x / (sq.sqrt() + eps if eps_outside else (sq + eps).sqrt())
    return gamma * y if affine else y


@checker("3.1", "RMS norm from scratch")
def check_rms_norm(fn: Callable[[Tensor, Tensor, float], Tensor]) -> str:
    """Check ``fn(x, gamma, eps)``: RMS norm over the last dimension of ``x``, scaled by ``gamma``. Chapter 3."""
    g = torch.Generator().manual_seed(31)
    cases = [
        (torch.randn(4, 6, 8, generator=g) * 0.02 + 0.5, 1e-5),  # a large mean: subtracting it is not RMS norm
        (torch.randn(5, 8, generator=g) * 0.01, 1e-5),  # tiny values: where eps sits matters
        (torch.randn(3, 2, 4, 16, generator=g) * 3 - 1, 0.1),  # 4-D input and a large eps
        (torch.randn(1, 1, 8, generator=g), 1e-5),  # batch of 1, a single token
    ]
    for x, eps in cases:
        d = x.shape[-1]
        gamma = torch.rand(d, generator=g) + 0.5
        got = call_student(fn, x.clone(), gamma.clone(), eps, what="my_rms_norm")
        want = _rms(x, gamma, eps)
        mistakes = {
            "RMS norm does not subtract the mean: divide x itself by sqrt(mean(x**2) + eps). Subtracting "
            "the mean first is layer norm without beta.": _rms(x, gamma, eps, centre=True),
            "Is eps inside the sqrt? Use x / sqrt(mean(x**2) + eps), not x / (sqrt(mean(x**2)) + eps).":
                _rms(x, gamma, eps, eps_outside=True),
            "Take the mean of the squares over the features, not their sum: x / sqrt(sum(x**2)) is x "
            "divided by its length, which shrinks as d_model grows.": _rms(x, gamma, eps, reduce="sum"),
            "Did you forget gamma? Scale the normalised x by gamma.": _rms(x, gamma, eps, affine=False),
            "Divide by the root of the mean square, sqrt(mean(x**2) + eps), not by the mean square itself.":
                _rms(x, gamma, eps, no_sqrt=True),
            "Normalise each token over its own features (dim=-1, keepdim=True), not over the whole tensor.":
                gamma * x / (x.pow(2).mean() + eps).sqrt(),
            "RMS norm divides by the root mean square of x, not by its standard deviation (the std "
            "subtracts the mean inside).": gamma * x / (x.var(dim=-1, keepdim=True, unbiased=False) + eps).sqrt(),
        }
        if eps != 1e-5:
            mistakes["Use the eps argument: your result matches a fixed eps = 1e-5."] = _rms(x, gamma, 1e-5)
        mistakes |= {
            "Did you forget eps? Divide by sqrt(mean(x**2) + eps): eps keeps a token of (almost) zeros "
            "from blowing up.": _rms(x, gamma, 0.0),
        }
        if x.dim() > 1 and x.shape[0] > 1:
            mistakes["Normalise each token over its features (dim=-1), not over the batch (dim=0)."] = (
                _rms(x, gamma, eps, dim=0)
            )
        if x.dim() > 2:
            mistakes["Normalise over the last dimension (features), not over dim=1."] = _rms(x, gamma, eps, dim=1)
        expect_close(got, want, f"my_rms_norm on an input of shape {tuple(x.shape)} with eps={eps}", mistakes)
    return "Each token now has a root mean square of 1 before gamma; its mean is left alone."


# ---------------------------------------------------------------- 3.2 residual sublayer
@checker("3.2", "post-LN and pre-LN residual sublayer")
def check_residual_sublayer(fn: Callable[[Tensor, Callable, Callable, str], Tensor]) -> str:
    """Check ``fn(x, sublayer, norm, placement)`` for placement 'post' and 'pre'. Chapter 3."""
    g = torch.Generator().manual_seed(32)
    d = 8
    with torch.no_grad():
        lin = nn.Linear(d, d)
        lin.weight.copy_(torch.randn(d, d, generator=g) / d**0.5)
        lin.bias.copy_(torch.randn(d, generator=g))
        norm = nn.LayerNorm(d)
        norm.weight.copy_(torch.rand(d, generator=g) + 0.5)
        norm.bias.copy_(torch.randn(d, generator=g))

    def sublayer(t: Tensor) -> Tensor:
        return torch.relu(lin(t)) * 2.0

    for shape in [(2, 5, d), (1, 1, d)]:
        x = torch.randn(*shape, generator=g) * 3 + 1
        with torch.no_grad():
            post, pre = residual_sublayer(x, sublayer, norm, "post"), residual_sublayer(x, sublayer, norm, "pre")
            for placement, want in (("post", post), ("pre", pre)):
                got = call_student(fn, x.clone(), sublayer, norm, placement, what=f"my_sublayer(..., '{placement}')")
                other = pre if placement == "post" else post
                mistakes = {
                    f"You returned the {'pre' if placement == 'post' else 'post'}-LN result for placement="
                    f"'{placement}'. Post-LN: norm(x + sublayer(x)); pre-LN: x + sublayer(norm(x)).": other,
                    "Did you forget the residual? Add x back: the identity path is the point of the exercise.":
                        norm(sublayer(x)) if placement == "post" else sublayer(norm(x)),
                }
                fresh = nn.LayerNorm(d)  # gamma = 1, beta = 0: what a LayerNorm built inside the function has
                mistakes["Use the norm passed in as an argument; a new nn.LayerNorm built inside the function has "
                         "its own gamma = 1 and beta = 0."] = (
                    fresh(x + sublayer(x)) if placement == "post" else x + sublayer(fresh(x))
                )
                if placement == "post":
                    mistakes["Post-LN normalises the sum x + sublayer(x), not only the sublayer's output."] = (
                        x + norm(sublayer(x))
                    )
                else:
                    mistakes["Pre-LN adds the raw x back, not norm(x): x + sublayer(norm(x))."] = (
                        norm(x) + sublayer(norm(x))
                    )
                    mistakes["Pre-LN normalises the sublayer's input, then adds x; no norm after the sum."] = (
                        norm(x + sublayer(norm(x)))
                    )
                expect_close(got, want, f"my_sublayer with placement='{placement}' on shape {shape}", mistakes)
    return "Post-LN normalises the sum; pre-LN keeps the identity path free of norms."


# ---------------------------------------------------------------- 3.4 padding-aware statistics
@checker("3.4", "batch statistics without the padding")
def check_masked_stats(fn: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]) -> str:
    """Check ``fn(x, keep)``: per-feature (mean, var) over real tokens only of a padded batch. Chapter 3."""
    g = torch.Generator().manual_seed(34)
    for lengths, T, d in [([5, 2, 4], 5, 6), ([3], 6, 4), ([1, 1], 3, 5)]:
        B = len(lengths)
        keep = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T), True = real token
        pad = torch.randn(d, generator=g) + 2.0  # the embedding of the pad token
        x = torch.where(keep[..., None], torch.randn(B, T, d, generator=g) * 1.5 + 0.5, pad)  # (B, T, d)
        got = call_student(fn, x.clone(), keep.clone(), what="my_masked_stats")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"my_masked_stats should return a pair (mean, var), got {type(got).__name__}")
        mean, var = masked_feature_stats(x, keep)
        flat, n = x.reshape(-1, d), keep.sum()
        mean_wrong_count = (x * keep[..., None]).sum((0, 1)) / (B * T)
        what = f"on lengths {lengths} padded to T={T}"
        if all(isinstance(t, Tensor) for t in got) and close(got[0], var) and close(got[1], mean):
            raise CheckFailed("my_masked_stats returned (var, mean): return them in the order (mean, var).")
        expect_tensor(got[0], f"the mean {what}", (d,))
        expect_close(got[0], mean, f"the mean {what}", {
            "The mean includes the pad positions: average over the real tokens only (x[keep]).": flat.mean(0),
            "Divide by the number of real tokens (keep.sum()), not by B * T.": mean_wrong_count,
            "Average over the tokens (dim=0 of x[keep]), per feature.": x[keep].mean(0) * 0 + x[keep].mean(),
            "The mask is inverted: keep is True on the real tokens, so average x[keep], not x[~keep].":
                x[~keep].mean(0) if (~keep).any() else mean * float("nan"),
            "Average over all real tokens at once, not per sequence first: sequences of different lengths "
            "would weigh the same.": torch.stack([x[b][keep[b]].mean(0) for b in range(B)]).mean(0),
        })
        expect_close(got[1], var, f"the variance {what}", {
            "The variance includes the pad positions: use the real tokens only.": flat.var(0, unbiased=False),
            "Use the biased variance (divide by the number of real tokens, unbiased=False), as BatchNorm does "
            "when it normalises.": x[keep].var(0, unbiased=True) if n > 1 else var * float("nan"),
        })
    return "Pads no longer pull the statistics towards the pad embedding."


# ----- 3.5 predict how the residual stream grows in a pre-LN stack (predict, then measure) -----------

def simulate_pre_ln_stream(n_blocks: int, block_var: float, d_model: int = 512, n_tokens: int = 256,
                           seed: int = 0) -> float:
    """Measured std of x after n pre-LN blocks x <- x + W LN(x), W random with output variance block_var."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_tokens, d_model, generator=g, dtype=torch.float64)  # unit-variance input stream
    for _ in range(n_blocks):
        w = torch.randn(d_model, d_model, generator=g, dtype=torch.float64) * (block_var / d_model) ** 0.5
        normed = (x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True)  # LN without gain
        x = x + normed @ w  # the block sees unit-scale input whatever the stream's scale
    return float(x.std())


@checker("3.5", "predict the stream's growth")
def check_stream_growth(fn: Callable[[int, float], float]) -> str:
    """Check ``fn(n_blocks, block_var)`` predicts the residual stream's std after n pre-LN blocks.

    Each block adds an output of variance ``block_var`` computed from LN(x) (so independent of the
    stream's scale) to a stream that starts with unit variance. The prediction is compared with a
    closed form and with a measured simulation.
    """
    cases = [(16, 0.5), (64, 0.25), (4, 1.0), (1, 1.0), (0, 2.0)]  # the first ones tell the mistakes apart
    for n, v in cases:
        got = call_student(fn, n, v, what="your stream_std")
        if isinstance(got, Tensor):
            got = got.item()
        if not isinstance(got, Real):
            raise CheckFailed(f"stream_std should return a number, got {type(got).__name__}.")
        want = (1 + n * v) ** 0.5
        if abs(got - want) <= 1e-6 * max(1.0, want):
            continue
        wrong = {
            "That is (1 + v)^(n/2): the growth when every block adds variance in proportion to the stream's own "
            "(a block that sees x itself). Here the block sees LN(x), so it adds the same variance v every time.":
                (1 + v) ** (n / 2),
            "That is the variance 1 + n v; the question asks for the standard deviation (its square root).": 1 + n * v,
            "The stream starts with variance 1 before any block: add it.": (n * v) ** 0.5,
            "Standard deviations of independent terms do not add; variances do.": 1 + n * v**0.5,
        }
        fail_on_mistake(got, wrong, lambda g, w: abs(g - w) <= 1e-6 * max(1.0, abs(w)),
                        f"stream_std({n}, {v}) = {got:.4g} is not right. ")
        raise CheckFailed(f"stream_std({n}, {v}) should be {want:.4g}, got {got:.4g}.")
    for n, v in ((16, 0.5), (64, 0.25)):
        measured = simulate_pre_ln_stream(n, v)
        if abs(measured - (1 + n * v) ** 0.5) > 0.05 * measured:  # pragma: no cover - the simulation's sanity
            raise AssertionError("simulation disagrees with the closed form")
    return ("Your prediction matches a simulated pre-LN stack within 5 % at 16 and 64 blocks: "
            "the std grows like sqrt(N).")


# ----- 3.3 train a deep stack with and without residual connections (experiment) -------------------
RESIDUAL_OPTIONS = {
    "both": "both stacks learn the target",
    "residual only": "only the stack with residual connections learns",
    "neither": "16 layers are too deep for either to learn in 200 steps",
}
_RESIDUAL_WHY = {
    "both": "The plain stack's first layers receive gradients orders of magnitude too small (the section above "
            "measured them), and with one shared learning rate they barely move: the loss stays where the "
            "output layer alone can bring it.",
    "neither": "The residual stack's identity paths carry the gradient to every layer unchanged, so its "
               "16 layers train as easily as a shallow network.",
}
PLAIN_STACK = Expected(
    "unexplained share of the target variance after training the plain stack", 0.85, 1.05,
    "the plain stack ends where it started: it predicts little more than the mean of the targets.",
    below="Did your plain stack keep a residual connection, or did you skip the division by the targets' variance?",
    above="Did you divide by the variance of the targets (unbiased=False), and return the last loss?",
)
RESIDUAL_STACK = Expected(
    "unexplained share of the target variance after training the residual stack", 0.0, 0.5,
    "with residual connections the same 16 layers explain most of the target's variance in 200 plain SGD "
    "steps, and their loss is still falling.",
    above="Did you add the residual (h = h + tanh(layer(h))), call opt.zero_grad() every step and return the "
          "loss after the last step rather than the first?",
)


@checker("3.3", "deep stack with and without residuals")
def check_residual_experiment(prediction: Any, fn: Callable[[bool, int], float]) -> str:
    """Run the learner's ``fn(residual, seed)`` (16 Linear+tanh layers trained for 200 SGD steps, final loss
    over the targets' variance) with and without residual connections and judge both results."""
    guess = read_prediction(prediction, RESIDUAL_OPTIONS)
    plain = measure(fn, "train_deep_stack", False, 0)
    resid = measure(fn, "train_deep_stack", True, 0)
    if plain == resid:
        raise CheckFailed("your two runs give the same number: does `residual` change the forward pass?")
    require_own_run(fn, "train_deep_stack", (True, 0), resid)
    plain_line = judge_range(plain, PLAIN_STACK, what="your plain run", show=True)
    resid_line = judge_range(resid, RESIDUAL_STACK, what="your residual run", show=True)
    return f"{plain_line} {resid_line} {compare_prediction(guess, 'residual only', _RESIDUAL_WHY)}"


# ---------------------------------------------------------------- 3.6 a deep residual stack that starts as the identity
def _branch_stack(depth: int, width: int, seed: int) -> nn.ModuleList:
    """``depth`` residual branches Linear(width, 2 width) -> ReLU -> Linear(2 width, width), seeded."""
    torch.manual_seed(seed)
    return nn.ModuleList(nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width))
                         for _ in range(depth))


def run_residual_stack(stack: nn.ModuleList, x: Tensor) -> Tensor:
    """h <- h + branch(h) for every branch of ``stack``: the stack Exercise 3.6 initialises. Chapter 3."""
    h = x
    for branch in stack:
        h = h + branch(h)
    return h


def _same_structure(stack: nn.ModuleList, depth: int, width: int) -> bool:
    return (isinstance(stack, nn.ModuleList) and len(stack) == depth and all(
        isinstance(b, nn.Sequential) and len(b) == 3 and isinstance(b[0], nn.Linear) and isinstance(b[2], nn.Linear)
        and tuple(b[0].weight.shape) == (2 * width, width) and tuple(b[2].weight.shape) == (width, 2 * width)
        for b in stack))


def _gets_gradient(branch: nn.Module, index: int) -> bool:
    """True when the Linear layer ``branch[index]`` got a non-zero weight gradient."""
    layer = branch[index] if isinstance(branch, nn.Sequential) else None
    return isinstance(layer, nn.Linear) and layer.weight.grad is not None and layer.weight.grad.abs().sum().item() > 0


@checker("3.6", "a deep stack that starts as the identity")
def check_identity_init(fn: Callable[[nn.ModuleList], Any]) -> str:
    """Check ``fn(stack)``: re-initialises the residual branches in place so the stack is the identity, yet trains."""
    for depth, width, seed in [(6, 8, 0), (16, 12, 1), (1, 5, 2)]:
        stack = _branch_stack(depth, width, seed)
        before = [id(p) for p in stack.parameters()]  # the same tensors must come back, their values changed
        returned = call_student(fn, stack, what="my_identity_init", may_modify=True)
        if isinstance(returned, nn.ModuleList):
            stack = returned
        if _same_structure(stack, depth, width) and [id(p) for p in stack.parameters()] != before:
            raise CheckFailed("my_identity_init replaced a layer (or a parameter) by a new one: the task is to "
                              "re-initialise the existing branches in place, no new modules. Write into the "
                              "parameters you are given, e.g. with torch.no_grad(): layer.weight.zero_().")
        if not _same_structure(stack, depth, width):
            raise CheckFailed("my_identity_init must keep every branch as it is (Linear, ReLU, Linear of the same "
                              "shapes) and only change parameter values, in place.")
        gen = torch.Generator().manual_seed(10 + seed)
        x = torch.randn(32, width, generator=gen)  # (tokens, width)
        target = torch.randn(32, width, generator=gen)
        with torch.no_grad():
            y = run_residual_stack(stack, x)
        if not close(y, x, atol=1e-6, rtol=0.0):
            shift = y - x
            if close(shift, shift[:1].expand_as(shift), atol=1e-6, rtol=0.0):
                raise CheckFailed(f"With {depth} blocks the stack adds the same vector to every input: a bias is "
                                  "still there. A branch outputs zero only when its last layer's weight *and* "
                                  "bias are zero.")
            if (shift.abs().max() / x.abs().max()).item() < 0.1:
                raise CheckFailed(f"With {depth} blocks the stack is close to the identity but not equal to it: "
                                  "small weights only make each branch's output small. Make the branch output "
                                  "exactly zero.")
            raise CheckFailed(f"With {depth} blocks the stack's output is not its input. A residual block "
                              "h + branch(h) is the identity exactly when its branch outputs zero for every h.")
        optimizer = torch.optim.SGD(stack.parameters(), lr=0.05)
        for step in range(2):
            optimizer.zero_grad()
            loss = (run_residual_stack(stack, x) - target).pow(2).mean()
            loss.backward()
            moved = [_gets_gradient(b, 2) for b in stack]
            first = [_gets_gradient(b, 0) for b in stack]
            if step == 0 and not all(moved):
                raise CheckFailed("The last layer of a branch gets no gradient: its gradient is (what flows back) "
                                  "times ReLU(first layer), so zeroing the first layer as well (ReLU(0) = 0) "
                                  "freezes the branch for good. Zero only the last layer; keep the first random.")
            if step == 1 and not all(first):
                raise CheckFailed("After one step the first layers still get no gradient: did you freeze them "
                                  "(requires_grad=False) or zero them too? Only the last layer starts at zero.")
            optimizer.step()
        if not all(p.requires_grad for p in stack.parameters()):
            raise CheckFailed("Every parameter must stay trainable (requires_grad=True): the point is a stack that "
                              "starts as the identity and then learns.")
    return ("Each stack is exactly the identity at the start, and after one step every layer receives a "
            "gradient: the blocks will learn corrections to their inputs.")
