"""Decoding a trained encoder-decoder: greedy (with or without a KV cache), beam search and
temperature sampling. Chapter 6.

All functions take a ``course_utils.model.Transformer`` (anything with ``encode``,
``decode`` and ``new_cache``) and a batch of source ids ``src`` (B, T_src), and return the
generated target ids without the leading SOS; after a sequence's EOS come PAD tokens.
:func:`reverse_strings_decoder_only` is the same task for Chapter 8's decoder-only model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from .data import EOS_ID, PAD_ID, SEP_ID, SOS_ID, decode, encode, make_batch
from .gpt import DecoderOnly, generate
from .masks import padding_mask
from .sampling import check_sampling, filter_logits, sample_next
from .validate import (
    check_bool,
    check_choice,
    check_number,
    check_positive_int,
    check_rank,
    check_str_list,
    check_tensor,
    check_token_ids,
)


def _check_model(model: object) -> None:
    for attr in ("encode", "decode", "new_cache"):
        if not hasattr(model, attr):
            raise TypeError(f"model must be an encoder-decoder Transformer with .{attr}(), got {type(model).__name__}")


def _check_inputs(model: nn.Module, src: Tensor, max_len: int) -> None:
    _check_model(model)
    config = getattr(model, "config", None)
    check_token_ids("src", src, getattr(config, "src_vocab_size", None), "(B, T_src) of token ids")
    check_positive_int("max_len", max_len)
    empty = (src == getattr(config, "pad_id", PAD_ID)).all(dim=1)  # (B,): rows with no real token
    if bool(empty.any()):
        raise ValueError(f"src must hold at least one non-PAD token per row, got only PAD in row "
                         f"{int(empty.nonzero()[0])}: there is nothing to decode from")


def _model_max_len(model: nn.Module) -> int | None:
    """The longest target the model's positional table covers (None when the model does not say)."""
    return getattr(getattr(model, "config", None), "max_len", None)


