# The legacy one-line format: "[perf] dim: ... avg: X us ... uplift: Y%[checkAllclose ... passed~]".
import aiter
from aiter import logger

aiter.report_environment()
for dims, dtype, torch_us, b_us in [((4, 32, 8192), "torch.float16", 16.19, 6.30), ((4, 32, 8192), "torch.bfloat16", 30.01, 9.02)]:
    uplift = (torch_us / b_us - 1) * 100
    logger.info(
        f"[perf] dim: {str(dims):<20}dtype: {dtype}, torch avg: {torch_us:<8.2f} us, B avg: {b_us:<8.2f} us, "
        f"uplift: {uplift:<5.1f}%[checkAllclose atol=0.01 rtol=0.01 \033[32mpassed~\033[0m]"
    )
