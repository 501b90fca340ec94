"""The command's PYTHONPATH as a test reads it: the import probe's folder (place/import_probe.py) is its
last entry whenever a package under test is recorded; these helpers take it off, checking it is there."""

from pytest_gpuverify.place.import_probe import is_probe_folder


def without_probe(pythonpath: str) -> str:
    """``pythonpath`` less its last entry, which must be the import probe's folder."""
    head, _, last = pythonpath.rpartition(":")
    assert is_probe_folder(last), f"the import probe's folder is not last on PYTHONPATH {pythonpath!r}"
    return head
