"""The batch engine behind ``unmask audit``: many replays, one streaming run, one summary.

It produces reports and asks ``unmask.render`` for pages and test cases; it renders nothing
itself. Modules, in the order a run uses them:

- ``inputs``: the tasks named by the paths (files, directories, JSON Lines, stdin);
- ``run``: checking one task, and the pool that checks many in input order;
- ``cluster``: the same on a Dask cluster (``--dask``; Dask is imported there only);
- ``records``: the result lines (a report with its location, or an error record);
- ``resume``: reading an earlier output back for ``--resume``;
- ``summary``: the figures of a run, folded one line at a time (by the workers of a pool
  or cluster, a job at a time, and merged in input order);
- ``files``: the files a run writes besides its results (HTML pages and index, JUnit).
"""
