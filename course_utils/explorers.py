"""The chapters' interactive figures, one short call each: live controls in Jupyter, frames in the book.

Each function returns a :class:`course_utils.interactive.Explorer`: in a running kernel it shows
ipywidgets controls that recompute the figure for any value (any string, any temperature, any
d_model); in the HTML book it shows the frames pre-rendered for the controls' book values.

- :func:`pe_explorer` (Chapter 2): two columns of the sinusoidal table, for any d_model, pair
  and number of positions.
- :func:`sampling_explorer` (Chapter 6): the trained model's next-token probabilities along its
  greedy output and a handful of samples, for any input, temperature and top-k.
- :func:`cross_attention_explorer` (Chapter 7): the trained model's output for any input, every
  head's cross-attention of one decoder layer and each head's alignment score on that input.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from .analysis import alignment_score, reversal_targets
from .data import EOS_ID, FIRST_LETTER_ID, ITOS, PAD_ID, SOS_ID, VOCAB_SIZE, make_batch
from .decoding import greedy_decode, reverse_strings, sample_reversals, sampling_probs
from .interactive import Explorer, choice, explore, float_slider, int_slider, phone_layout, text
from .masks import padding_mask
from .model import Transformer
from .plots import BOOK_RC, attention_grid
from .positional import sinusoidal_encoding
from .sampling import check_sampling
from .validate import check_int, check_positive_int, check_str_list

MAX_INPUT = 24  # longest input the live text boxes accept (the pictures stay legible)


def _book_figure(draw: Callable[..., Figure]) -> Callable[..., Figure]:
    """Draw with the book's figure defaults, whatever the notebook has set (a cell may run alone)."""

    @functools.wraps(draw)
    def wrapped(*args: object, **kwargs: object) -> Figure:
        with plt.rc_context(BOOK_RC):
            return draw(*args, **kwargs)

    return wrapped


def _check_input(word: str) -> str:
    if not isinstance(word, str):
        raise TypeError(f"input must be a str, got {type(word).__name__}")
    if not word:
        raise ValueError("input is empty: type at least one lowercase letter")
    if len(word) > MAX_INPUT:
        raise ValueError(f"input must have at most {MAX_INPUT} letters, got {len(word)}")
    make_batch([word])  # raises ValueError naming the first character outside a-z
    return word


def _label(token_id: int) -> str:
    return {"<sos>": "^", "<eos>": "$", "<pad>": "_"}.get(ITOS[token_id], ITOS[token_id])


# --- Chapter 2 ------------------------------------------------------------------------------

def _check_seq2seq(model: object, allow_none: bool = True) -> None:
    if (model is None and allow_none) or hasattr(getattr(model, "config", None), "n_decoder_layers"):
        return
    raise TypeError(f"model must be an encoder-decoder course_utils.model.Transformer, got {type(model).__name__}")


