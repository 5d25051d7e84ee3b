"""Table 3 of the paper in miniature: variants of the Transformer and one cheap, measured training
run per row on the reversal task. Chapter 10.

``build_variant`` makes a :class:`~course_utils.model.Transformer` and then switches off one
part (residual connections, LayerNorm, positional encoding) or swaps the sinusoidal table for
a learned one, without a second copy of the model. ``train_measured`` trains it with Chapter 6's
loop and measures steps to 99 % and the first encoder layer's gradient norm with two callbacks.
One row of Table 3 (``run_row``), its recipe and the shipped results are in
:mod:`course_utils.runs.ablations`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from .attention import MultiHeadAttention
from .data import PAD_ID
from .model import (
    Transformer,
    TransformerConfig,
)
from .norm import LayerNorm
from .training import Callback, StepsTo, TrainConfig, train
from .validate import (
    check_finite,
    check_float_tensor,
    check_int,
    check_module,
    check_positive_int,
    check_rank,
)

POSITIONALS = ("sinusoidal", "learned", "none")


class KeySizeAttention(MultiHeadAttention):
    """Multi-head attention whose queries and keys have their own size d_k per head (Table 3 row B). Chapter 10.

    Values and the output keep d_model / h per head, so only the dot products get cheaper.
    """

    def __init__(self, d_model: int, n_heads: int, d_k: int, dropout: float = 0.0):
        super().__init__(d_model, n_heads, dropout)
        check_positive_int("d_k", d_k)
        self.W_Q = nn.Linear(d_model, n_heads * d_k)  # d_model -> h * d_k
        self.W_K = nn.Linear(d_model, n_heads * d_k)  # d_model -> h * d_k

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, h * d) -> (B, h, T, d) for queries/keys (d = d_k) and values (d = d_model / h)."""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, -1).transpose(1, 2)  # (B, h, T, d)


class NoFeedForward(nn.Module):
    """Stands in for the position-wise feed-forward network and outputs zeros: the no-FFN row. Chapter 10."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.zeros_like(x)


def build_variant(
    config: TransformerConfig,
    positional: str = "sinusoidal",
    residual: bool = True,
    layer_norm: bool = True,
    d_k: int | None = None,
    feed_forward: bool = True,
) -> Transformer:
    """A Transformer with one part removed or swapped. Chapter 10.

    positional: "sinusoidal" (the paper), "learned" (a trained table, Table 3 row E) or "none";
    residual=False drops every residual connection; layer_norm=False replaces every LayerNorm
    by the identity; d_k sets the query/key size per head (default d_model / h);
    feed_forward=False removes every position-wise feed-forward sub-layer (its output is zero,
    so each block keeps only its attention sub-layers). The weights come from the global
    generator, as any module's: :func:`course_utils.runs.run` seeds it (a notebook seeds it itself).
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    if positional not in POSITIONALS:
        raise ValueError(f"positional must be one of {POSITIONALS}, got {positional!r}")
    for name, flag in (("residual", residual), ("layer_norm", layer_norm), ("feed_forward", feed_forward)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    if d_k is not None:
        d_k = check_positive_int("d_k", d_k)
    # Chapter 9's switch (sinusoidal / learned / none) and the blocks' residual switch
    c = config = dataclasses.replace(config, positional=positional, residual=residual)
    model = Transformer(config)
    if d_k is not None:
        for block in list(model.encoder_layers) + list(model.decoder_layers):
            for name in ("self_attn", "cross_attn"):
                if hasattr(block, name):
                    setattr(block, name, KeySizeAttention(c.d_model, c.n_heads, d_k, c.dropout))
        model._reset_parameters()
    if not layer_norm:
        for module in list(model.modules()):
            for name, child in list(module.named_children()):
                if isinstance(child, LayerNorm):
                    setattr(module, name, nn.Identity())
    if not feed_forward:
        for block in list(model.encoder_layers) + list(model.decoder_layers):
            block.ffn = NoFeedForward()
    return model


def layer_grad_norm(model: Transformer, layer: int = 0) -> float:
    """L2 norm of the gradient of all parameters of encoder block ``layer`` (0 = the first). Chapter 10."""
    if not hasattr(check_module("model", model), "encoder_layers"):
        raise TypeError(f"model must be a Transformer with encoder_layers, got a {type(model).__name__} module")
    layer = check_int("layer", layer, 0, len(model.encoder_layers) - 1)
    grads = [p.grad.reshape(-1) for p in model.encoder_layers[layer].parameters() if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.cat(grads))) if grads else 0.0


