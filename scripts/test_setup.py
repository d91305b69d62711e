"""Before the suite: make sure the tools the tests drive are present, and say loudly what is not.

- docker-compose (Debian's package) validates docker-compose.yml; installed here when missing
  and we may use apt-get.
- chromium drives the browser tests; without it they are skipped, which this prints in capitals.
"""

import os
import shutil
import subprocess
import sys


def _apt_install(package: str) -> bool:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    print(f"Installing Debian package {package} for the tests…", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run(
        ["apt-get", "install", "-y", "-q", package], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
        result = subprocess.run(
            ["apt-get", "install", "-y", "-q", package], env=env, capture_output=True, text=True, check=False
        )
    return result.returncode == 0


def main() -> None:
    if shutil.which("docker-compose") is None and not _apt_install("docker-compose"):
        print(
            "docker-compose is missing and could not be installed: `sudo apt-get install docker-compose`.",
            file=sys.stderr,
        )
        sys.exit(1)
    chromium = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        print(f"Browser tests will run with {chromium}.", flush=True)
    else:
        print(
            "\n" + "!" * 78 + "\n!! NO CHROMIUM FOUND: THE BROWSER TESTS WILL BE SKIPPED.\n"
            "!! Install it with `sudo apt-get install chromium` (CI installs it itself).\n" + "!" * 78 + "\n",
            flush=True,
        )


if __name__ == "__main__":
    main()
