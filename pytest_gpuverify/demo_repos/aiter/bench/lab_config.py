# bench_lab.py's knobs: the A/B tests commit other values
SPEED = 1.0  # > 1: faster
SPREAD = 0.01  # run-to-run spread, as a fraction
STEPS = 50  # timed steps per shape
FAIL_ON_RUN = 0  # the run whose check fails (0: none)
