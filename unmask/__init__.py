"""Unmask: audit whether an LLM judge followed its protocol, not only whether it was right."""

__version__ = "0.1.0"
