"""The `.proto` grammar (``unmask.lark``), shipped as package data of ``unmask.grammar``."""