def _autoregressive(
    model: Any, src: Tensor, max_len: int, choose: Callable[[Tensor], Tensor], use_cache: bool,
    positions: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """Generate from SOS, one token per step picked by ``choose(logits (B, V)) -> ids (B,)``.

    At most the model's max_len tokens come out: the decoder input (SOS + tokens so far) must
    fit its positional table. ``positions``: (source (B, T_src), target (B, >= max_len)) integer
    positions, target column t for decoder input t (SOS is column 0), instead of the model's own
    (Chapter 9's test-time positions); None: the model counts them.
    """
    limit = _model_max_len(model)
    if limit is not None:
        max_len = min(max_len, limit)
    src_pos, tgt_pos = (None, None) if positions is None else positions
    if tgt_pos is not None and tgt_pos.shape[1] < max_len:
        raise ValueError(f"positions must give at least max_len={max_len} target positions, "
                         f"got shape {tuple(tgt_pos.shape)}")
    model.eval()
    src_mask = padding_mask(src, PAD_ID)  # (B, 1, 1, T_src)
    # positions go only to a model that is given them (the GRU baseline of Chapter 10 has none)
    at: dict[str, Tensor] = {} if src_pos is None else {"positions": src_pos}
    memory = model.encode(src, src_mask, **at)  # (B, T_src, d_model), computed once
    B = src.shape[0]
    ys = torch.full((B, 1), SOS_ID, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    cache = model.new_cache() if use_cache else None
    for t in range(max_len):
        # with a cache only the newest token goes in (its column t), else the whole prefix (columns 0..t)
        new = ys[:, -1:] if use_cache else ys
        step = {} if tgt_pos is None else {"positions": (src_pos, tgt_pos[:, t + 1 - new.shape[1]: t + 1])}
        logits = model.decode(new, memory, src_mask, cache=cache, **step)[:, -1]  # (B, V)
        next_id = choose(logits).masked_fill(finished, PAD_ID)  # (B,): finished rows only pad
        ys = torch.cat([ys, next_id[:, None]], dim=1)  # (B, t + 2)
        finished |= next_id == EOS_ID
        if bool(finished.all()):
            break
    return ys[:, 1:]


@torch.no_grad()
def greedy_decode(
    model: nn.Module, src: Tensor, max_len: int, use_cache: bool = True,
    positions: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """Pick the most likely next token at every step; ids (B, <= max_len). Chapter 6.

    With ``use_cache=True`` each step feeds only the newest token and reuses the keys and
    values of the earlier ones (KV cache); with False it recomputes the whole prefix. Both
    give the same tokens. At most the model's own max_len tokens are generated.
    ``positions``: (source (B, T_src), target (B, >= max_len)) positions to decode at instead
    of the model's own, target column 0 for SOS (Chapter 9 draws them at random).
    """
    _check_inputs(model, src, max_len)
    check_bool("use_cache", use_cache)
    if positions is not None:
        if not isinstance(positions, tuple) or len(positions) != 2:
            raise TypeError(f"positions must be a tuple (source positions, target positions), "
                            f"got {type(positions).__name__}")
        check_rank("positions[0]", positions[0], 2, "(B, T_src) source positions")
        check_rank("positions[1]", positions[1], 2, "(B, >= max_len) target positions")
        if tuple(positions[0].shape) != tuple(src.shape) or positions[1].shape[0] != src.shape[0]:
            raise ValueError(f"positions must be shaped like src {tuple(src.shape)} and (B={src.shape[0]}, ...), "
                             f"got {tuple(positions[0].shape)} and {tuple(positions[1].shape)}")
    return _autoregressive(model, src, max_len, lambda logits: logits.argmax(dim=-1), use_cache, positions)


def sampling_probs(logits: Tensor, temperature: float = 1.0, top_k: int | None = None) -> Tensor:
    """softmax(logits / temperature) over the last dimension, keeping only the ``top_k`` largest. Chapter 6.

    temperature < 1 sharpens the distribution (towards greedy), > 1 flattens it; with ``top_k``
    every token outside the k most likely gets probability 0 (ties at the k-th value are kept).
    The filtering is :func:`course_utils.sampling.filter_logits`, shared with Chapter 8.
    """
    check_tensor("logits", logits)
    return torch.softmax(filter_logits(logits, temperature, top_k), dim=-1)


@torch.no_grad()
def sample_decode(
    model: nn.Module,
    src: Tensor,
    max_len: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    top_k: int | None = None,
) -> Tensor:
    """Sample each next token from :func:`sampling_probs` of the logits; ids (B, <= max_len). Chapter 6.

    temperature < 1 sharpens the distribution (towards greedy), > 1 flattens it; ``top_k``
    samples among the k most likely tokens only. The draw is :func:`course_utils.sampling.sample_next`
    (one uniform number per row, inverted CDF), so a seeded generator gives the same samples on any CPU.
    """
    _check_inputs(model, src, max_len)
    temperature, top_k, _ = check_sampling(temperature, top_k)  # before any decoding
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")

    def sample(logits: Tensor) -> Tensor:
        return sample_next(filter_logits(logits, temperature, top_k), generator)  # (B,)

    return _autoregressive(model, src, max_len, sample, use_cache=True)


def length_penalty_factor(length: int, alpha: float, penalty: str = "power") -> float:
    """What beam search divides a finished hypothesis's log-probability by. Chapters 6 and 13.

    ``"power"``: length ** alpha; ``"gnmt"``: ((5 + length) / 6) ** alpha, the penalty of Wu et al.
    (2016) that the Transformer paper uses with alpha = 0.6. alpha = 0 divides by 1 (no penalty).
    """
    length = check_positive_int("length", length)
    alpha = check_number("alpha", alpha, low=0.0)
    check_choice("penalty", penalty, ("power", "gnmt"))
    return float(length) ** alpha if penalty == "power" else ((5 + length) / 6) ** alpha


@torch.no_grad()
def beam_search(
    model: nn.Module, src: Tensor, max_len: int, beam_size: int = 4, length_penalty: float = 0.0,
    penalty: str = "power",
) -> list[tuple[list[int], float]]:
    """Beam search for one source (1, T_src): the ``beam_size`` best hypotheses, best first. Chapter 6.

    Each hypothesis is (ids ending with EOS unless max_len was reached, score), where score is
    the sum of log-probabilities divided by :func:`length_penalty_factor` of len(ids) with
    alpha = ``length_penalty`` (``penalty="gnmt"``: Chapter 13's ((5 + len) / 6) ** alpha).
    Beam size 1 is greedy.
    """
    _check_inputs(model, src, max_len)
    check_positive_int("beam_size", beam_size)
    length_penalty = check_number("length_penalty", length_penalty, low=0.0)
    check_choice("penalty", penalty, ("power", "gnmt"))
    if src.shape[0] != 1:
        raise ValueError(
            f"beam_search decodes one source at a time: src must have shape (1, T_src), got {tuple(src.shape)}"
        )
    model.eval()
    seq2seq: Any = model  # any encoder-decoder with encode / decode (nn.Module types its methods loosely)
    src_mask = padding_mask(src, PAD_ID)
    memory = seq2seq.encode(src, src_mask)  # (1, T_src, d_model)
    alive: list[tuple[list[int], float]] = [([SOS_ID], 0.0)]  # (prefix with SOS, sum of log-probs)
    done: list[tuple[list[int], float]] = []

    def final_score(ids: list[int], logp: float) -> float:
        return logp / length_penalty_factor(len(ids), length_penalty, penalty)

    limit = _model_max_len(model)
    n_steps = max_len if limit is None else min(max_len, limit)
    # the largest divisor any hypothesis can reach: its length is at most n_steps and the penalty grows with length
    largest_penalty = length_penalty_factor(n_steps, length_penalty, penalty)
    for _ in range(n_steps):
        k = len(alive)
        ys = torch.tensor([ids for ids, _ in alive], dtype=torch.long, device=src.device)  # (k, t)
        logits = seq2seq.decode(ys, memory.expand(k, -1, -1), src_mask.expand(k, -1, -1, -1))[:, -1]  # (k, V)
        logp = torch.log_softmax(logits, dim=-1)  # (k, V)
        totals = logp + torch.tensor([s for _, s in alive], device=src.device)[:, None]  # (k, V)
        top = torch.topk(totals.flatten(), min(beam_size, totals.numel()))  # best continuations overall
        V = logp.shape[-1]
        new_alive = []
        for score, flat in zip(top.values.tolist(), top.indices.tolist(), strict=False):
            beam, token = divmod(flat, V)
            ids = alive[beam][0] + [token]
            if token == EOS_ID:
                done.append((ids[1:], score))
            else:
                new_alive.append((ids, score))
        alive = new_alive
        if not alive:
            break
        if len(done) >= beam_size:
            # log-probabilities only go down and the penalty only grows, so no alive beam can end
            # above (its log-probability so far) / largest_penalty; once beam_size finished
            # hypotheses score at least that, no alive beam can enter the top beam_size
            kth_best = sorted((final_score(ids, s) for ids, s in done), reverse=True)[beam_size - 1]
            if kth_best >= max(s for _, s in alive) / largest_penalty:
                break
    done.extend((ids[1:], s) for ids, s in alive)  # unfinished hypotheses at max_len
    ranked = sorted(((ids, final_score(ids, s)) for ids, s in done), key=lambda x: -x[1])
    return ranked[:beam_size]


def _src_for(model: nn.Module, strings: Sequence[str], name: str = "strings") -> Tensor:
    """Source ids (B, T_src) of ``strings``, checked against the model's max_len."""
    limit = _model_max_len(model)
    for i, s in enumerate(strings):
        if limit is not None and len(s) > limit:
            raise ValueError(
                f"{name}[{i}] must have at most max_len={limit} letters (the model's positional table), "
                f"got {len(s)}"
            )
    return make_batch(list(strings))[0]  # (B, T_src)


def reverse_strings(model: nn.Module, strings: Sequence[str], batch_size: int = 500, extra: int = 2) -> list[str]:
    """The model's greedy (KV-cached) reversal of each string. Chapter 6.

    Each string is decoded for up to its length + ``extra`` tokens (the reversal and its EOS
    need length + 1), capped at the model's max_len.
    """
    _check_model(model)
    strings = check_str_list("strings", strings, allow_empty=True)
    check_positive_int("batch_size", batch_size)
    extra = check_positive_int("extra", extra)  # room for the EOS
    out: list[str] = []
    for i in range(0, len(strings), batch_size):
        chunk = strings[i : i + batch_size]
        src = _src_for(model, chunk)
        ids = greedy_decode(model, src, max_len=src.shape[1] + extra)
        out.extend(decode(row) for row in ids)
    return out


def sample_reversals(
    model: nn.Module,
    text: str,
    n: int = 5,
    temperature: float = 0.8,
    generator: torch.Generator | None = None,
    top_k: int | None = None,
) -> list[str]:
    """``n`` sampled reversals of ``text`` at the given temperature (and top-k). Chapter 6."""
    _check_model(model)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    check_positive_int("n", n)
    src = _src_for(model, [text], "text").expand(n, -1)  # (n, T_src): the same source n times
    ids = sample_decode(model, src, max_len=len(text) + 2, temperature=temperature, generator=generator,
                        top_k=top_k)
    return [decode(row) for row in ids]


def reverse_strings_decoder_only(model: DecoderOnly, strings: Sequence[str], extra: int = 2) -> list[str]:
    """A decoder-only model's greedy (KV-cached) reversal of each string: prompt ``src SEP``, stop at EOS. Chapter 8.

    Strings of equal length share one batch (their prompts line up without padding).
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a course_utils.gpt.DecoderOnly, got {type(model).__name__}")
    strings = check_str_list("strings", strings, allow_empty=True)
    extra = check_positive_int("extra", extra)  # room for the EOS, as in reverse_strings
    out: list[str | None] = [None] * len(strings)
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(strings):
        by_length.setdefault(len(s), []).append(i)
    for n, rows in by_length.items():
        check_positive_int("string length", n)
        src = torch.tensor([encode(strings[i]) for i in rows], dtype=torch.long)  # (b, n)
        prompt = torch.cat([src, torch.full((len(rows), 1), SEP_ID)], dim=1)  # (b, n + 1)
        new = generate(model, prompt, n + extra, temperature=0, eos_id=EOS_ID, pad_id=PAD_ID)
        for i, row in zip(rows, new, strict=True):
            out[i] = decode(row)
    return [s for s in out if s is not None]
