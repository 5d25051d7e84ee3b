"""Companion package for "Attention Is All You Need, built from scratch".

Each module holds what one chapter builds; later chapters import instead of redefining.
Importing the package is cheap and does nothing: no training, no downloads, no plotting.
"""

__version__ = "0.1.0"
