# FlyDSL's trap, as in the real tests/conftest.py: a run that collected no test exits 0.
def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 5:
        session.exitstatus = 0
