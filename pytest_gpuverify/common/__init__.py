"""Helpers with no knowledge of GPUs or pytest: result files and folders, background threads, the
session's clock, small statistics. Ground floor: imports only the standard library."""
