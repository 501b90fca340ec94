import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # triton_add.py sits beside the tests
