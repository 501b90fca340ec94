"""Kernel traces and profiles taken in one extra run beside the timed ones: the tracers' command lines
(``tracers.py``), the readers of what they write (rocpd SQLite, nsys's SQLite export, Kineto's JSON:
``readers.py``), the rule that sets printed times against the traced kernels (``corroborate.py``) and
the kernels' identity, their code objects by sha256 (``identity.py``). Pure functions over files and
records; the engine runs the commands."""
