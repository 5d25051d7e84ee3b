"""The architecture drawing of the landing page: the whole encoder-decoder Transformer.

Drawn with matplotlib from boxes and arrows (no image file), so it is deterministic, readable at
page width and uses the paper's names: ``d_model``, ``h``, ``N``, ``d_ff``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

# Colours of the kinds of boxes, one per kind (close to the paper's Figure 1 palette).
COLOURS = {
    "attention": "#fcd9b0",  # multi-head attention (all three kinds)
    "norm": "#f4f1a7",  # add & norm
    "ffn": "#c6e3f7",  # position-wise feed-forward
    "embedding": "#f9c9c9",  # token embeddings
    "output": "#d5ecd0",  # linear and softmax
    "stack": "#eeeeee",  # the frame around a repeated layer
}

BOX_W = 3.7  # width of every box, in data units (the axes span about 11 units horizontally)
BOX_H = 0.62  # height of every box
ENC_X, DEC_X = 2.55, 7.75  # centre of the encoder and decoder columns


def _box(ax: Axes, x: float, y: float, label: str, kind: str, note: str | None = None) -> float:
    """A rounded box centred at (x, y) with a label (and an optional small note); return its top."""
    ax.add_patch(FancyBboxPatch(
        (x - BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H,
        boxstyle="round,pad=0.02,rounding_size=0.12", facecolor=COLOURS[kind], edgecolor="#333333",
        linewidth=1.0, zorder=3,
    ))
    if note is None:
        ax.text(x, y, label, ha="center", va="center", fontsize=8.5, zorder=4)
    else:
        ax.text(x, y + 0.11, label, ha="center", va="center", fontsize=8.5, zorder=4)
        ax.text(x, y - 0.17, note, ha="center", va="center", fontsize=7.5, color="#444444", zorder=4)
    return y + BOX_H / 2


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], style: str = "-|>") -> None:
    """A straight arrow between two points, drawn under the boxes."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=9, linewidth=1.0,
                                 color="#333333", shrinkA=0, shrinkB=0, zorder=2))


def _line(ax: Axes, xs: list[float], ys: list[float]) -> None:
    """A polyline (the parts of a path that carry no arrow head)."""
    ax.plot(xs, ys, color="#333333", linewidth=1.0, zorder=2, solid_capstyle="butt")


SPLIT = 0.25  # height above a sublayer's input where the path splits into Q, K, V
BOX_OFFSET = 0.95  # height of a sublayer box's centre above the sublayer's input
NORM_OFFSET = 1.05  # height of the Add & Norm box's centre above the sublayer box's centre
SUBLAYER_H = BOX_OFFSET + NORM_OFFSET + BOX_H / 2  # from a sublayer's input to its output


def _sublayer(ax: Axes, x: float, y: float, label: str, kind: str, note: str | None,
              inputs: str = "qkv") -> float:
    """One sublayer with its residual connection: input at y, the box, Add & Norm above.

    ``inputs`` is "qkv" (self-attention: the input feeds Q, K and V), "q" (cross-attention: the
    input feeds only Q, on the right; K and V come from the encoder) or "x" (feed-forward).
    Returns the y of the output (top of the Add & Norm box).
    """
    y_box = y + BOX_OFFSET
    y_norm = y_box + NORM_OFFSET
    bottom = y_box - BOX_H / 2
    if inputs == "x":
        _arrow(ax, (x, y), (x, bottom))
    else:
        split = y + SPLIT
        _line(ax, [x, x], [y, split])
        targets = (-0.8, 0.0, 0.8) if inputs == "qkv" else (0.8,)
        _line(ax, [x + min(0.0, *targets), x + max(targets)], [split, split])
        for dx, name in zip(targets, "QKV" if inputs == "qkv" else "Q", strict=True):
            _arrow(ax, (x + dx, split), (x + dx, bottom))
            ax.text(x + dx + 0.07, bottom - 0.06, name, ha="left", va="top", fontsize=7.5, style="italic")
    _box(ax, x, y_box, label, kind, note)
    _arrow(ax, (x, y_box + BOX_H / 2), (x, y_norm - BOX_H / 2))
    top = _box(ax, x, y_norm, "Add & Norm", "norm")
    # residual: from just above the input, around the left side, into the Add & Norm box
    side = x - BOX_W / 2 - 0.25
    _line(ax, [x, side, side], [y + 0.1, y + 0.1, y_norm])
    _arrow(ax, (side, y_norm), (x - BOX_W / 2, y_norm))
    return top


