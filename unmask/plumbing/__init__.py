"""What every layer stands on, and which imports nothing else of the project.

Contract: reading untrusted input bounded and without hangs (``files``, ``jsonload``,
``lines``, ``jsonreader``, ``jsonspans``), writing outputs whole or not at all
(``outputs``), the private cache folder (``cachedir``), problems as data (``diagnostics``,
rendered in one place; ``span`` says where), the limits and exit statuses, deadlines
watched outside a solver (``budget``), Ctrl-C known for what it is (``interrupt``), the one
output policy (``safe``, a leaf), the one identifier pattern (``names``) and the frozen
dataclass decorator (``frozen``). A module here imports only the standard library, its
declared dependencies and other modules here.
"""
