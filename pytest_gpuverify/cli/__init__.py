"""The ``gpuverify`` command: schema, show, check, doctor, handoff, demo."""
