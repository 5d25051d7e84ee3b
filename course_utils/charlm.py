"""A character language model on tiny Shakespeare: the corpus (shipped, checksummed), its
vocabulary, batches, n-gram baselines in bits per character and head measurements. Chapter 8.

The corpus is ``course_utils/assets/tinyshakespeare.txt.gz`` (1,115,394 characters, 65
distinct), the "tiny Shakespeare" file of Karpathy's char-rnn repository
(``data/tinyshakespeare/input.txt``); Shakespeare's plays are in the public domain. The
uncompressed text is checked against its SHA-256 on every load; nothing is downloaded.
The recipe, the seeded run and the shipped model are in :mod:`course_utils.runs.charlm`.
"""

from __future__ import annotations

import gzip
import hashlib
import math
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from .gpt import DecoderOnly
from .validate import check_finite, check_fits, check_int, check_number, check_positive_int, check_rank, check_token_ids

ASSETS = Path(__file__).parent / "assets"
CORPUS_PATH = ASSETS / "tinyshakespeare.txt.gz"
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
VAL_FRACTION = 0.1  # the last 10 % of the text is the validation set

def load_corpus(path: Path | str = CORPUS_PATH, sha256: str = CORPUS_SHA256) -> str:
    """The tiny Shakespeare text, after checking its SHA-256 (ValueError if it differs). Chapter 8."""
    try:
        raw = gzip.decompress(Path(path).read_bytes())
    except (gzip.BadGzipFile, EOFError) as error:
        raise ValueError(f"path must be a gzip file of the corpus, got {Path(path).name} ({error})") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise ValueError(f"corpus checksum mismatch for {Path(path).name}: expected sha256 {sha256}, got {digest}")
    return raw.decode("utf-8")


class CharVocab:
    """Characters <-> ids, ids in sorted character order. Chapter 8."""

    def __init__(self, text: str):
        if not isinstance(text, str) or not text:
            raise ValueError("text must be a non-empty str")
        self.chars: list[str] = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> Tensor:
        """Ids (len(text),) of a string; unknown characters raise ValueError. Chapter 8."""
        try:
            return torch.tensor([self.stoi[ch] for ch in text], dtype=torch.long)
        except KeyError as error:
            raise ValueError(f"text contains {error.args[0]!r}, which is not in the vocabulary") from None

    def decode(self, ids: Tensor | list[int]) -> str:
        """The string spelled by ids. Chapter 8."""
        if isinstance(ids, Tensor):
            ids = ids.tolist()
        return "".join(self.chars[i] for i in ids)


def train_val_ids(text: str, vocab: CharVocab, val_fraction: float = VAL_FRACTION) -> tuple[Tensor, Tensor]:
    """The text as ids, split into the first (1 - val_fraction) for training and the rest for validation. Chapter 8."""
    if not isinstance(vocab, CharVocab):
        raise TypeError(f"vocab must be a CharVocab, got {type(vocab).__name__}")
    val_fraction = check_number("val_fraction", val_fraction, 0.0, 1.0, low_open=True, high_open=True)
    ids = vocab.encode(text)
    cut = int(len(ids) * (1 - val_fraction))
    if cut < 2 or len(ids) - cut < 2:
        raise ValueError(f"text must be long enough for two parts of at least 2 characters with val_fraction="
                         f"{val_fraction:g}, got {len(ids)} characters")
    return ids[:cut], ids[cut:]


def lm_batch(data: Tensor, batch_size: int, block_size: int, generator: torch.Generator | None = None
             ) -> tuple[Tensor, Tensor]:
    """Random windows: inputs (B, T) and targets (B, T) = the same windows shifted by one character. Chapter 8."""
    check_rank("data", data, 1, "(N,) token ids")
    check_token_ids("data", data[None], shape_hint="(N,) token ids")
    check_positive_int("batch_size", batch_size)
    check_positive_int("block_size", block_size)
    check_fits("block_size", block_size, len(data) - 1, f"len(data) - 1 = {len(data)} - 1: a window and its "
               "next-token targets must fit in data")
    starts = torch.randint(0, len(data) - block_size, (batch_size,), generator=generator)  # (B,)
    idx = starts[:, None] + torch.arange(block_size)  # (B, T)
    return data[idx], data[idx + 1]


