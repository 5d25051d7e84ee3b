"""The architecture drawing of the landing page (the whole encoder-decoder Transformer) and the
smaller pictures of the chapters: Q/K/V projections, the multi-head split, post-LN vs pre-LN,
the KV cache.

Drawn with matplotlib from boxes and arrows (no image file), so it is deterministic, readable at
page width and uses the paper's names: ``d_model``, ``h``, ``N``, ``d_ff``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from .interactive import attach_phone_version
from .validate import check_positive_int

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
    own = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(7.6, 8.6))
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    fig = _figure_of(ax)
    if own:
        attach_phone_version(fig, draw_transformer_phone)  # the book's phone version (plots.retina_png)
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


#: The two halves of :func:`draw_transformer`'s drawing (x range in data units) on a phone.
PHONE_HALVES = (("encoder", (-1.7, 5.05)), ("decoder", (4.75, 11.5)))
PHONE_MIN_PT = 8.5  # the smallest text of the phone version, in points


def draw_transformer_phone() -> Figure:
    """:func:`draw_transformer` for a phone's column: the encoder above the decoder, same scale.

    The whole drawing shown 342 CSS px wide would make its smallest text about 5.5 px; each half
    alone keeps the drawing's scale and, with its smallest text at 8.5 pt, stays above 9 px shown.
    Landing page.
    """
    scale = 7.6 / 12.1  # inches per data unit of the wide drawing
    widths = [hi - lo for _, (lo, hi) in PHONE_HALVES]
    # the encoder half ends above its output line, with the base model's sizes just above it
    enc_top = 2.75 + 2 * SUBLAYER_H + 0.25 + 0.45
    ranges = [(-0.3, enc_top + 2.2), (-0.3, 13.2)]
    heights = [hi - lo for lo, hi in ranges]
    fig, axes = plt.subplots(2, 1, figsize=(max(widths) * scale, sum(heights) * 8.6 / 13.5),
                             gridspec_kw={"height_ratios": heights})
    for ax, (_, (lo, hi)), (bottom, top) in zip(axes, PHONE_HALVES, ranges, strict=True):
        draw_transformer(ax=ax)
        ax.set_xlim(lo, hi)
        ax.set_ylim(bottom, top)
        for text in ax.texts:
            if text.get_text().startswith("Base model"):
                text.set_y(enc_top + 1.35)
        for artist in ax.get_children():
            artist.set_clip_on(True)
        for text in ax.texts:
            text.set_fontsize(max(text.get_fontsize(), PHONE_MIN_PT))
    fig.subplots_adjust(left=0, right=1, top=1, bottom=0, hspace=0.02)
    return fig


# ---- the smaller pictures of Chapters 1, 3 and 6 ------------------------------------------------

HEAD_COLOURS = ("#8fbce6", "#f5a97f", "#a6d8a0", "#d7b5e8", "#f2d06b", "#9fd9d9", "#e8a0b4", "#c8c8c8")
ROLE_COLOURS = {"Q": "#f5a97f", "K": "#8fbce6", "V": "#a6d8a0", "x": "#dddddd"}


def _figure_of(ax: Axes) -> Figure:
    """The figure ``ax`` draws in (the whole figure when ``ax`` sits in a SubFigure)."""
    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


def _new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    ax.axis("off")
    return ax


def _grid(
    ax: Axes, x: float, y: float, rows: int, cols: int, colour: str | Sequence[str], cell: float = 0.3,
    label: str | None = None, row_labels: Sequence[str] | None = None, highlight_rows: Sequence[int] = (),
) -> None:
    """A rows x cols matrix of cells with its lower-left corner at (x, y); ``colour`` per column or one for all."""
    colours = [colour] * cols if isinstance(colour, str) else list(colour)
    for r in range(rows):
        for c in range(cols):
            edge = "#d62728" if r in highlight_rows else "#555555"
            ax.add_patch(FancyBboxPatch((x + c * cell, y + (rows - 1 - r) * cell), cell, cell,
                                        boxstyle="square,pad=0", facecolor=colours[c], edgecolor=edge,
                                        linewidth=1.6 if r in highlight_rows else 0.6, zorder=3))
    if label is not None:
        ax.text(x + cols * cell / 2, y + rows * cell + 0.12, label, ha="center", va="bottom", fontsize=9.5)
    for r, name in enumerate(row_labels or ()):
        ax.text(x - 0.08, y + (rows - 1 - r) * cell + cell / 2, name, ha="right", va="center", fontsize=9)


def draw_qkv_projections(T: int = 4, d_model: int = 6, ax: Axes | None = None) -> Figure:
    """The same T tokens, projected three ways: Q = X W_Q, K = X W_K, V = X W_V. Chapter 1."""
    check_positive_int("T", T)
    check_positive_int("d_model", d_model)
    if T > 6 or d_model > 8:
        raise ValueError(f"T must be at most 6 and d_model at most 8 to stay readable, got T={T}, d_model={d_model}")
    ax = _new_axes(ax, (6.4, 3.4))
    cell = 0.22
    width, height = d_model * cell, T * cell
    gap = 0.35
    total_h = 3 * height + 2 * gap
    x0, y0 = 0.7, 0.55 + (total_h - height) / 2
    tokens = [f"$x_{{{i + 1}}}$" for i in range(T)]
    _grid(ax, x0, y0, T, d_model, ROLE_COLOURS["x"], cell, r"tokens $X$: $(T, d_{model})$", tokens)
    x_out = x0 + width + 2.6
    for i, role in enumerate("QKV"):
        y = 0.55 + (2 - i) * (height + gap)
        _grid(ax, x_out, y, T, d_model, ROLE_COLOURS[role], cell, None, tokens)
        ax.text(x_out + width + 0.15, y + height / 2, rf"${role} = X\,W_{role}$", ha="left", va="center",
                fontsize=10)
        _arrow(ax, (x0 + width + 0.12, y0 + height / 2), (x_out - 0.35, y + height / 2))
        ax.text((x0 + width + x_out) / 2 - 0.1, (y0 + y + height) / 2 + 0.02, f"$W_{role}$", ha="center",
                va="bottom", fontsize=9.5)
    ax.text((x0 + x_out + width) / 2 + 0.5, 0.12,
            "row $i$ of $Q$, $K$ and $V$ comes from the same token $x_i$,\nthrough three different matrices",
            ha="center", va="center", fontsize=9, color="#444444")
    ax.set_xlim(0, x_out + width + 1.6)
    ax.set_ylim(-0.05, 0.55 + total_h + 0.45)
    ax.set_aspect("equal")
    return _figure_of(ax)


def draw_multihead_split(T: int = 3, d_model: int = 8, n_heads: int = 2, ax: Axes | None = None) -> Figure:
    """Multi-head attention's reshapes: split d_model into h slices of d_k, attend, concatenate, W_O. Chapter 1."""
    check_positive_int("T", T)
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads != 0 or n_heads > len(HEAD_COLOURS):
        raise ValueError(f"n_heads must divide d_model and be at most {len(HEAD_COLOURS)}, "
                         f"got d_model={d_model} and n_heads={n_heads}")
    d_k = d_model // n_heads
    ax = _new_axes(ax, (6.8, 3.0))
    cell = 0.28
    colours = [HEAD_COLOURS[c // d_k] for c in range(d_model)]
    y = 0.9
    width = d_model * cell
    _grid(ax, 0.2, y, T, d_model, colours, cell, r"$Q$ $(T, d_{model})$")
    gap = 0.5
    x_heads = 0.2 + width + 1.2
    head_w = d_k * cell
    heads_right = x_heads + n_heads * head_w + (n_heads - 1) * gap
    x_out = heads_right + 1.3
    for h in range(n_heads):
        x = x_heads + h * (head_w + gap)
        _grid(ax, x, y, T, d_k, HEAD_COLOURS[h], cell, f"head {h + 1}")
        ax.text(x + head_w / 2, y - 0.12, "attend", ha="center", va="top", fontsize=8.5, color="#444444")
    _arrow(ax, (0.2 + width + 0.15, y + T * cell / 2), (x_heads - 0.15, y + T * cell / 2))
    ax.text(0.2 + width + 0.65, y + T * cell / 2 + 0.1, "split", ha="center", va="bottom", fontsize=9)
    _arrow(ax, (heads_right + 0.15, y + T * cell / 2), (x_out - 0.15, y + T * cell / 2))
    ax.text(heads_right + 0.65, y + T * cell / 2 + 0.1, "concat", ha="center", va="bottom", fontsize=9)
    _grid(ax, x_out, y, T, d_model, colours, cell, r"concat $(T, h\,d_k)$")
    x_final = x_out + width + 1.1
    _arrow(ax, (x_out + width + 0.15, y + T * cell / 2), (x_final - 0.15, y + T * cell / 2))
    ax.text(x_out + width + 0.55, y + T * cell / 2 + 0.1, "$W_O$", ha="center", va="bottom", fontsize=9)
    _grid(ax, x_final, y, T, d_model, "#cccccc", cell, r"output $(T, d_{model})$")
    ax.text((x_final + width) / 2, 0.25,
            f"$d_{{model}}={d_model}$, $h={n_heads}$ heads of $d_k={d_k}$ columns each;\n"
            "every head sees all T tokens but only its own slice of the features",
            ha="center", va="center", fontsize=9, color="#444444")
    ax.set_xlim(0, x_final + width + 0.2)
    ax.set_ylim(0, y + T * cell + 0.6)
    ax.set_aspect("equal")
    return _figure_of(ax)


def _flow_box(ax: Axes, x: float, y: float, label: str, kind: str, w: float = 1.9, h: float = 0.5) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.1",
                                facecolor=COLOURS[kind], edgecolor="#333333", linewidth=1.0, zorder=3))
    ax.text(x, y, label, ha="center", va="center", fontsize=9.5, zorder=4)