@_book_figure
def draw_pe_columns(d_model: int, pair: int, positions: int = 100) -> Figure:
    """Columns 2i (sin) and 2i+1 (cos) of the sinusoidal table over ``positions`` positions. Chapter 2.

    ``pair`` is clamped to the last pair d_model/2 - 1 (the title says so).
    """
    check_positive_int("d_model", d_model), check_int("pair", pair, low=0), check_positive_int("positions", positions)
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be an even number >= 2, got {d_model}")
    i = min(pair, d_model // 2 - 1)
    table = sinusoidal_encoding(positions, d_model)  # (positions, d_model)
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    ax.plot(table[:, 2 * i], label=f"dim {2 * i} (sin)")
    ax.plot(table[:, 2 * i + 1], label=f"dim {2 * i + 1} (cos)")
    period = 2 * math.pi * 10000 ** (2 * i / d_model)
    note = f" (last pair for $d_{{model}}$ = {d_model})" if i < pair else ""
    ax.set(xlabel="position $p$", ylim=(-1.15, 1.7))
    ax.set_title(f"$d_{{model}}$ = {d_model}, pair $i$ = {i}{note}: one turn every {period:,.0f} positions",
                 fontsize=9)
    ax.legend(fontsize=9, loc="upper right", ncol=2)
    fig.tight_layout()
    return fig


def pe_explorer(uid: str = "ch2-pe-explorer") -> Explorer:
    """Sinusoidal PE columns; live: any even d_model 2-512, any pair, 10-1000 positions. Chapter 2."""
    return explore(
        uid,
        [int_slider("d_model", 2, 512, step=2, book=[16, 32, 64, 128]),
         int_slider("pair i", 0, 255, book=[0, 2, 4, 7]),
         int_slider("positions", 10, 1000, step=10, default=100)],
        draw_pe_columns,
        caption="Two columns of the sinusoidal table: dimension 2i (sin) and 2i+1 (cos)",
    )


# --- Chapter 6 ------------------------------------------------------------------------------

@torch.no_grad()
def next_token_table(model: Transformer, word: str, temperature: float = 1.0,
                     top_k: int | None = None) -> tuple[torch.Tensor, list[int]]:
    """Sampling probabilities (T_out, V) at every step of the greedy output for ``word``, and that output. Chapter 6.

    Row t is the distribution the sampler draws from after the greedy prefix up to step t.
    """
    temperature, top_k, _ = check_sampling(temperature, top_k)
    src, _, _ = make_batch([_check_input(word)])
    out = greedy_decode(model, src, max_len=len(word) + 2)[0].tolist()  # (T_out,) ids, EOS included
    if EOS_ID in out:
        out = out[: out.index(EOS_ID) + 1]
    ys = torch.tensor([[SOS_ID] + out[:-1]])  # (1, T_out): what the decoder reads at each step
    memory = model.encode(src, padding_mask(src, PAD_ID))  # (1, T_src, d_model)
    logits = model.decode(ys, memory, padding_mask(src, PAD_ID))[0]  # (T_out, V)
    return sampling_probs(logits, temperature, top_k), out


@_book_figure
def draw_sampling(model: Transformer, word: str, temperature: float, top_k: int, n_samples: int = 8) -> Figure:
    """Next-token probabilities along the greedy output, and ``n_samples`` sampled outputs. Chapter 6."""
    check_positive_int("n_samples", n_samples)
    check_positive_int("top_k", top_k)
    probs, out = next_token_table(model, word, temperature, top_k)
    samples = sample_reversals(model, word, n=n_samples, temperature=temperature, top_k=top_k,
                               generator=torch.Generator().manual_seed(0))
    columns = [EOS_ID, *range(FIRST_LETTER_ID, VOCAB_SIZE)]  # the tokens the model can emit
    if phone_layout():  # a phone's column: the samples under the probabilities
        fig, (ax, ax_text) = plt.subplots(2, 1, figsize=(4.0, 0.25 * len(out) + 1.9 + 0.2 * n_samples + 0.5),
                                          gridspec_kw={"height_ratios": [0.25 * len(out) + 1.2, 0.2 * n_samples + 0.3]})
    else:
        fig, (ax, ax_text) = plt.subplots(1, 2, figsize=(6.8, 0.25 * len(out) + 1.9),
                                          gridspec_kw={"width_ratios": [3.2, 1]})
    image = ax.imshow(probs[:, columns].numpy(), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(columns)), [_label(i) for i in columns], fontsize=9)
    ax.set_yticks(range(len(out)), [_label(i) for i in out], fontsize=9)
    ax.set(xlabel="next token", ylabel="greedy output, step by step")
    k = "all" if top_k >= VOCAB_SIZE else str(top_k)
    ax.set_title(f"'{word}': sampling probabilities, T = {temperature:g}, top-k = {k}", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    right = word[::-1]
    lines = [f"{s or '(empty)'}  {'ok' if s == right else 'wrong'}" for s in samples]
    ax_text.axis("off")
    ax_text.set_title(f"{n_samples} samples", fontsize=9)
    ax_text.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=9,
                 transform=ax_text.transAxes)
    fig.tight_layout()
    return fig


