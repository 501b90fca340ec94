# A crash: a traceback and a non-zero exit.
import aiter

aiter.report_environment()
aiter.check_line("ck: ", "passed~")
raise RuntimeError("[aiter] build [module_crash] under /tmp/jit/build failed !!!!!!")
