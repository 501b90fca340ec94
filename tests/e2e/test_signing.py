"""The env file's Signing table and the ssh-keygen calls behind signed artifacts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.config.envfile import EnvFileError, parse_env_text
from pytest_gpuverify.engine.signing import sign, signer_for, signer_of, verify

HOSTS = "## Hosts\n| host | ssh alias | arch | gpus |\n|---|---|---|---|\n| mi355x-07 | local | gfx950 | 8 |\n\n"


def env_with(rows: str, path: str = "/home/dev/env.md"):
    return parse_env_text(HOSTS + "## Signing\n| signer | key |\n|---|---|\n" + rows, path)


def keypair(where: Path, passphrase: str = "") -> Path:
    key = where / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(key)], check=True)
    return key


def allowed_signers(where: Path, principal: str, key: Path) -> Path:
    path = where / "allowed_signers"
    path.write_text(f"{principal} {Path(str(key) + '.pub').read_text().strip()}\n")
    return path


def test_the_signing_table_is_optional_and_read_when_present(tmp_path):
    assert parse_env_text(HOSTS, "env.md").signing == []
    env = env_with("| alice | /home/alice/.ssh/id_ed25519 |\n| mi355x-07 | `/etc/gpuverify/host_key` |\n")
    assert [(r.signer, str(r.key), r.row) for r in env.signing] == [
        ("alice", "/home/alice/.ssh/id_ed25519", 1),
        ("mi355x-07", "/etc/gpuverify/host_key", 2),
    ]


@pytest.mark.parametrize(
    "row, message",
    [
        (
            "| alice | .ssh/id_ed25519 |",
            "section 'Signing', row 1 (alice): key '.ssh/id_ed25519' is not an absolute path. Fix: ",
        ),
        ("| alice smith | /k |", "section 'Signing', row 1 (alice smith): signer 'alice smith' is not one name. Fix: "),
        ("| alice | /k |\n| ALICE | /j |", "section 'Signing', row 2 (ALICE): signer 'ALICE' is listed twice. Fix: "),
        ("| /k |", "section 'Signing', row 1 (/k): the row has 1 cells but the header has 2. Fix: "),
    ],
)
def test_a_bad_row_names_file_row_and_fix(row, message):
    with pytest.raises(EnvFileError) as err:
        env_with(row + "\n")
    assert str(err.value).startswith(f"/home/dev/env.md: {message}")


def test_the_users_row_wins_over_the_hosts(tmp_path):
    (tmp_path / "u").mkdir()
    (tmp_path / "h").mkdir()
    mine, hosts = keypair(tmp_path / "u"), keypair(tmp_path / "h")
    env = env_with(f"| MI355X-07 | {hosts} |\n| alice | {mine} |\n")
    assert signer_for(env, "mi355x-07", user="alice").signer == "alice"
    assert signer_for(env, "mi355x-07", user="bob").signer == "MI355X-07"
    assert signer_for(env, "other-host", user="bob") is None


def test_a_missing_key_is_an_env_file_error_before_anything_runs(tmp_path):
    env = env_with(f"| alice | {tmp_path}/nope |\n")
    with pytest.raises(EnvFileError) as err:
        signer_for(env, "mi355x-07", user="alice")
    text = str(err.value)
    assert text.startswith(
        f"/home/dev/env.md: section 'Signing', row 1 (alice): key {tmp_path}/nope is not a readable file"
    )
    assert "Fix: create it (`ssh-keygen -t ed25519 -f" in text


def test_sign_and_verify_round_trip_and_any_edit_fails(tmp_path):
    key = keypair(tmp_path)
    allowed = allowed_signers(tmp_path, "alice", key)
    data = tmp_path / "bench_x.json"
    data.write_bytes(b'{"verdict": "PASS"}\n')
    assert sign(data, key) is None and Path(str(data) + ".sig").exists()
    assert verify(data, allowed, "alice") is None
    assert signer_of(data, allowed) == "alice"
    assert "does not verify as mallory" in verify(data, allowed, "mallory")
    data.write_bytes(b'{"verdict": "FAIL"}\n')
    assert verify(data, allowed, "alice").startswith("bench_x.json: the signature does not verify as alice")
    assert sign(data, key) is None and verify(data, allowed, "alice") is None  # re-signing replaces the .sig


def test_an_unsigned_file_is_named(tmp_path):
    data = tmp_path / "bench_x.log"
    data.write_text("x\n")
    assert verify(data, tmp_path / "allowed", "alice") == "bench_x.log is not signed (no bench_x.log.sig)"


def test_a_key_with_a_passphrase_fails_at_once_never_prompts(tmp_path):
    key = keypair(tmp_path, passphrase="secret")
    data = tmp_path / "f"
    data.write_text("x")
    why = sign(data, key)
    assert why and not Path(str(data) + ".sig").exists()


def test_no_ssh_keygen_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    data = tmp_path / "f"
    data.write_text("x")
    assert sign(data, tmp_path / "k") == "ssh-keygen is not installed (apt-get install openssh-client)"
