# The lab suite's order: shuffled by LAB_SEED, so each session prints its failures in another order.
import os
import random


def pytest_collection_modifyitems(items):
    random.Random(int(os.environ.get("LAB_SEED", "0"))).shuffle(items)
