"""`unmask annotate`'s engine: a model's (and other readers') readings of replays' open atoms.

- ``question.py``: the open atoms of a replay, the question put to a model (prompt and JSON
  Schema from ``unmask.replay.judgeschema``), its cache key, and the answer read into readings;
- ``cache.py``: every reply kept on disk as sealed JSON, keyed by model, prompt and schema;
- ``provider.py``: Inspect AI's model API, the optional extra ``unmask[models]``;
- ``run.py``: readers that must agree, calls cached and counted, replays written;
- ``hand.py``: a person's readings (``--from``), each quote's source chosen by the atom's role.
"""