def _positional(ax: Axes, x: float, y: float, left: bool) -> None:
    """The sum symbol with the sinusoid icon and the 'Positional Encoding' label beside it."""
    ax.add_patch(Circle((x, y), 0.17, facecolor="white", edgecolor="#333333", linewidth=1.0, zorder=3))
    ax.text(x, y - 0.01, "+", ha="center", va="center", fontsize=11, zorder=4)
    # a small sine-wave icon for the encoding, on the outer side of the column
    icon_x = x - 0.75 if left else x + 0.75
    ax.add_patch(Circle((icon_x, y), 0.24, facecolor="white", edgecolor="#333333", linewidth=1.0, zorder=3))
    t = np.linspace(-0.17, 0.17, 40)
    ax.plot(icon_x + t, y + 0.1 * np.sin(t * 2 * np.pi / 0.17), color="#333333", linewidth=0.9, zorder=4)
    _line(ax, [icon_x + (0.24 if left else -0.24), x + (-0.17 if left else 0.17)], [y, y])
    if left:
        ax.text(icon_x - 0.32, y, "Positional\nEncoding", ha="right", va="center", fontsize=8.5)
    else:
        ax.text(icon_x + 0.32, y, "Positional\nEncoding", ha="left", va="center", fontsize=8.5)


def _stack_frame(ax: Axes, x: float, y0: float, y1: float, name: str, left: bool) -> None:
    """The grey frame around one repeated layer, with its name and 'N x' outside it."""
    w = BOX_W + 0.95
    x0 = x - w / 2 - 0.12
    ax.add_patch(FancyBboxPatch(
        (x0, y0), w, y1 - y0, boxstyle="round,pad=0.0,rounding_size=0.25",
        facecolor=COLOURS["stack"], edgecolor="#777777", linewidth=1.0, zorder=1,
    ))
    label_x, ha = (x0 - 0.12, "right") if left else (x0 + w + 0.12, "left")
    ax.text(label_x, (y0 + y1) / 2, r"$N\times$", ha=ha, va="center", fontsize=12)
    ax.text(label_x, y1 - 0.1, name, ha=ha, va="top", fontsize=10.5, weight="bold")


