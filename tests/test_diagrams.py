"""Tests for the landing page's architecture drawing (course_utils.diagrams)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from course_utils.diagrams import draw_transformer  # noqa: E402


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60, metadata={"Software": None})
    return buffer.getvalue()


def test_returns_a_figure_with_every_labelled_box():
    fig = draw_transformer()
    texts = _texts(fig)
    for label in ("Input Embedding", "Output Embedding", "Linear", "Softmax", "Output Probabilities"):
        assert label in texts
    # encoder: 1 self-attention; decoder: 1 masked self-attention + 1 cross-attention
    assert texts.count("Multi-Head Attention") == 2
    assert texts.count("Masked Multi-Head Attention") == 1
    assert texts.count("Feed Forward") == 2
    assert texts.count("Add & Norm") == 5  # 2 in the encoder layer, 3 in the decoder layer
    assert sum("Positional" in t and "Encoding" in t for t in texts) == 2
    assert {"Encoder", "Decoder"} <= set(texts)
    plt.close(fig)


def test_uses_the_papers_names():
    fig = draw_transformer()
    joined = " ".join(_texts(fig))
    for name in ("d_{model}", "d_{ff}", "$h$", r"$N\times$", "h=8", "N=6", "d_{model}=512"):
        assert name in joined, name
    for q_k_v in ("Q", "K", "V"):
        assert q_k_v in _texts(fig)
    plt.close(fig)


def test_boxes_do_not_overlap_and_labels_fit():
    fig = draw_transformer()
    ax = fig.axes[0]
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch) and p.get_zorder() == 3]
    assert len(boxes) == 2 + 3 + 5 + 2 + 2  # embeddings, attentions, add & norms, FFNs, linear + softmax
    extents = [(b.get_x(), b.get_y(), b.get_x() + b.get_width(), b.get_y() + b.get_height()) for b in boxes]
    for i, a in enumerate(extents):
        for b in extents[i + 1:]:
            overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, (a, b)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    to_data = ax.transData.inverted()
    for text in ax.texts:
        if text.get_text() != "Masked Multi-Head Attention":  # the widest box label
            continue
        (x0, _), (x1, _) = to_data.transform(text.get_window_extent(renderer).get_points())
        box = next(e for e in extents if e[0] <= text.get_position()[0] <= e[2]
                   and e[1] <= text.get_position()[1] <= e[3])
        assert box[0] < x0 and x1 < box[2], "label wider than its box"
    plt.close(fig)


def test_renders_to_png_deterministically():
    first, second = draw_transformer(), draw_transformer()
    png = _png(first)
    assert png.startswith(b"\x89PNG") and len(png) > 5_000
    assert png == _png(second)
    plt.close("all")


def test_draws_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    assert draw_transformer(ax=right) is fig
    assert not left.texts and right.texts
    plt.close(fig)


def test_rejects_a_wrong_ax():
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None, got str"):
        draw_transformer(ax="left")


# ----- the chapter pictures ------------------------------------------------------------------------

from course_utils.diagrams import (  # noqa: E402
    draw_kv_cache,
    draw_multihead_split,
    draw_post_pre_ln,
    draw_qkv_projections,
)


def test_qkv_projections_show_three_projections_of_the_same_tokens():
    fig = draw_qkv_projections(T=3, d_model=4)
    texts = " ".join(_texts(fig))
    for name in ("W_Q", "W_K", "W_V", "Q = X", "K = X", "V = X", "x_{3}"):
        assert name in texts, name
    cells = [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]
    assert len(cells) == 4 * 3 * 4  # X, Q, K and V, each T x d_model
    plt.close(fig)


def test_multihead_split_colours_one_slice_per_head():
    fig = draw_multihead_split(T=2, d_model=6, n_heads=3)
    texts = _texts(fig)
    assert {"head 1", "head 2", "head 3", "split", "concat", "$W_O$"} <= set(texts)
    colours = {tuple(p.get_facecolor()) for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)}
    assert len(colours) == 3 + 1  # one per head, plus the grey output
    plt.close(fig)
    with pytest.raises(ValueError, match="n_heads must divide d_model"):
        draw_multihead_split(d_model=8, n_heads=3)


def test_post_pre_ln_draws_both_formulas():
    fig = draw_post_pre_ln()
    texts = " ".join(_texts(fig))
    assert r"\mathrm{LN}(x + \mathrm{Sublayer}(x))" in texts
    assert r"x + \mathrm{Sublayer}(\mathrm{LN}(x))" in texts
    assert texts.count("LayerNorm") == 2 and texts.count("Sublayer") >= 2
    plt.close(fig)


@pytest.mark.parametrize("steps", [1, 4])
def test_kv_cache_grows_one_key_and_value_per_step(steps):
    fig = draw_kv_cache(steps)
    cells = [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]
    assert len(cells) == 2 * steps * (steps + 1) // 2  # K and V: 1 + 2 + ... + steps cells
    assert sum(t.startswith("step ") for t in _texts(fig)) == steps
    plt.close(fig)
    with pytest.raises(ValueError, match="steps must be at most 8"):
        draw_kv_cache(9)


@pytest.mark.parametrize("draw", [draw_qkv_projections, draw_multihead_split, draw_post_pre_ln, draw_kv_cache])
def test_chapter_pictures_render_deterministically_and_fit_the_column(draw):
    first, second = draw(), draw()
    assert first.get_size_inches()[0] <= 6.8
    assert _png(first) == _png(second)
    plt.close("all")
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None"):
        draw(ax="left")
