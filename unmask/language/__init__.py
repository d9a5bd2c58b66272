"""The `.proto` language: text to syntax tree to ground IR, and back to canonical text.

Contract: ``parser`` turns text into the syntax tree (``ast``, built by ``syntaxtree``
from lark's parse tree, with the grammar's tables shipped as JSON by ``parser_tables``);
``compiler`` and its passes (``compile_base``, ``compile_decls``, ``compile_decisions``,
``compile_exprs``) ground it into the IR, every problem a diagnostic with its span;
``formatter`` prints the canonical text. ``compile_cache`` compiles a file once per
process and once per cache folder (``cache`` reads, ``cache_writer`` writes). The
language imports the IR and the plumbing only.
"""
