"""The ingest service's tokens file and token check, and the CI run's URL a runner sends."""

from __future__ import annotations

import pytest

from pytest_gpuverify.history.client import run_url
from pytest_gpuverify.history.service import SettingsError, read_token_roles, read_tokens, runner_of

A, B = "a" * 32, "b" * 32


def test_tokens_are_one_name_and_token_a_line(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# the runners\n\nrunner-1 {A}\n  runner-2   {B}  \n")
    tokens = read_tokens(path)
    assert tokens == {"runner-1": A, "runner-2": B}
    assert runner_of(f"Bearer {B}", tokens) == "runner-2" and runner_of(f"bearer {A}", tokens) == "runner-1"
    for wrong in (None, "", "Bearer ", f"Basic {A}", f"Bearer {A[:-1]}", A):
        assert runner_of(wrong, tokens) is None


def test_a_token_may_be_marked_read_only_and_is_write_without_a_role(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"runner-1 {A}\nrunner-2 {B} write\ndashboard {'c' * 20} read\n")
    tokens, read_only = read_token_roles(path)
    assert tokens == {"runner-1": A, "runner-2": B, "dashboard": "c" * 20} and read_only == {"dashboard"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("runner-1\n", ":1: 1 words; a line is `NAME TOKEN [write|read]`"),
        (f"r {A} admin\n", ":1: role 'admin'. Fix: write (posts runs and reads) or read (reads only)"),
        (f"r {A} read extra\n", ":1: 4 words"),
        (f"r {A}\nr {B}\n", ":2: r is named twice"),
        ("r short\n", ":1: r's token is 5 characters. Fix: 16 or more"),
        ("# nothing\n", "no `NAME TOKEN` line"),
    ],
)
def test_a_bad_tokens_file_names_its_line_and_the_fix(tmp_path, text, message):
    path = tmp_path / "tokens"
    path.write_text(text)
    with pytest.raises(SettingsError, match="Fix") as caught:
        read_tokens(path)
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_the_ci_run_url_comes_from_the_ci_variables():
    github = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "9"}
    assert run_url(github) == "https://github.com/o/r/actions/runs/9"
    assert run_url({**github, "GPUVERIFY_RUN_URL": "https://ci/1"}) == "https://ci/1"
    assert run_url({"CI_JOB_URL": "https://gitlab/j/2"}) == "https://gitlab/j/2"
    assert run_url({"GITHUB_RUN_ID": "9"}) is None
