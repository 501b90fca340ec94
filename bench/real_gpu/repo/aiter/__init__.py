"""Stand-in for the aiter package of this aiter-layout repo: the kernels under test live in op_tests."""
