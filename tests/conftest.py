"""Shared test helpers: a not-yet-written student function, a checker's failure, small models.

Import them in a test file with ``from conftest import stub, fails_with`` (pytest puts ``tests/``
on ``sys.path``); the model builders seed the global generator themselves, so every call with
the same arguments gives the same weights.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch


@pytest.fixture(autouse=True)
def _autograd_is_left_on() -> Iterator[None]:
    """Every test leaves autograd on. One that does not fails here, by name, and autograd is put
    back, so that the tests after it do not all fail with "element 0 of tensors does not require
    grad" (how a CI run once lost 168 tests to one cut ``with torch.no_grad():``)."""
    yield
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)
        pytest.fail("this test left autograd off (torch.is_grad_enabled() was False after it): "
                    "a torch.set_grad_enabled(False), or a `with torch.no_grad():` cut half-way")


def stub(*args: Any, **kwargs: Any) -> Any:
    """A student function not written yet: the notebook's ``raise NotImplementedError``."""
    raise NotImplementedError("your code here")


def fails_with(result: Any, *words: str, case: bool = True) -> None:
    """Assert that a checker's result is a failure (not "not implemented yet") naming every word."""
    assert not result.passed and not result.not_implemented, result.message
    message = result.message if case else result.message.lower()
    for word in words:
        assert (word if case else word.lower()) in message, (word, result.message)


def tiny_transformer(seed: int = 0, vocab: int = 13, **config: Any) -> Any:
    """A small encoder-decoder Transformer (d_model 16, 2 + 2 layers, no dropout) in eval mode, seeded."""
    from course_utils.model import Transformer, TransformerConfig

    base: dict[str, Any] = dict(d_model=16, n_heads=4, d_ff=32, n_encoder_layers=2, n_decoder_layers=2,
                                dropout=0.0, max_len=64)
    torch.manual_seed(seed)
    return Transformer(TransformerConfig(vocab, vocab, **{**base, **config})).eval()


def tiny_decoder_only(seed: int = 0, **config: Any) -> Any:
    """A small decoder-only model (vocab 13, d_model 16, 3 layers, context 40) in eval mode, seeded."""
    from course_utils.gpt import DecoderOnly, DecoderOnlyConfig

    base: dict[str, Any] = dict(vocab_size=13, d_model=16, n_heads=4, d_ff=32, n_layers=3, max_len=40)
    torch.manual_seed(seed)
    return DecoderOnly(DecoderOnlyConfig(**{**base, **config})).eval()
