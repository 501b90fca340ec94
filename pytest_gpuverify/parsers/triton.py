"""Parser for aiter's Triton kernel tests, ``op_tests/triton_tests/**``.

They are pytest files that print essentially nothing on success; a failure is a failing test, with
torch ``assert_close``'s ``Tensor-likes are not close!`` block (read by :mod:`.pytest_run`). Some
attention tests print ``Cosine Similarity: x`` (test_fav3_sage), read by :mod:`.metrics`.
"""

from __future__ import annotations


from pytest_gpuverify.parsers.pytest_run import PytestParser


class TritonPytestParser(PytestParser):
    name = "triton"


