"""The string-reversal task: vocabulary, encode/decode, padded teacher-forcing batches. Chapter 6.

Vocabulary: PAD=0, SOS=1, EOS=2, then the letters a-z as ids 3..28 (V = 29).
A batch for the encoder-decoder model is three tensors, all padded with PAD:

- ``src``    (B, T_src): the letters of each string;
- ``tgt_in`` (B, T):     SOS followed by the reversed string (what the decoder reads);
- ``tgt_out`` (B, T):    the reversed string followed by EOS (what it must predict).

``tgt_in`` is ``tgt_out`` shifted right by one with SOS in front: teacher forcing.

A decoder-only model (Chapter 8) reads the same task as one sequence ``[src; SEP; tgt; EOS]``
(:func:`one_sequence_batch`). The separator is the ``SOS`` token: in the encoder-decoder it
tells the decoder "start writing the target", and here it does the same job in the middle of
one sequence. For ``abc`` the sequence is ``a b c <sos> c b a <eos>``; the model reads it
shifted (``inputs = seq[:-1]``, ``targets = seq[1:]``) and the targets of the source part are
``PAD`` so the loss ignores them: the source letters are random, nothing can predict them.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from numbers import Integral

import numpy as np
import torch
from torch import Tensor

from .validate import check_choice, check_positive_int, check_rank, check_str_list, check_token_ids

PAD_ID, SOS_ID, EOS_ID = 0, 1, 2
SEP_ID = SOS_ID  # the separator of the one-sequence layout (Chapter 8)
LETTERS = string.ascii_lowercase
SPECIAL_TOKENS = ("<pad>", "<sos>", "<eos>")
ITOS: tuple[str, ...] = SPECIAL_TOKENS + tuple(LETTERS)  # id -> token
STOI: dict[str, int] = {ch: i for i, ch in enumerate(ITOS)}  # token -> id
VOCAB_SIZE = len(ITOS)  # 29
FIRST_LETTER_ID = len(SPECIAL_TOKENS)  # 3


def encode(text: str) -> list[int]:
    """Token ids of a lowercase string (no SOS/EOS added). Chapter 6."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    ids = []
    for pos, ch in enumerate(text):
        if ch not in LETTERS:
            raise ValueError(
                f"text contains {ch!r} at position {pos}, which is not in the vocabulary "
                f"(only the lowercase letters a-z are allowed)"
            )
        ids.append(STOI[ch])
    return ids


def decode(ids: Sequence[int] | Tensor) -> str:
    """The string spelled by ``ids``: stops at the first EOS, skips PAD and SOS. Chapter 6."""
    if isinstance(ids, np.ndarray):
        ids = torch.from_numpy(ids)
    if isinstance(ids, str) or not isinstance(ids, (Sequence, Tensor)):
        raise TypeError(f"ids must be a 1-D tensor or a list of ints, got {type(ids).__name__}")
    if isinstance(ids, Tensor):
        if ids.dim() != 1:
            raise ValueError(f"ids must be a 1-D tensor or a list of ints, got shape {tuple(ids.shape)}")
        ids = ids.tolist()
    out = []
    for pos, i in enumerate(ids):
        if isinstance(i, bool) or not isinstance(i, Integral) or not 0 <= int(i) < VOCAB_SIZE:
            raise ValueError(f"ids[{pos}] must be an int token id in [0, {VOCAB_SIZE}), got {i!r}")
        if i == EOS_ID:
            break
        if int(i) >= FIRST_LETTER_ID:
            out.append(ITOS[int(i)])
    return "".join(out)


def _check_lengths(min_len: int, max_len: int) -> None:
    check_positive_int("min_len", min_len)
    check_positive_int("max_len", max_len)
    if min_len > max_len:
        raise ValueError(f"min_len must be <= max_len, got min_len={min_len} and max_len={max_len}")


LENGTH_DRAWS = ("uniform", "proportional")


def random_letter_ids(
    n: int, min_len: int, max_len: int, generator: torch.Generator | None = None, length_draw: str = "uniform"
) -> tuple[Tensor, Tensor]:
    """Random strings as a padded id tensor (n, max_len) and their lengths (n,). Chapter 6.

    ``length_draw="uniform"``: every length in [min_len, max_len] equally likely;
    ``"proportional"``: length L drawn with probability proportional to L, so that every letter
    position up to max_len is trained about equally often (Chapter 8's decoder-only recipe).
    """
    check_positive_int("n", n)
    _check_lengths(min_len, max_len)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    check_choice("length_draw", length_draw, LENGTH_DRAWS)
    if length_draw == "uniform":
        lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator)  # (n,)
    else:
        weights = torch.arange(min_len, max_len + 1, dtype=torch.float)  # (max_len - min_len + 1,)
        lengths = min_len + torch.multinomial(weights, n, replacement=True, generator=generator)  # (n,)
    ids = torch.randint(FIRST_LETTER_ID, VOCAB_SIZE, (n, max_len), generator=generator)  # (n, max_len)
    ids = ids.masked_fill(torch.arange(max_len) >= lengths[:, None], PAD_ID)
    return ids, lengths


def random_strings(n: int, min_len: int, max_len: int, generator: torch.Generator | None = None) -> list[str]:
    """``n`` random lowercase strings with lengths uniform in [min_len, max_len]. Chapter 6."""
    ids, _ = random_letter_ids(n, min_len, max_len, generator)
    return [decode(row) for row in ids]