def sequence_accuracy(logits: Tensor, targets: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of sequences whose every non-PAD target token is the argmax (teacher-forced). Chapter 10."""
    check_finite("logits", check_float_tensor("logits", logits, 3, "(B, T, V)"), "NaN logits have no argmax")
    check_rank("targets", targets, 2, "(B, T)")
    if logits.shape[:2] != targets.shape:
        raise ValueError(
            f"logits and targets must agree on B and T, got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    if bool((targets == pad_id).all()):
        raise ValueError("targets must hold at least one non-PAD token, got only PAD")
    right = (logits.argmax(-1) == targets) | (targets == pad_id)  # (B, T)
    return float(right.all(dim=1).float().mean())


class TrainBatchAccuracy(StepsTo):
    """Steps to ``target`` teacher-forced sequence accuracy over the last ``window`` training batches. Chapter 10.

    ``reached`` is "steps to 99 %" as Chapter 10 prints it (checked at every step). It reads the
    logits of the batch just trained on, so it costs no extra forward pass.
    """

    def __init__(self, target: float = 0.99, window: int = 10):
        super().__init__(target, 1)
        check_positive_int("window", window)
        self.window = window
        self.accs: list[float] = []

    def after_backward(self, step: int, logits: Tensor, batch: Sequence[Tensor]) -> None:
        self.accs.append(sequence_accuracy(logits, batch[-1]))
        if len(self.accs) >= self.window:
            self.record(step, sum(self.accs[-self.window:]) / self.window)

    def after_step(self, step: int, model: nn.Module, history: Any) -> None:
        return None


class FirstLayerGradNorm(Callback):
    """The raw gradient norm of the first encoder block at each of the first ``steps`` steps. Chapter 10.

    It reads the model that :func:`~course_utils.training.train` hands it at the start; models
    without ``encoder_layers`` (the GRU baselines) record nothing.
    """

    def __init__(self, steps: int = 10):
        self.steps = check_positive_int("steps", steps)
        self.norms: list[float] = []
        self.model: nn.Module | None = None

    def on_train_begin(self, model: nn.Module) -> None:
        self.model, self.norms = check_module("model", model), []

    def after_backward(self, step: int, logits: Tensor, batch: Sequence[Tensor]) -> None:
        if self.model is not None and hasattr(self.model, "encoder_layers") and step <= self.steps:
            self.norms.append(layer_grad_norm(self.model))  # type: ignore[arg-type]


def measuring_callbacks(grad_steps: int = 10) -> tuple[TrainBatchAccuracy, FirstLayerGradNorm]:
    """The two measurements of a Table 3 row: steps to 99 % and the first layer's gradient norm. Chapter 10."""
    check_positive_int("grad_steps", grad_steps)
    return TrainBatchAccuracy(0.99, 10), FirstLayerGradNorm(grad_steps)


def measurements(history: Any, accuracy: TrainBatchAccuracy, grads: FirstLayerGradNorm) -> dict[str, Any]:
    """{"history", "steps_to_99", "grad_norm_layer1"} from a finished run's history and callbacks. Chapter 10."""
    return {
        "history": history,
        "steps_to_99": accuracy.reached,
        "grad_norm_layer1": float(f"{sum(grads.norms) / len(grads.norms):.4g}") if grads.norms else None,
    }


def train_measured(
    model: nn.Module,
    batch_fn: Callable[[int], Sequence[Tensor]],
    config: TrainConfig,
    grad_steps: int = 10,
) -> dict[str, Any]:
    """Train with Chapter 6's loop and measure as it goes. Chapter 10.

    Returns {"history", "steps_to_99", "grad_norm_layer1"}: steps_to_99 is
    :class:`TrainBatchAccuracy`'s ``reached`` (teacher-forced sequence accuracy of the last 10
    training batches >= 99 %, None if never); grad_norm_layer1 is the mean raw gradient norm
    of the first encoder block over the first ``grad_steps`` steps (None for models without
    ``encoder_layers``). The measurements are not counted as training time. A seeded run
    passes :func:`measuring_callbacks` to :func:`course_utils.runs.run` instead.
    """
    accuracy, grads = measuring_callbacks(grad_steps)
    history = train(model, batch_fn, config, progress=False, callbacks=[accuracy, grads])
    return measurements(history, accuracy, grads)


def table1_counts(T: int, d: int) -> dict[str, dict[str, int]]:
    """The paper's Table 1 for one layer over T positions of width d: multiply-adds of the dominant term,
    sequential operations, maximum path length between two positions. Chapter 10."""
    check_positive_int("T", T)
    check_positive_int("d", d)
    return {
        "self_attention": {"ops_per_layer": T * T * d, "sequential": 1, "path_length": 1},
        "recurrent": {"ops_per_layer": T * d * d, "sequential": T, "path_length": T},
    }


def seq2seq_counts(T: int, n_layers: int) -> dict[str, dict[str, int]]:
    """Sequential steps of one teacher-forced training forward pass over T source and T+1 target tokens,
    and the longest path between a source token and the last output (steps through layers or time).

    Transformer: every layer is one parallel step; a source token reaches any output through the
    encoder stack and one cross-attention (at most 2 N). GRU: the encoder runs T steps and the
    decoder T + 1; without attention token j reaches the decoder's first state through
    min(T - j, j + 1) encoder steps (forward or backward GRU), then T + 1 decoder steps; with
    attention, through its own annotation and one attention hop. Chapter 10."""
    check_positive_int("T", T)
    check_positive_int("n_layers", n_layers)
    through_state = max(min(T - j, j + 1) for j in range(T))
    return {
        "transformer": {"sequential": 2 * n_layers, "path_length": 2 * n_layers},
        "gru": {"sequential": T + (T + 1), "path_length": through_state + T + 1},
        "gru_bahdanau": {"sequential": T + (T + 1), "path_length": 2},
    }
