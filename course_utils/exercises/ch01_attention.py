"""Checkers for the exercises of Chapter 1 (attention, in one sitting).

Each checker takes the learner's function or class, runs it on seeded random and edge-case
inputs, compares with the reference in :mod:`course_utils.attention`, and names the likely
mistake when the answer matches what a typical wrong implementation would return.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ..attention import MultiHeadAttention, scaled_dot_product_attention
from .core import CheckFailed, call_student, call_student_without, checker, close, expect_close, expect_tensor
from .experiment import Expected, compare_prediction, judge_range, measure, read_prediction, require_own_run

__all__ = ["check_lookup_queries", "check_mha", "check_scale_experiment", "check_scaled_attention", "check_softmax"]


# ---------------------------------------------------------------- 1.1 stable softmax
def _softmax_inputs() -> list[Tensor]:
    g = torch.Generator().manual_seed(11)
    return [
        torch.randn(3, 5, generator=g),
        torch.randn(2, 3, 4, generator=g) * 3,  # 3-D: the last dimension, whatever the rank
        torch.tensor([[1000.0, 999.0, 998.0], [0.0, -1.0, -2.0]]),  # large logits: exp overflows
        torch.tensor([[5.0, 5.0, 5.0, 5.0]]),  # ties: uniform
        torch.randn(1, 1, generator=g),  # a single key
        torch.tensor([[-1000.0, 0.0, 1000.0], [1.0, 2.0, 3.0]]),  # a wide row: subtracting the minimum overflows
        torch.randn(4, 4, generator=g) * 2,  # square: a maximum without keepdim broadcasts along the wrong axis
    ]


_SOFTMAX_FUNCTIONS = {"softmax", "log_softmax", "special_softmax", "special_log_softmax", "_softmax"}
_SOFTMAX_RULE = (
    "Exercise 1.1 asks for the softmax without torch.softmax (or F.softmax, nn.Softmax, log_softmax): "
    "build it from exp, max and sum."
)


def _naive_softmax(x: Tensor, dim: int = -1) -> Tensor:
    e = x.exp()
    return e / e.sum(dim=dim, keepdim=True)


@checker("1.1", "numerically stable softmax")
def check_softmax(fn: Callable[[Tensor], Tensor]) -> str:
    """Check ``fn(x)``: softmax over the last dimension of ``x``, stable for large inputs. Chapter 1."""
    for x in _softmax_inputs():
        try:
            got = call_student_without(_SOFTMAX_FUNCTIONS, _SOFTMAX_RULE, fn, x.clone(), what="my_softmax")
        except CheckFailed as failure:
            if "must match the size of tensor" in str(failure):
                raise CheckFailed(
                    f"{failure} Did you forget keepdim=True? x.max(dim=-1) drops the last dimension, so the "
                    "row maxima no longer line up with the rows of x."
                ) from None
            raise
        want = torch.softmax(x, dim=-1)
        mistakes = {
            "Subtract each row's maximum before exp: exp(1000) overflows to inf and inf/inf is NaN.":
                _naive_softmax(x),
            "Subtract the maximum of each row (x.max(dim=-1, keepdim=True)), not the maximum of the "
            "whole tensor: rows far below the global maximum underflow to 0/0.":
                _naive_softmax(x - x.max()),
            "Did you forget the exp? Dividing the inputs by their sum is not a softmax.":
                x / x.sum(dim=-1, keepdim=True),
            "Subtract each row's maximum, not its minimum: x - min(x) is still huge for a wide row and exp "
            "overflows.": _naive_softmax(x - x.min(dim=-1, keepdim=True).values),
            "Divide by each row's sum (e.sum(dim=-1, keepdim=True)), not by the sum over the whole tensor: "
            "every row must sum to 1.":
                (lambda e: e / e.sum())((x - x.max(dim=-1, keepdim=True).values).exp()),
            "Normalise by the sum of the exponentials (e / e.sum(...)), not by their maximum.":
                (lambda e: e / e.max(dim=-1, keepdim=True).values)((x - x.max(dim=-1, keepdim=True).values).exp()),
        }
        if x.dim() == 2 and x.shape[0] == x.shape[1]:
            m = x.max(dim=-1).values  # (4,)
            e = (x - m).exp()  # m broadcasts along the last axis: column j gets row j's maximum
            mistakes["Use keepdim=True in both max and sum: without it the row maxima and sums broadcast "
                     "along the wrong axis (a square input hides the shape error)."] = e / e.sum(dim=-1)
        if x.dim() > 1:
            mistakes["Normalise over the last dimension (dim=-1), not over dim=0."] = torch.softmax(x, dim=0)
        if x.dim() > 2:
            mistakes["Normalise over the last dimension (dim=-1): dim=1 is the last one only for 2-D inputs."] = (
                torch.softmax(x, dim=1)
            )
        expect_close(got, want, f"my_softmax on an input of shape {tuple(x.shape)}", mistakes)
    return "Rows sum to 1 and large logits no longer overflow."


# ---------------------------------------------------------------- 1.2 scaled dot-product attention, with a score bias
def _attention_variant(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float, dim: int = -1,
    fill: float = float("-inf"), invert: bool = False, fix_empty: bool = True, after: bool = False,
    bias: Tensor | None = None, bias_mode: str = "add",
) -> tuple[Tensor, Tensor]:
    """What attention computes with one deliberate change (scale, softmax dim, mask fill, mask after softmax,
    where the bias goes)."""
    raw = q @ k.transpose(-2, -1)  # (B, T_q, T_k)
    if bias is not None and bias_mode == "before-scale":
        raw = raw + bias
    scores = raw / scale
    if bias is not None and bias_mode in ("add", "transpose", "subtract"):
        b = bias.transpose(-2, -1) if bias_mode == "transpose" else bias
        scores = scores - b if bias_mode == "subtract" else scores + b
    if mask is not None and after:
        weights = torch.softmax(scores, dim=dim).masked_fill(~mask, 0.0)
    elif mask is not None:
        keep = ~mask if invert else mask
        scores = scores.masked_fill(~keep, fill)
        if fix_empty:
            scores = scores.masked_fill(~keep.any(-1, keepdim=True), 0.0)
        weights = torch.softmax(scores, dim=dim)
        if fix_empty:
            weights = weights.masked_fill(~keep, 0.0)
    else:
        weights = torch.softmax(scores, dim=dim)
    if bias is not None and bias_mode == "exp-after":
        weights = weights * bias.exp()
    return weights @ v, weights


Case = tuple[Tensor, Tensor, Tensor, "Tensor | None", "Tensor | None"]


def _attention_cases() -> list[Case]:
    g = torch.Generator().manual_seed(12)
    cases: list[Case] = []
    for B, T_q, T_k, d_k, d_v in [(2, 4, 4, 16, 8), (1, 3, 5, 4, 2), (3, 1, 1, 9, 3)]:
        q, k = torch.randn(B, T_q, d_k, generator=g), torch.randn(B, T_k, d_k, generator=g)
        cases.append((q, k, torch.randn(B, T_k, d_v, generator=g), None, None))
    # masked cases: a random keep-mask with every row keeping >= 1 key, then a fully masked row
    q, k, v = (torch.randn(2, 4, 16, generator=g) for _ in range(3))
    mask = torch.rand(2, 4, 4, generator=g) > 0.4
    mask[..., 0] = True
    cases.append((q, k, v, mask, None))
    causal = torch.ones(4, 4, dtype=torch.bool).tril().unsqueeze(0)  # (1, T_q, T_k) broadcasts over B
    cases.append((q, k, v, causal, None))
    empty = mask.clone()
    empty[0, 1] = False  # query 1 of batch 0 may attend to nothing
    cases.append((q, k, v, empty, None))
    # a score bias: (T_q, T_k) shared by the batch, not symmetric; then per batch with a mask; then not square
    distance = (torch.arange(4).view(4, 1) - torch.arange(4).view(1, 4)).float()  # (T_q, T_k): i - j
    cases.append((q, k, v, None, -0.7 * distance.clamp_min(0) + 0.3 * distance.clamp_max(0)))
    cases.append((q, k, v, empty, torch.randn(2, 4, 4, generator=g) * 2))
    q3, k5, v5 = torch.randn(1, 3, 4, generator=g), torch.randn(1, 5, 4, generator=g), torch.randn(1, 5, 2, generator=g)
    cases.append((q3, k5, v5, None, torch.randn(1, 3, 5, generator=g)))
    return cases


@checker("1.2", "scaled dot-product attention")
def check_scaled_attention(fn: Callable[..., Any]) -> str:
    """Check ``fn(q, k, v, mask=None, bias=None) -> (output, weights)`` against the reference. Chapter 1."""
    for q, k, v, mask, bias in _attention_cases():
        kwargs: dict[str, Any] = {} if mask is None else {"mask": mask}
        if bias is not None:
            kwargs["bias"] = bias
        try:
            got = call_student(fn, q.clone(), k.clone(), v.clone(), what="my_attention", **kwargs)
        except CheckFailed as failure:
            if "unexpected keyword argument 'bias'" in str(failure):
                raise CheckFailed(f"{failure} my_attention takes a score bias too: def my_attention(q, k, v, "
                                  "mask=None, bias=None).") from None
            raise
        if not isinstance(got, tuple) or len(got) != 2:
            raise CheckFailed(
                f"my_attention should return a tuple (output, weights), got {type(got).__name__}"
                + (f" of length {len(got)}" if isinstance(got, tuple) else "")
            )
        out, weights = got
        d_k = q.shape[-1]
        want_out, want_w = scaled_dot_product_attention(q, k, v, mask, bias)
        where = "without a mask" if mask is None else "with a mask"
        if mask is not None and not mask.any(-1).all():
            where = "with a mask that hides every key from one query"
        if bias is not None:
            where += " and a score bias"
        base: dict[str, Any] = dict(scale=math.sqrt(d_k), bias=bias)
        variants: dict[str, dict[str, Any]] = {
            "Did you divide by d_k instead of sqrt(d_k)?": dict(base, scale=d_k),
            "Did you forget the scaling by 1/sqrt(d_k)?": dict(base, scale=1.0),
            "Divide the scores by sqrt(d_k), do not multiply them by it.": dict(base, scale=1 / math.sqrt(d_k)),
            "The mask must act before the softmax: set masked scores to -inf, then normalise. Zeroing "
            "weights after the softmax leaves rows that no longer sum to 1.": dict(base, after=True),
            "A query whose keys are all masked should get zero weights: with a large negative number "
            "(e.g. -1e9) instead of -inf such a row becomes uniform. Detect those rows (mask.any(dim=-1)) "
            "and zero them.": dict(base, fill=-1e9, fix_empty=False),
            "The softmax runs over the wrong dimension: normalise over the keys (dim=-1), not the "
            "queries (dim=-2).": dict(base, dim=-2),
            "The mask is inverted: True means keep (attend), False means masked.": dict(base, invert=True),
            "The mask seems inverted (True means keep, False means masked), and rows left with no key give NaN.":
                dict(base, invert=True, fix_empty=False),
            "Masked scores must become -inf before the softmax; filling them with 0 still gives "
            "those keys weight.": dict(base, fill=0.0, fix_empty=False),
            "A query whose keys are all masked should get zero weights and a zero output, not NaN: "
            "detect such rows (mask.any(dim=-1)) and zero them.": dict(base, fix_empty=False),
        }
        if bias is not None:
            variants |= {
                "Add the bias after the scaling, q k^T / sqrt(d_k) + bias: added before the division it is "
                "shrunk by sqrt(d_k) too.": dict(base, bias_mode="before-scale"),
                "The bias was ignored: add it to the scores (q k^T / sqrt(d_k) + bias) before the softmax.":
                    dict(base, bias_mode="ignore"),
                "The bias is added to the scores, not subtracted: a negative entry already lowers a weight.":
                    dict(base, bias_mode="subtract"),
                "Multiplying the weights by exp(bias) after the softmax leaves rows that no longer sum to 1: "
                "add the bias to the scores before the softmax.": dict(base, bias_mode="exp-after"),
            }
            if q.shape[-2] == k.shape[-2]:
                variants["The bias is transposed: bias[..., i, j] belongs to query i and key j, like the "
                         "scores q k^T."] = dict(base, bias_mode="transpose")
        if mask is None:
            variants = {h: kw for h, kw in variants.items() if "mask" not in h.lower()}
        wrong = {hint: _attention_variant(q, k, v, mask, **kw) for hint, kw in variants.items()}
        if mask is not None:
            wrong["The mask was ignored: masked keys still get weight. Set their scores to -inf (where mask is "
                  "False) before the softmax."] = _attention_variant(q, k, v, None, math.sqrt(d_k), bias=bias)
        _expect_order(out, weights, want_out, want_w, "my_attention")
        expect_tensor(weights, f"weights {where}", want_w.shape)
        expect_close(weights, want_w, f"weights {where}", {h: w[1] for h, w in wrong.items()})
        expect_close(out, want_out, f"output {where}", {h: w[0] for h, w in wrong.items()})
    return "Rows of the weights sum to 1 and masked keys get exactly zero weight."


# ---------------------------------------------------------------- 1.4 a tiny multi-head attention
def _wrong_mha(ref: MultiHeadAttention, x: Tensor, mask: Tensor | None, mistake: str) -> tuple[Tensor, Tensor]:
    B, T, d_model = x.shape
    h, d_k = ref.n_heads, ref.d_k
    q, k, v = ref.W_Q(x), ref.W_K(x), ref.W_V(x)
    if mistake == "bad-split":
        q, k, v = (t.reshape(B, h, T, d_k) for t in (q, k, v))
    else:
        q, k, v = (ref.split_heads(t) for t in (q, k, v))  # (B, h, T, d_k)
    scale = {"sqrt-d-model": math.sqrt(d_model), "no-scale": 1.0}.get(mistake, math.sqrt(d_k))
    scores = q @ k.transpose(-2, -1) / scale  # (B, h, T, T)
    keep = None if mask is None else (~mask if mistake == "invert-mask" else mask)
    if keep is not None and mistake != "mask-after":
        scores = scores.masked_fill(~keep, float("-inf"))
    weights = torch.softmax(scores, dim=-2 if mistake == "softmax-dim" else -1)
    if keep is not None and mistake == "mask-after":
        weights = weights.masked_fill(~keep, 0.0)
    out = weights @ v  # (B, h, T, d_k)
    merged = out.reshape(B, T, d_model) if mistake == "bad-split" else ref.merge_heads(out)
    return (merged if mistake == "no-W_O" else ref.W_O(merged)), weights


@checker("1.4", "a tiny multi-head attention")
def check_mha(cls: Callable[[int, int], nn.Module]) -> str:
    """Check ``cls(d_model, n_heads)``: a module with W_Q, W_K, W_V, W_O and forward(x, mask=None). Chapter 1."""
    g = torch.Generator().manual_seed(14)
    for B, T, d_model, h, masked in [(2, 5, 16, 4, False), (1, 3, 8, 2, False), (2, 4, 12, 3, True),
                                     (1, 1, 8, 1, False)]:
        module = call_student(cls, d_model, h, what=f"MyMHA({d_model}, {h})")
        if not isinstance(module, nn.Module):
            raise CheckFailed(f"MyMHA(...) should build an nn.Module, got {type(module).__name__}")
        ref = MultiHeadAttention(d_model, h)
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            layer = getattr(module, name, None)
            if not isinstance(layer, nn.Linear) or layer.weight.shape != (d_model, d_model) or layer.bias is None:
                raise CheckFailed(
                    f"MyMHA should have an attribute {name} = nn.Linear(d_model, d_model) (with bias), "
                    f"got {_describe_layer(layer)}"
                )
            getattr(ref, name).load_state_dict(layer.state_dict())
        n_params = sum(p.numel() for p in module.parameters())
        if n_params != 4 * d_model * d_model + 4 * d_model:
            raise CheckFailed(
                f"MyMHA({d_model}, {h}) has {n_params} parameters; four d_model x d_model projections "
                f"with biases have {4 * d_model * d_model + 4 * d_model}. Extra layers?"
            )
        x = torch.randn(B, T, d_model, generator=g)
        mask = torch.ones(T, T, dtype=torch.bool).tril().view(1, 1, T, T) if masked else None
        kwargs: dict[str, Any] = {} if mask is None else {"mask": mask}
        with torch.no_grad():
            got = call_student(module, x.clone(), what="MyMHA.forward", **kwargs)
            want_out, want_w = ref(x, mask=mask)
            wrong = {
                hint: _wrong_mha(ref, x, mask, key) for key, hint in [
                    ("no-W_O", "Did you forget the output projection W_O after merging the heads?"),
                    ("sqrt-d-model", "Each head scales by sqrt(d_k) = sqrt(d_model / n_heads), not sqrt(d_model)."),
                    ("bad-split", "Split heads with view(B, T, h, d_k).transpose(1, 2), not view(B, h, T, d_k) "
                                  "(and merge back the same way)."),
                    ("no-scale", "Did you forget to divide the scores by sqrt(d_k)?"),
                    ("softmax-dim", "The softmax runs over the wrong dimension: normalise each query's row over "
                                    "the keys (dim=-1), not over the queries (dim=-2)."),
                    ("invert-mask", "The mask is inverted: True means keep (attend), False means masked, so "
                                    "fill the scores where the mask is False (~mask)."),
                    ("mask-after", "Apply the mask to the scores before the softmax (-inf where masked); zeroing "
                                   "weights after the softmax leaves rows that do not sum to 1."),
                ]
            }
        if not isinstance(got, tuple) or len(got) != 2:
            raise CheckFailed(f"MyMHA.forward should return a tuple (output, weights), got {type(got).__name__}")
        out, weights = got
        _expect_order(out, weights, want_out, want_w, "MyMHA.forward")
        if mask is not None:
            wrong["The mask was ignored: a causal mask must stop each query from attending to later "
                  "positions. Pass it on to the attention and fill the scores where it is False with -inf."] = (
                _wrong_mha(ref, x, None, "none"))
        what = f"for d_model={d_model}, n_heads={h}" + (" with a causal mask" if masked else "")
        expect_tensor(weights, f"weights {what}", want_w.shape)
        expect_close(weights, want_w, f"weights {what}", {hnt: w[1] for hnt, w in wrong.items()})
        expect_close(out, want_out, f"output {what}", {hnt: w[0] for hnt, w in wrong.items()})
    return "Same outputs and per-head weights as course_utils.attention.MultiHeadAttention."


def _expect_order(out: object, weights: object, want_out: Tensor, want_w: Tensor, what: str) -> None:
    """Fail with a hint when the pair comes back as (weights, output) instead of (output, weights)."""
    if isinstance(out, Tensor) and isinstance(weights, Tensor) and close(out, want_w) and close(weights, want_out):
        raise CheckFailed(f"{what} returned (weights, output): return them in the order (output, weights).")


def _describe_layer(layer: object) -> str:
    """A short description of what the learner put where an nn.Linear was expected."""
    if layer is None:
        return "no such attribute"
    if isinstance(layer, nn.Linear):
        bias = "with" if layer.bias is not None else "without"
        return f"nn.Linear with weight {tuple(layer.weight.shape)} {bias} bias"
    return type(layer).__name__


# ----- 1.5 design queries for a lookup (transfer) --------------------------------------------------

def _lookup_cases() -> list[tuple[Tensor, Tensor]]:
    g = torch.Generator().manual_seed(15)
    cases = []
    for T, d_k, n_q in ((5, 16, 4), (8, 4, 6), (6, 64, 3)):
        keys = torch.randn(T, d_k, generator=g)
        keys = keys / keys.norm(dim=-1, keepdim=True)  # unit-length keys, not orthogonal
        wanted = torch.randint(0, T, (n_q,), generator=g)
        cases.append((keys, wanted))
    # two keys 0.95 apart in cosine: a query must be long to separate them
    keys = torch.zeros(3, 8)
    keys[0, 0] = 1.0
    keys[1, 0], keys[1, 1] = 0.95, math.sqrt(1 - 0.95**2)
    keys[2, 2] = 1.0
    cases.append((keys, torch.tensor([0, 1, 2])))
    return cases


@checker("1.5", "queries that look up a key")
def check_lookup_queries(fn: Callable[[Tensor, Tensor], Tensor], min_weight: float = 0.95) -> str:
    """Check ``fn(keys (T, d_k), wanted (T_q,))`` returns queries (T_q, d_k) putting >= 95 % on key wanted[i]."""
    for keys, wanted in _lookup_cases():
        got = call_student(fn, keys.clone(), wanted.clone(), what="your lookup_queries")
        q = expect_tensor(got, f"lookup_queries(keys {tuple(keys.shape)}, wanted {tuple(wanted.shape)})",
                          (wanted.shape[0], keys.shape[1]))
        if not torch.isfinite(q).all():
            raise CheckFailed("the queries contain inf or NaN; a large finite scale is enough.")
        _, weights = scaled_dot_product_attention(q.float(), keys, keys)  # (T_q, T)
        picked = weights[torch.arange(len(wanted)), wanted]  # (T_q,)
        if (weights.argmax(dim=-1) != wanted).any():
            i = int((weights.argmax(dim=-1) != wanted).nonzero()[0])
            raise CheckFailed(
                f"query {i} attends most to key {int(weights[i].argmax())}, not to key {int(wanted[i])}. "
                "A query points at the key it has the largest dot product with: start from that key's direction."
            )
        if (picked < min_weight).any():
            i = int(picked.argmin())
            raise CheckFailed(
                f"query {i} points at the right key but gives it only {picked[i].item():.0%} of the weight "
                f"(d_k = {keys.shape[1]}). The softmax is too flat: the scores are divided by sqrt(d_k), and "
                "nearly parallel keys differ little in score, so scale the query up until the gap is large."
            )
    return "Every query gives at least 95 % of its weight to the key it looks up, even for nearly parallel keys."


# ----- 1.3 the scale 1/sqrt(d_k), measured (experiment) ---------------------------------------------
SCALE_OPTIONS = {
    "sharper": "without the scale, the top weight grows with d_k",
    "same": "the scale changes nothing that matters",
    "flatter": "without the scale, the weights spread out as d_k grows",
}
_SCALE_WHY = {
    "same": "A dot product of two random d_k-vectors has standard deviation sqrt(d_k): without the scale the "
            "score gaps grow with d_k, and the softmax of large gaps picks one key.",
    "flatter": "Larger dot products mean larger score gaps, and the softmax of larger gaps is more peaked, "
               "not flatter.",
}
TOP_WEIGHT_SCALED = Expected(
    "mean top weight with the scale at d_k = 256", 0.18, 0.35,
    "with the scale the scores have unit variance at every d_k, so the top weight stays near a quarter.",
    below="Did you divide the scores by d_k instead of sqrt(d_k)?",
    above="Did you leave the scale out of the scaled run (or swap the two runs)?",
)
TOP_WEIGHT_UNSCALED = Expected(
    "mean top weight without the scale at d_k = 256", 0.8, 1.0,
    "without it the scores have standard deviation 16, the softmax saturates and nearly all the weight "
    "goes to one key, whose gradient is then close to zero.",
    below="Did you still divide by sqrt(d_k) in the unscaled run (or swap the two runs)?",
)


@checker("1.3", "the scale 1/sqrt(d_k), measured")
def check_scale_experiment(prediction: Any, fn: Callable[[int, bool, int], float]) -> str:
    """Run the learner's ``fn(d_k, scaled, seed)`` (mean largest attention weight of random queries over
    16 random keys) at d_k = 4 and 256, with and without the scale, and judge the two d_k = 256 runs."""
    guess = read_prediction(prediction, SCALE_OPTIONS)
    measured = {}
    for d_k in (4, 256):
        for scaled in (True, False):
            value = measure(fn, "top_weight", d_k, scaled, 0, label=f"top_weight({d_k}, scaled={scaled}, seed=0)")
            if not 1 / 16 - 1e-6 <= value <= 1 + 1e-6:
                hint = (" A softmax row of 16 keys has its largest weight between 1/16 and 1: take the "
                        "softmax over the keys (the last axis), then the largest weight of each row.")
                raise CheckFailed(f"top_weight({d_k}, scaled={scaled}, seed=0) is outside [1/16, 1].{hint}")
            if abs(value - 1 / 16) < 1e-4:
                raise CheckFailed(f"top_weight({d_k}, scaled={scaled}, seed=0) is 1/16, the mean weight of a row "
                                  "of 16 keys: return the largest weight of each row, averaged over the queries.")
            measured[d_k, scaled] = value
    if measured[256, True] == measured[256, False]:
        raise CheckFailed("your scaled and unscaled runs give the same number: does `scaled` change anything?")
    if measured[4, False] >= measured[256, False]:
        raise CheckFailed("without the scale your top weight does not grow from d_k = 4 to 256: draw new random "
                          "queries and keys of width d_k, with entries of variance 1.")
    require_own_run(fn, "top_weight", (256, True, 0), measured[256, True],
                    what="top_weight(256, scaled=True, seed=0)")
    scaled_line = judge_range(measured[256, True], TOP_WEIGHT_SCALED, what="your scaled run", show=True)
    unscaled_line = judge_range(measured[256, False], TOP_WEIGHT_UNSCALED, what="your unscaled run", show=True)
    outcome = "sharper"
    return f"{scaled_line} {unscaled_line} {compare_prediction(guess, outcome, _SCALE_WHY)}"
