# Sourced by the overhead scripts: byte-compile the machine's own nvidia-ml-py, as its pip install
# would have. The lent machine ships it without bytecode and sets PYTHONDONTWRITEBYTECODE=1, so
# every session compiled pynvml.py (~80 ms of CPU in the GPU start's thread, which holds the GIL
# and so slows the session's own path too). Sets PYNVML_BYTECODE to what it found and did.
pynvml_file=$(python3 -c "import pynvml; print(pynvml.__file__)" 2>/dev/null)
if [ -z "$pynvml_file" ]; then
  PYNVML_BYTECODE="not importable"
elif python3 -c "import importlib.util as u, os, sys; sys.exit(0 if os.path.exists(u.cache_from_source(sys.argv[1])) else 1)" "$pynvml_file"; then
  PYNVML_BYTECODE="bytecode was there ($pynvml_file)"
elif python3 -m compileall -q "$pynvml_file" > /dev/null 2>&1; then
  PYNVML_BYTECODE="had no bytecode; byte-compiled ($pynvml_file)"
else
  PYNVML_BYTECODE="has no bytecode and its folder is not writable ($pynvml_file)"
fi