# ---------------------------------------------------------------- baselines
def lm_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean next-token cross-entropy in nats over every position of (B, T, V) logits and (B, T) targets. Chapter 8.

    A language-model batch has no padding, so no target is ignored: ``train()``'s default loss skips
    ``pad_id`` 0, which in the character vocabulary is the newline. Pass this as ``loss_fn``.
    """
    logits = check_rank("logits", logits, 3, "(B, T, V)")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"logits must be a floating-point tensor, got dtype {logits.dtype}")
    check_token_ids("targets", targets, logits.shape[-1])
    if tuple(targets.shape) != tuple(logits.shape[:2]):
        raise ValueError(f"targets must have shape (B, T) = {tuple(logits.shape[:2])}, got {tuple(targets.shape)}")
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))  # (B*T, V)


def _finite_bits(bits: float, alpha: float) -> float:
    if not math.isfinite(bits):
        raise ValueError(f"alpha must be > 0 when val_ids hold characters or pairs that train_ids never show, "
                         f"got alpha={alpha:g} (probability 0, infinitely many bits)")
    return bits


def ngram_bits_per_char(train_ids: Tensor, val_ids: Tensor, order: int, vocab_size: int, alpha: float = 1.0) -> float:
    """Validation cross-entropy in bits/char of an add-alpha n-gram count model (order 0, 1 or 2). Chapter 8.

    order 0: uniform over the vocabulary; 1: unigram counts; 2: bigram counts (next character
    given the previous one). Counts come from ``train_ids``, the score from ``val_ids``.
    """
    V = check_positive_int("vocab_size", vocab_size)
    order = check_int("order", order, 0, 2)
    alpha = check_number("alpha", alpha, low=0.0)  # add-alpha smoothing; 0 = raw counts
    for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
        check_rank(name, ids, 1, "(N,) token ids")
        check_token_ids(name, ids[None], V, "(N,) token ids")
        if len(ids) < 2:
            raise ValueError(f"{name} must hold at least 2 tokens, got {len(ids)}")
    if order == 0:
        return math.log2(V)
    if order == 1:
        counts = torch.bincount(train_ids, minlength=V).double() + alpha  # (V,)
        logp = (counts / counts.sum()).log2()
        return _finite_bits(float(-logp[val_ids].mean()), alpha)
    if order == 2:
        pairs = torch.bincount(train_ids[:-1] * V + train_ids[1:], minlength=V * V).double().view(V, V) + alpha
        logp = (pairs / pairs.sum(dim=1, keepdim=True)).log2()  # (V, V): row = previous char
        return _finite_bits(float(-logp[val_ids[:-1], val_ids[1:]].mean()), alpha)
    raise ValueError(f"order must be 0, 1 or 2, got {order!r}")


def consecutive_windows(n_tokens: int, block_size: int, max_windows: int | None = None) -> Tensor:
    """Positions (W, block_size) of the consecutive windows 0..T-1, T..2T-1, ... of a split of ``n_tokens``
    ids, each followed by its next id: ``ids[idx]`` are a model's inputs, ``ids[idx + 1]`` its targets. Chapter 8.

    W = (n_tokens - 1) // block_size, or ``max_windows`` if fewer: the one rule by which the course
    scores a validation split (bits/char in chapters 8, 11 and 12, the masked LM's windows).
    """
    check_positive_int("block_size", block_size)
    check_int("n_tokens", n_tokens, low=block_size + 1)  # one window and its targets
    n_windows = (n_tokens - 1) // block_size
    if max_windows is not None:
        n_windows = min(n_windows, check_positive_int("max_windows", max_windows))
    return torch.arange(n_windows)[:, None] * block_size + torch.arange(block_size)  # (W, T)


def charlm_split() -> tuple[CharVocab, Tensor, Tensor]:
    """(vocabulary, training ids, validation ids): the first 90 % of tiny Shakespeare and the last 10 %. Chapter 8.

    The one loader of the character task, for every run on it (chapters 8, 11, 12).
    """
    text = load_corpus()
    vocab = CharVocab(text)
    train_ids, val_ids = train_val_ids(text, vocab)
    return vocab, train_ids, val_ids


@torch.no_grad()
def model_bits_per_char(model: nn.Module, val_ids: Tensor, block_size: int, max_windows: int | None = None) -> float:
    """Mean next-character cross-entropy of ``model`` over consecutive windows of val_ids, in bits. Chapter 8.

    Without ``max_windows`` every character of val_ids but the first is predicted exactly once
    (the last window is shorter); with it, only the first ``max_windows`` full windows count.

    ``model`` is a causal language model (tokens (B, T) -> logits (B, T, V)) with a ``config`` that
    names its ``vocab_size`` and ``max_len``: a ``DecoderOnly`` or Chapter 11's ``ModernLM``.
    """
    config: Any = getattr(model, "config", None)
    if not isinstance(model, nn.Module) or not all(hasattr(config, k) for k in ("vocab_size", "max_len")):
        raise TypeError("model must be a causal language model with config.vocab_size and config.max_len "
                        f"(a DecoderOnly), got {type(model).__name__}")
    check_rank("val_ids", val_ids, 1, "(N,) token ids")
    check_token_ids("val_ids", val_ids[None], config.vocab_size, "(N,) token ids")
    check_positive_int("block_size", block_size)
    check_fits("block_size", block_size, config.max_len, "the model's context max_len")
    if max_windows is not None:
        check_positive_int("max_windows", max_windows)
    if len(val_ids) < block_size + 1:
        raise ValueError(f"val_ids must hold at least block_size + 1 = {block_size + 1} tokens (one window and "
                         f"its targets), got {len(val_ids)}")
    model.eval()
    idx = consecutive_windows(len(val_ids), block_size, max_windows)  # (W, T)
    n_windows = len(idx)
    chunks = list(idx.split(64))
    tail = len(val_ids) - 1 - n_windows * block_size  # predictions left after the last full window
    if max_windows is None and tail > 0:  # the whole split: a last, shorter window, so every character counts once
        chunks.append(n_windows * block_size + torch.arange(tail)[None])  # (1, tail)
    total, count = 0.0, 0
    for chunk in chunks:
        logits = model(val_ids[chunk])  # (w, T, V)
        total += float(torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), val_ids[chunk + 1].reshape(-1), reduction="sum"))
        count += chunk.numel()
    return total / count / math.log(2)


# ---------------------------------------------------------------- what the heads do
def previous_token_score(weights: Tensor) -> Tensor:
    """Per head: mean attention weight from each query t >= 1 to key t - 1, for weights (B, h, T, T). Chapter 8."""
    check_finite("weights", check_rank("weights", weights, 4, "(B, h, T, T)"), "attention weights come from a softmax")
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))  # (B, h, T-1) -> (h,)


def induction_score(weights: Tensor, length: int) -> Tensor:
    """Per head, on inputs made of a random block of ``length`` tokens repeated twice: mean weight from
    each query in the second copy to the key right after the same token's first occurrence. Chapter 8.

    weights: (B, h, 2 length, 2 length) -> (h,). An induction head ("A B ... A -> attend to B")
    scores near 1; a head that spreads attention evenly scores about 1 / position.
    """
    check_finite("weights", check_rank("weights", weights, 4, "(B, h, T, T)"), "attention weights come from a softmax")
    check_positive_int("length", length)
    if weights.shape[-1] != 2 * length:
        raise ValueError(f"weights must cover 2 * length = {2 * length} positions, got shape {tuple(weights.shape)}")
    q = torch.arange(length, 2 * length)  # queries in the second copy
    k = q - length + 1  # the token after the first occurrence of the query's token
    return weights[:, :, q, k].mean(dim=(0, 2))  # (B, h, L) -> (h,)


@torch.no_grad()
def head_scores(model: DecoderOnly, windows: Tensor, vocab_size: int, length: int = 40, n: int = 32,
                generator: torch.Generator | None = None) -> dict[str, Tensor]:
    """{"previous_token", "induction"}: (n_layers, h) scores of every head (see the two functions above). Chapter 8.

    Previous-token scores are measured on real text ``windows`` (B, T); induction scores on
    ``n`` random sequences of ``length`` tokens, each repeated twice.
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a course_utils.gpt.DecoderOnly, got {type(model).__name__}")
    vocab_size, n = check_positive_int("vocab_size", vocab_size), check_positive_int("n", n)
    check_fits("2 * length", 2 * check_positive_int("length", length), model.config.max_len, "the model's max_len")
    _, weights = model(windows, return_attention=True)
    prev = torch.stack([previous_token_score(w) for w in weights])
    first = torch.randint(0, vocab_size, (n, length), generator=generator)  # (n, L)
    _, weights = model(torch.cat([first, first], dim=1), return_attention=True)  # (n, 2L) input
    induction = torch.stack([induction_score(w, length) for w in weights])
    return {"previous_token": prev, "induction": induction}
