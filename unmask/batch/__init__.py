"""The batch engine behind ``unmask audit``: many replays, one streaming run, one summary.

It produces reports and their ``unmask.checking.record.ResultRecord``s (what every output but a page
reads, fresh or resumed) and asks ``unmask.render`` for pages, index rows and test cases;
it renders nothing itself, and imports nothing of the command line or ``unmask.api``.
Modules, in the order a run uses them:

- ``audit``: a whole audit (inputs, settings, every output, resume, progress, SIGTERM,
  hints), for ``unmask audit`` and for a Python program alike;
- ``unmask.replay.inputs`` (below, shared with every command that reads replays): the tasks
  named by the paths (files, directories, JSON Lines, stdin);
- ``run``: every task checked, in this process or a pool, results in input order;
- ``task``: checking one task (its result line, its record, its page);
- ``wire``: the tasks cut into jobs, and what crosses to a worker process and back;
- ``pool``: the worker processes, a bounded window of jobs in flight, a dead worker's
  replay an error record;
- ``tuning``: the sizes of jobs and windows, the garbage collector and the heap of a run;
- ``cluster``: the same on a Dask cluster (``--dask``; Dask is imported there only);
- ``records``: the result lines (a report with its location, or an error record), and
  checking one read back;
- ``resume``: reading an earlier output back for ``--resume``;
- ``summary``: the figures of a run, folded one record at a time (by the workers of a pool
  or cluster, a job at a time, and merged in input order);
- ``files``: the files a run writes besides its results (HTML pages and index, JUnit).
"""
