"""The pytest face of a ``--gpu-verify`` run: the role of this process, its collectors of GPU
targets, its fixtures' work, and what the terminal shows. The entry point, ``pytest_gpuverify.plugin``,
imports it only once the plugin is switched on: a pytest run without ``--gpu-verify`` imports none of it."""
