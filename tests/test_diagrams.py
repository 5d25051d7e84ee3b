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
