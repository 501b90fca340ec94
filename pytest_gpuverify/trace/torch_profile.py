"""Runs a Python command in this process under torch's profiler (CUPTI through Kineto) and writes its
Chrome trace, gzipped (OUT ends ``.json.gz``: a stored ``bench_*.json`` is an artifact to every tool that
gathers them; Perfetto opens the file as it is): ``python -c <this file> OUT -- [-m module | script] args...``. Passed as source, so it
needs neither this package nor a file where the command runs; the command's exit code is kept."""

import gzip
import os
import runpy
import shutil
import sys


def main():
    out, argv = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    import torch  # type: ignore[import-not-found]  # where the command runs, not here
    from torch.profiler import ProfilerActivity, profile  # type: ignore[import-not-found]

    code = 0
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        try:
            if argv[0] == "-m":
                sys.argv = [argv[1], *argv[2:]]
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = list(argv)
                sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(argv[0])))
                runpy.run_path(argv[0], run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    plain = out[: -len(".gz")] if out.endswith(".gz") else out + ".json"
    prof.export_chrome_trace(plain)
    with open(plain, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(plain)
    sys.exit(code)


if __name__ == "__main__":  # `python -c` runs it as __main__; an import (a linter, a test) runs nothing
    main()