def sampling_explorer(model: Transformer | None = None, words: Sequence[str] = ("reversal", "attention"),
                      uid: str = "ch6-sampling-explorer") -> Explorer:
    """Sampling from the trained model; live: any input, temperature 0.1-3, top-k 1-V. Chapter 6."""
    words = check_str_list("words", words)
    _check_seq2seq(model)
    if model is None:
        from .runs.reversal import load_reversal_model

        model = load_reversal_model()
    return explore(
        uid,
        [text("input", book=[_check_input(w) for w in words]),
         float_slider("temperature", 0.1, 3.0, 0.1, book=[1.0, 2.0, 3.0]),
         int_slider("top-k", 1, VOCAB_SIZE, default=VOCAB_SIZE)],
        lambda word, temperature, top_k: draw_sampling(model, word, temperature, top_k),
        caption="Next-token probabilities along the greedy output, and sampled outputs",
    )


# --- Chapter 7 ------------------------------------------------------------------------------

@_book_figure
@torch.no_grad()
def draw_cross_attention(model: Transformer, word: str, layer: int) -> Figure:
    """Every head's cross-attention in decoder ``layer`` for ``word``, with its alignment score. Chapter 7.

    The decoder reads the true reversal (teacher forcing, as in the chapter), so row t is the step
    that should copy source position L-1-t; the title shows the model's own (greedy) output.
    """
    _check_seq2seq(model, allow_none=False)
    layer = check_int("layer", layer)
    src, tgt_in, tgt_out = make_batch([_check_input(word)])
    n_layers = model.config.n_decoder_layers
    if not 1 <= layer <= n_layers:
        raise ValueError(f"layer must be in 1..{n_layers}, got {layer}")
    _, weights = model(src, tgt_in, return_attention=True)
    cross = weights["cross"][layer - 1]  # (1, h, T_tgt, T_src)
    scores = alignment_score(cross, reversal_targets(torch.tensor([len(word)]), tgt_in.shape[1]))  # (h,)
    output = reverse_strings(model, [word])[0]
    verdict = "correct" if output == word[::-1] else "wrong"
    keys, queries = [_label(i) for i in src[0].tolist()], [_label(i) for i in tgt_out[0].tolist()]
    titles = [f"head {h + 1}: A = {a:.2f}" for h, a in enumerate(scores.tolist())]
    suptitle = f"'{word}' -> model output '{output}' ({verdict})"
    heads = cross.shape[1]
    if phone_layout() and heads > 2 and heads % 2 == 0:
        # a phone's column: two heads per row, each panel with its own title
        grid = cross[0].reshape(heads // 2, 2, *cross.shape[2:])  # (h/2, 2, T_tgt, T_src)
        fig = attention_grid(grid, keys=keys, queries=queries, cell_size=1.75,
                             suptitle=f"layer {layer}: '{word}'\n-> model output '{output}' ({verdict})")
        step = 2 if len(queries) > 12 else 1  # a long output: every other row label, legible
        for ax, title in zip(fig.axes, titles, strict=False):
            ax.set_title(title, fontsize=9)
            ax.set_yticks(range(0, len(queries), step), queries[::step], fontsize=8)
        if fig.get_suptitle():
            fig.suptitle(fig.get_suptitle(), fontsize=10)  # two lines that fit the phone's 4 inches
        fig.tight_layout()
        return fig
    fig = attention_grid(cross[0].unsqueeze(0), keys=keys, queries=queries, row_titles=[f"layer {layer}"],
                         col_titles=titles, suptitle=suptitle)
    if len(queries) > 12:  # a long output: every other row label, so that the letters do not overlap
        for ax in fig.axes:
            ax.set_yticks(range(0, len(queries), 2), queries[::2], fontsize=8)
    return fig


def cross_attention_explorer(model: Transformer | None = None,
                             words: Sequence[str] = ("reversal", "abc", "heatmap", "attention",
                                                     "lengthgeneralisation"),
                             uid: str = "ch7-explorer") -> Explorer:
    """The trained model's output and every head's cross-attention; live: any input, any layer. Chapter 7."""
    words = check_str_list("words", words)
    _check_seq2seq(model)
    if model is None:
        from .runs.reversal import load_reversal_model

        model = load_reversal_model()
    n_layers = model.config.n_decoder_layers
    return explore(
        uid,
        [text("input", book=[_check_input(w) for w in words]),
         choice("layer", list(range(1, n_layers + 1)))],
        lambda word, layer: draw_cross_attention(model, word, layer),
        caption="Cross-attention of every head of one decoder layer, with its alignment score A on this input",
    )