def batch_from_ids(ids: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(src, tgt_in, tgt_out) for reversal from padded letter ids (B, T) and lengths (B,). Chapter 6."""
    check_rank("ids", ids, 2, "(B, T) of letter ids")
    check_rank("lengths", lengths, 1, "(B,)")
    for name, t in (("ids", ids), ("lengths", lengths)):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer tensor, got dtype {t.dtype}")
    if lengths.shape[0] != ids.shape[0] or ids.shape[0] == 0:
        raise ValueError(
            f"lengths must have one entry per row of ids (B={ids.shape[0]} >= 1), got shape {tuple(lengths.shape)}"
        )
    if (lengths < 1).any() or (lengths > ids.shape[1]).any():
        raise ValueError(
            f"lengths must be in [1, T={ids.shape[1]}], got values from {int(lengths.min())} to {int(lengths.max())}"
        )
    first = ids[torch.arange(ids.shape[1]) < lengths[:, None]]  # the letters every string uses
    if (first < FIRST_LETTER_ID).any() or (first >= VOCAB_SIZE).any():
        raise ValueError(
            f"ids must hold letter ids in [{FIRST_LETTER_ID}, {VOCAB_SIZE}) within each length, got values from "
            f"{int(first.min())} to {int(first.max())}"
        )
    B = ids.shape[0]
    T_src = int(lengths.max())
    src = ids[:, :T_src]  # (B, T_src), trim padding columns no string needs
    pos = torch.arange(T_src)  # (T_src,)
    # position i of the reversed string holds source position length - 1 - i
    rev_index = (lengths[:, None] - 1 - pos).clamp(min=0)  # (B, T_src)
    reversed_ids = src.gather(1, rev_index).masked_fill(pos >= lengths[:, None], PAD_ID)  # (B, T_src)
    pad_col = torch.full((B, 1), PAD_ID, dtype=src.dtype)
    tgt_out = torch.cat([reversed_ids, pad_col], dim=1)  # (B, T_src + 1)
    tgt_out[torch.arange(B), lengths] = EOS_ID  # EOS right after the last letter
    sos_col = torch.full((B, 1), SOS_ID, dtype=src.dtype)
    tgt_in = torch.cat([sos_col, reversed_ids], dim=1)  # (B, T_src + 1): shifted right, SOS first
    return src, tgt_in, tgt_out


def make_batch(strings: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
    """Padded (src, tgt_in, tgt_out) tensors for reversing ``strings``. Chapter 6."""
    strings = check_str_list("strings", strings)
    encoded = []
    for i, s in enumerate(strings):
        try:
            encoded.append(encode(s))
        except ValueError as error:
            raise ValueError(f"strings[{i}]: {error}") from None
    for i, e in enumerate(encoded):
        if not e:
            raise ValueError(f"strings[{i}] is empty; every string needs at least one letter")
    T = max(len(e) for e in encoded)
    ids = torch.full((len(encoded), T), PAD_ID, dtype=torch.long)
    for row, e in enumerate(encoded):
        ids[row, : len(e)] = torch.tensor(e)
    lengths = torch.tensor([len(e) for e in encoded])
    return batch_from_ids(ids, lengths)


def random_batch(
    batch_size: int, min_len: int, max_len: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """A random reversal batch (src, tgt_in, tgt_out), sampled with tensor ops only. Chapter 6."""
    check_positive_int("batch_size", batch_size)
    ids, lengths = random_letter_ids(batch_size, min_len, max_len, generator)
    return batch_from_ids(ids, lengths)


def one_sequence_batch(ids: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """(inputs, targets), each (B, 2 n_max + 1), for letter ids (B, T) with lengths (B,). Chapter 8.

    Row with n letters: inputs = ``src SEP rev`` then PAD, targets = n PADs (source part, no
    loss), then ``rev EOS``, then PAD. Padding sits at the end, where causality hides it.
    """
    check_token_ids("ids", ids, VOCAB_SIZE, "(B, T) letter ids")
    check_rank("lengths", lengths, 1, "(B,)")
    if lengths.numel() == 0 or lengths.shape[0] != ids.shape[0]:
        raise ValueError(f"lengths must hold one length per row of ids ({ids.shape[0]}), got shape "
                         f"{tuple(lengths.shape)}")
    B = ids.shape[0]
    n_max = int(lengths.max())
    width = 2 * n_max + 1
    inputs = torch.full((B, width), PAD_ID, dtype=torch.long)
    targets = torch.full((B, width), PAD_ID, dtype=torch.long)
    for row, n in enumerate(lengths.tolist()):
        src = ids[row, :n]
        rev = src.flip(0)
        inputs[row, :n] = src
        inputs[row, n] = SEP_ID
        inputs[row, n + 1: 2 * n + 1] = rev
        targets[row, n: 2 * n] = rev  # predicted at SEP and at every target letter
        targets[row, 2 * n] = EOS_ID
    return inputs, targets


def make_one_sequence_batch(strings: Sequence[str]) -> tuple[Tensor, Tensor]:
    """(inputs, targets) of the one-sequence layout for ``strings``. Chapter 8."""
    if isinstance(strings, str) or not isinstance(strings, Sequence) or len(strings) == 0:
        raise TypeError(f"strings must be a non-empty list of str, got {type(strings).__name__}")
    encoded = [encode(s) for s in strings]
    if any(not e for e in encoded):
        raise ValueError("every string needs at least one letter")
    T = max(len(e) for e in encoded)
    ids = torch.full((len(encoded), T), PAD_ID, dtype=torch.long)
    for row, e in enumerate(encoded):
        ids[row, : len(e)] = torch.tensor(e)
    return one_sequence_batch(ids, torch.tensor([len(e) for e in encoded]))