def draw_transformer(ax: Axes | None = None) -> Figure:
    """Draw the encoder-decoder Transformer of Vaswani et al. (2017); return the Figure. Landing page.

    Encoder (left): embeddings + positional encoding, then N x [multi-head self-attention,
    add & norm, feed forward, add & norm]. Decoder (right): masked multi-head self-attention,
    multi-head cross-attention over the encoder output, feed forward, each followed by add & norm;
    then linear + softmax. Pass ``ax`` to draw into an existing Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7.6, 8.6))
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    fig = ax.figure
    ax.set_xlim(-1.0, 11.1)
    ax.set_ylim(-0.3, 13.2)
    ax.axis("off")

    # ---- inputs, embeddings, positional encoding (both columns) --------------------------
    y_in, y_emb, y_pe, y_stack = 0.0, 0.85, 1.85, 2.45
    ax.text(ENC_X, y_in, "Inputs (source tokens)", ha="center", va="center", fontsize=9)
    ax.text(DEC_X, y_in, "Outputs (shifted right)", ha="center", va="center", fontsize=9)
    for x, label in ((ENC_X, "Input Embedding"), (DEC_X, "Output Embedding")):
        _arrow(ax, (x, y_in + 0.2), (x, y_emb - BOX_H / 2))
        _box(ax, x, y_emb, label, "embedding", r"$\times\sqrt{d_{model}}$")
        _arrow(ax, (x, y_emb + BOX_H / 2), (x, y_pe - 0.17))
    _positional(ax, ENC_X, y_pe, left=True)
    _positional(ax, DEC_X, y_pe, left=False)
    y_first = y_stack + 0.3  # input of the first sublayer, inside the frame

    # ---- encoder: N x [self-attention, add & norm, feed forward, add & norm] --------------
    enc_frame_top = y_first + 2 * SUBLAYER_H + 0.25
    _stack_frame(ax, ENC_X, y_stack, enc_frame_top, "Encoder", left=True)
    _line(ax, [ENC_X, ENC_X], [y_pe + 0.17, y_first])
    y = _sublayer(ax, ENC_X, y_first, "Multi-Head Attention", "attention", r"self-attention, $h$ heads")
    enc_out = _sublayer(ax, ENC_X, y, "Feed Forward", "ffn", r"$d_{model}\to d_{ff}\to d_{model}$", inputs="x")

    # ---- decoder: N x [masked self-attn, cross-attn, feed forward], each + add & norm ----
    dec_frame_top = y_first + 3 * SUBLAYER_H + 0.25
    _stack_frame(ax, DEC_X, y_stack, dec_frame_top, "Decoder", left=False)
    _line(ax, [DEC_X, DEC_X], [y_pe + 0.17, y_first])
    y_cross = _sublayer(ax, DEC_X, y_first, "Masked Multi-Head Attention", "attention",
                        r"causal self-attention, $h$ heads")
    y = _sublayer(ax, DEC_X, y_cross, "Multi-Head Attention", "attention", r"cross-attention, $h$ heads",
                  inputs="q")
    dec_out = _sublayer(ax, DEC_X, y, "Feed Forward", "ffn", r"$d_{model}\to d_{ff}\to d_{model}$", inputs="x")

    # ---- encoder output -> K and V of every decoder cross-attention ----------------------
    y_top = enc_frame_top + 0.45
    y_kv = y_cross + SPLIT + 0.17
    gap_x = (ENC_X + BOX_W / 2 + 0.35 + DEC_X - BOX_W / 2 - 0.6) / 2
    _line(ax, [ENC_X, ENC_X, gap_x, gap_x, DEC_X - 0.2], [enc_out, y_top, y_top, y_kv, y_kv])
    kv_bottom = y_cross + BOX_OFFSET - BOX_H / 2
    for dx, name in ((-0.8, "K"), (-0.2, "V")):
        _arrow(ax, (DEC_X + dx, y_kv), (DEC_X + dx, kv_bottom))
        ax.text(DEC_X + dx + 0.07, kv_bottom - 0.06, name, ha="left", va="top", fontsize=7.5, style="italic")
    ax.text((ENC_X + gap_x) / 2, y_top + 0.08, "encoder output\n" + r"$(B, T_{src}, d_{model})$",
            ha="center", va="bottom", fontsize=7.5, color="#444444")

    # ---- output head -----------------------------------------------------------------------
    y_lin = dec_frame_top + 0.7
    y_soft = y_lin + 0.95
    _arrow(ax, (DEC_X, dec_out), (DEC_X, y_lin - BOX_H / 2))
    _box(ax, DEC_X, y_lin, "Linear", "output", r"$d_{model}\to V$ (vocabulary size)")
    _arrow(ax, (DEC_X, y_lin + BOX_H / 2), (DEC_X, y_soft - BOX_H / 2))
    _box(ax, DEC_X, y_soft, "Softmax", "output")
    _arrow(ax, (DEC_X, y_soft + BOX_H / 2), (DEC_X, y_soft + 0.6))
    ax.text(DEC_X, y_soft + 0.65, "Output Probabilities", ha="center", va="bottom", fontsize=9)

    # ---- the base model's sizes, in the paper's names ---------------------------------------
    ax.text(ENC_X, y_soft, "Base model of the paper:\n"
            r"$d_{model}=512,\ h=8,\ N=6$" "\n"
            r"$d_{ff}=2048,\ d_k=d_v=d_{model}/h=64$",
            ha="center", va="center", fontsize=8.5,
            bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "#999999"})
    return fig
