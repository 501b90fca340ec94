"""GPU hosts reached over SSH: pytest-xdist workers started on them through execnet SSH gateways.

Each worker runs the whole local engine (readings, window, flock, docker through the host's own
socket, guard) on its host; the controller only starts them (``txspec.py``), checks each host first
(``preflight.py``), watches them (``controller.py``), takes their artifacts (``collect.py``) and
reports; ``onhost.py`` is the worker's side, ``sync.py`` is ``--gpu-sync``. Nothing here carries
commands: execnet's SSH gateways and xdist's workers do (docs/hosts.md, "GPU hosts over SSH").
"""
