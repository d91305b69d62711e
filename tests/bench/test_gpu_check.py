"""bench/gpu_check.sh on a stock GPU image: before starting anything it names every missing
prerequisite with the command that installs it."""

import shutil
import subprocess

from tests.conftest import ROOT, free_port

# The only programs the prerequisite check runs besides the ones it looks for.
BASE_TOOLS = ("bash", "dirname", "basename", "timeout")


def sandbox(tmp_path, **fakes: str):
    """A copy of the script outside the repository (so no .venv) and a PATH holding only the
    base tools plus the given fake programs (name -> shell script body)."""
    (tmp_path / "bench").mkdir()
    shutil.copy(ROOT / "bench" / "gpu_check.sh", tmp_path / "bench" / "gpu_check.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in BASE_TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    for name, body in fakes.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def run_check(tmp_path, bin_dir, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(tmp_path / "bench" / "gpu_check.sh")],
        env={
            "PATH": str(bin_dir),
            "HOME": str(tmp_path),
            "TMPDIR": str(tmp_path),
            "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# A Python 3.10, as Ubuntu 22.04's python3 is: fails the version check, reports its version.
PYTHON_310 = 'case "$2" in *platform*) echo 3.10.12 ;; *) exit 1 ;; esac'
# A Python 3.11 without its venv module (python3.11 installed, python3.11-venv not).
PYTHON_311_NO_VENV = 'case "$2" in *ensurepip*) exit 1 ;; *) exit 0 ;; esac'


def test_a_bare_image_gets_every_missing_prerequisite_named_with_its_apt_command(tmp_path):
    bin_dir = sandbox(tmp_path, python3=PYTHON_310)
    result = run_check(tmp_path, bin_dir)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "gpu_check.sh cannot start; this machine lacks:"
    assert (
        "  - Python 3.11 or newer (python3 is 3.10.12): sudo apt-get install -y python3.11 python3.11-venv "
        "(then this script uses python3.11)"
    ) in lines
    assert "  - make (builds .venv): sudo apt-get install -y make" in lines
    assert any(
        line.startswith("  - redis-server (no Redis answers at REDIS_URL=redis://127.0.0.1:")
        and line.endswith("sudo apt-get install -y redis-server, or set REDIS_URL")
        for line in lines
    )
    assert any(line.startswith("  - vLLM importable by 'python': pip install vllm") for line in lines)
    assert not list(tmp_path.glob("prefill-gpu-check.*")), "nothing may start before the check passes"


def test_a_newer_python_beside_an_old_python3_is_used_and_its_missing_venv_named(tmp_path):
    bin_dir = sandbox(
        tmp_path,
        python3=PYTHON_310,
        **{"python3.11": PYTHON_311_NO_VENV, "make": "exit 0", "redis-server": "exit 0"},
    )
    result = run_check(tmp_path, bin_dir, ENGINE_URL="http://127.0.0.1:9")
    assert result.returncode == 2
    assert result.stderr.splitlines()[1:] == [
        "  - Python's venv module for python3.11: sudo apt-get install -y python3.11-venv"
    ]


def test_a_redis_that_answers_needs_no_redis_server(tmp_path, private_redis):
    bin_dir = sandbox(tmp_path, python3=PYTHON_311_NO_VENV, make="exit 0")
    result = run_check(tmp_path, bin_dir, ENGINE_URL="http://127.0.0.1:9", REDIS_URL=private_redis["url"])
    assert result.stderr.splitlines()[1:] == [
        "  - Python's venv module for python3: sudo apt-get install -y python3-venv"
    ]
