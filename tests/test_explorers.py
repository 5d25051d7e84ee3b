"""Tests for course_utils.explorers: the chapters' live explorers draw what the model computes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils import explorers  # noqa: E402
from course_utils.analysis import alignment_score, reversal_targets  # noqa: E402
from course_utils.data import EOS_ID, make_batch  # noqa: E402
from course_utils.decoding import reverse_strings  # noqa: E402
from course_utils.runs.reversal import load_reversal_model  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return load_reversal_model()


def test_pe_columns_clamp_the_pair_and_check_d_model() -> None:
    fig = explorers.draw_pe_columns(8, 7, positions=20)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["dim 6 (sin)", "dim 7 (cos)"]  # pair 3 is the last
    assert "last pair" in ax.get_title() and len(ax.get_lines()[0].get_xdata()) == 20
    plt.close(fig)
    with pytest.raises(ValueError, match="d_model must be an even number >= 2, got 7"):
        explorers.draw_pe_columns(7, 0)


def test_next_token_table_follows_the_greedy_output(model) -> None:
    word = "attention"
    probs, out = explorers.next_token_table(model, word, temperature=1.0)
    assert out[-1] == EOS_ID and len(out) == len(word) + 1
    torch.testing.assert_close(probs.sum(-1), torch.ones(len(out)))
    assert probs.argmax(-1).tolist() == out  # greedy picks the most likely token at every step
    sharp, _ = explorers.next_token_table(model, word, temperature=0.2, top_k=2)
    assert ((sharp > 0).sum(-1) <= 2).all()
    assert (sharp.max(-1).values >= probs.max(-1).values - 1e-6).all()  # lower temperature: sharper


def test_cross_attention_figure_shows_output_and_scores(model) -> None:
    word = "heatmap"
    fig = explorers.draw_cross_attention(model, word, layer=2)
    src, tgt_in, _ = make_batch([word])
    with torch.no_grad():
        _, weights = model(src, tgt_in, return_attention=True)
    scores = alignment_score(weights["cross"][1], reversal_targets(torch.tensor([len(word)]), tgt_in.shape[1]))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [f"head {h + 1}: A = {a:.2f}" for h, a in enumerate(scores.tolist())]
    assert f"model output '{reverse_strings(model, [word])[0]}'" in fig._suptitle.get_text()
    plt.close(fig)
    with pytest.raises(ValueError, match="layer must be in 1..2, got 3"):
        explorers.draw_cross_attention(model, word, layer=3)


@pytest.mark.parametrize(
    ("word", "message"),
    [("", "input is empty"), ("Abc", "not in the vocabulary"), ("a" * 25, "at most 24 letters, got 25")],
)
def test_bad_inputs_are_named(model, word: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        explorers.draw_sampling(model, word, 1.0, 29)


def test_live_cross_attention_explorer_takes_any_string(model) -> None:
    ex = explorers.cross_attention_explorer(model, words=["abc"])
    assert len(ex.frames) == 2 and 'id="cu-explorer-ch7-explorer"' in ex._repr_html_()
    ex.widget()
    word, layer = ex._inputs
    first = ex._image.value
    word.value = "zyxwv"
    assert ex._image.value != first and ex._status.value == ""
    word.value = "Hello"
    assert "not in the vocabulary" in ex._status.value
