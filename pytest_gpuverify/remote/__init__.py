"""GPU hosts reached over SSH: pytest-xdist workers started on them through execnet SSH gateways.

Each worker runs the whole local engine (readings, window, flock, docker through the host's own
socket, guard) on its host; the controller only starts them (``txspec.py``), checks each host first
(``preflight.py``), watches them (``controller.py``) and reports. Nothing here carries commands:
execnet and xdist do (shared/notes/remote-ab-ci.md, section 1, in the project's notes).
"""
