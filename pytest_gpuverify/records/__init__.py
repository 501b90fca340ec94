"""The typed records every layer shares: the artifact and what it holds (the run, the GPUs, the
builds, the fresh containers). Ground floor: imports only pydantic, the standard library and
``common``."""