def _plus(ax: Axes, x: float, y: float) -> None:
    ax.add_patch(Circle((x, y), 0.17, facecolor="white", edgecolor="#333333", linewidth=1.0, zorder=3))
    ax.text(x, y - 0.01, "+", ha="center", va="center", fontsize=11, zorder=4)


def draw_post_pre_ln(ax: Axes | None = None) -> Figure:
    """Post-LN (the paper) and pre-LN side by side: where LayerNorm sits on the residual path. Chapter 3."""
    ax = _new_axes(ax, (6.4, 3.6))
    for x, title, post in ((1.6, "post-LN (the paper)", True), (5.0, "pre-LN", False)):
        ax.text(x, 5.05, title, ha="center", va="center", fontsize=10.5, weight="bold")
        ax.text(x, 0.0, r"$x$", ha="center", va="center", fontsize=10)
        side = x - 1.35
        if post:
            _arrow(ax, (x, 0.2), (x, 1.15))
            _flow_box(ax, x, 1.4, "Sublayer", "attention")
            _arrow(ax, (x, 1.65), (x, 2.33))
            _plus(ax, x, 2.5)
            _arrow(ax, (x, 2.67), (x, 3.15))
            _flow_box(ax, x, 3.4, "LayerNorm", "norm")
            _arrow(ax, (x, 3.65), (x, 4.2))
            _line(ax, [x, side, side], [0.45, 0.45, 2.5])
            _arrow(ax, (side, 2.5), (x - 0.17, 2.5))
            ax.text(x, 4.35, r"$\mathrm{LN}(x + \mathrm{Sublayer}(x))$", ha="center", va="bottom", fontsize=9.5)
            ax.text(side - 0.08, 1.4, "residual", ha="right", va="center", fontsize=8.5, rotation=90,
                    color="#444444")
        else:
            _arrow(ax, (x, 0.2), (x, 1.15))
            _flow_box(ax, x, 1.4, "LayerNorm", "norm")
            _arrow(ax, (x, 1.65), (x, 2.15))
            _flow_box(ax, x, 2.4, "Sublayer", "attention")
            _arrow(ax, (x, 2.65), (x, 3.23))
            _plus(ax, x, 3.4)
            _arrow(ax, (x, 3.57), (x, 4.2))
            _line(ax, [x, side, side], [0.45, 0.45, 3.4])
            _arrow(ax, (side, 3.4), (x - 0.17, 3.4))
            ax.text(x, 4.35, r"$x + \mathrm{Sublayer}(\mathrm{LN}(x))$", ha="center", va="bottom", fontsize=9.5)
            ax.text(side - 0.08, 1.9, "residual: never normalised", ha="right", va="center", fontsize=8.5,
                    rotation=90, color="#444444")
    ax.set_xlim(-0.2, 6.6)
    ax.set_ylim(-0.3, 5.3)
    ax.set_aspect("equal")
    return _figure_of(ax)


