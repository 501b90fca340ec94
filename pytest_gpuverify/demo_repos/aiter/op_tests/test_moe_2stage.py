# A failing run that exits 0, as aiter op_tests do: err 0.97 in the summary and a failed! check.
import aiter
from aiter import logger

aiter.report_environment()
aiter.check_line("ck_moe_2stages:   84.32 us,    18.80 tflops......(quant:QuantType.per_1x32)", "failed!")
logger.info("-->max abs delta:1712.0, delta details: 97.0% (5242880 of 5405000) elements")
table = [
    "| dtype          |   token |   model_dim |   inter_dim |   E |   topk |        us |       err |",
    "|:---------------|--------:|------------:|------------:|----:|-------:|----------:|----------:|",
    "| torch.bfloat16 |       1 |        7168 |         256 | 256 |      8 |   29.0853 | 0.970006  |",
    "| torch.bfloat16 |       3 |        7168 |         256 | 256 |      8 |   39.7758 | 0.96982   |",
]
logger.info("moe_2stage summary (markdown):\n" + "\n".join(table))
