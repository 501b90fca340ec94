# Runs longer than any test's --gpu-timeout: the plugin must stop it.
import time

import aiter

aiter.report_environment()
print("sleeping", flush=True)
time.sleep(600)