def draw_kv_cache(steps: int = 4, ax: Axes | None = None) -> Figure:
    """The decoder's key/value cache after each generation step: one new column per step, old ones reused. Chapter 6."""
    check_positive_int("steps", steps)
    if steps > 8:
        raise ValueError(f"steps must be at most 8 to stay readable, got {steps}")
    ax = _new_axes(ax, (6.8, 2.8))
    cell = 0.32
    panel_w = steps * cell + 0.7
    for t in range(1, steps + 1):
        x = 0.6 + (t - 1) * panel_w
        for role, y in (("K", 1.2), ("V", 0.55)):
            for j in range(t):
                new = j == t - 1
                ax.add_patch(FancyBboxPatch((x + j * cell, y), cell, cell * 1.4, boxstyle="square,pad=0",
                                            facecolor=ROLE_COLOURS[role] if new else "#eeeeee",
                                            edgecolor="#d62728" if new else "#777777",
                                            linewidth=1.6 if new else 0.6, zorder=3))
            if t == 1:
                ax.text(x - 0.12, y + cell * 0.7, role, ha="right", va="center", fontsize=9.5, style="italic")
        ax.text(x + t * cell / 2, 2.0, f"step {t}", ha="center", va="bottom", fontsize=9.5)
        ax.text(x + (t - 0.5) * cell, 0.3, f"$q_{{{t}}}$", ha="center", va="top", fontsize=9.5)
    fig = _figure_of(ax)
    own = len(fig.axes) == 1 and fig.get_size_inches()[0] == 6.8
    note = ax.text(0.6 + steps * panel_w / 2, -0.35,
                   "each step computes the key, value and query of the newest token only (outlined);\n"
                   "the grey keys and values are read from the cache, not recomputed",
                   ha="center", va="center", fontsize=9, color="#444444")
    ax.set_xlim(0, 0.6 + steps * panel_w)
    ax.set_ylim(-0.75, 2.45)
    ax.set_aspect("equal")
    if own:
        attach_phone_version(fig, lambda: _kv_cache_phone(steps))
    note.set_gid("cu-kv-note")
    return _figure_of(ax)


def _kv_cache_phone(steps: int) -> Figure:
    """:func:`draw_kv_cache` for a phone's column: a narrower figure, the note on four lines."""
    fig = draw_kv_cache(steps)
    fig.set_size_inches(4.2, 2.6)
    ax = fig.axes[0]
    ax.set_ylim(-1.75, 2.45)
    for text in ax.texts:
        if text.get_gid() == "cu-kv-note":
            text.set_text("each step computes the key, value and query\nof the newest token only (outlined); the grey\n"
                          "keys and values are read from the cache,\nnot recomputed")
            text.set_y(-1.0)
    return fig
