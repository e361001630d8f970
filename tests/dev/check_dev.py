"""Checks of ./dev itself, run on the host by './dev test' (stdlib only, any Python 3).

They cannot run inside the environment, because ./dev is what builds and enters
it. Each check prints one line; the script ends with the plain closing line
'N passed, N failed' and exits non-zero if any check failed.

  - './dev run' passes the command's own exit code through;
  - './dev run' runs Python 3.14 with interp_rpc and interp_rpc._core importable;
  - './dev lab --port P' serves JupyterLab: /api/kernelspecs answers with the
    token it printed and lists the "Python (interp-rpc)" kernel, and a SIGTERM
    to ./dev alone stops the lab too (no orphaned jupyter-lab);
  - './dev test --repeat N' reruns the given tests N times and stops at the
    first failing run; a bad --repeat value is refused;
  - no mount is left under the root cache after any of these commands.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEV = str(REPO / "dev")
CACHE = os.environ.get("INTERP_RPC_CACHE", "/var/cache/interp-rpc")
#: A quick test file for the --repeat checks.
QUICK_TEST = "tests/interp_rpc/pool/test_package.py"


def mounts_under(prefix: str) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == prefix or p.startswith(prefix.rstrip("/") + "/")]


def check_exit_code_passthrough() -> None:
    proc = subprocess.run([DEV, "run", "--", "sh", "-c", "exit 7"], capture_output=True)
    assert proc.returncode == 7, f"expected exit code 7, got {proc.returncode}"


def check_python_314() -> None:
    code = "import sys, interp_rpc, interp_rpc._core; print(sys.version)"
    proc = subprocess.run(
        [DEV, "run", "--", "python3", "-c", code], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("3.14."), f"not Python 3.14: {proc.stdout!r}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def fetch_json(url: str, token: str) -> dict[str, object]:
    """GET with the token, retrying while the server is still coming up."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answer: dict[str, object] = json.load(response)
                return answer
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionError) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def check_lab_serves_kernelspecs() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [DEV, "lab", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    url_pattern = re.compile(rf"http://127\.0\.0\.1:{port}/lab\?token=([0-9a-f]+)")
    log: list[str] = []
    token = None
    deadline = time.monotonic() + 120
    try:
        while token is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            log.append(line)
            match = url_pattern.search(line)
            if match:
                token = match.group(1)
        assert token, "./dev lab printed no URL with a token:\n" + "".join(log[-30:])
        specs = fetch_json(f"http://127.0.0.1:{port}/api/kernelspecs", token)
        assert "kernelspecs" in specs, specs
        assert "python3" in specs["kernelspecs"], sorted(specs["kernelspecs"])
        kernelspec = specs["kernelspecs"]["interp-rpc"]["spec"]
        assert kernelspec["display_name"] == "Python (interp-rpc)", kernelspec
    finally:
        # SIGTERM to ./dev alone, as `kill PID` does: the lab it started must
        # stop with it, not live on as an orphan.
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("./dev lab did not stop within 30 s of SIGTERM") from None
    # The whole process group must be gone: no lab server left behind.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("a process of ./dev lab (jupyter-lab) survived SIGTERM to ./dev")


def check_missing_native_toolchain_is_explained() -> None:
    # This host has no Python 3.14 toolchain (root mode builds its own), so
    # forcing native mode must stop with a list of what is missing.
    proc = subprocess.run([DEV, "env"], capture_output=True, text=True,
                          env={**os.environ, "INTERP_RPC_MODE": "native"})
    if proc.returncode == 0:
        return  # a host that can build natively: nothing to explain
    assert proc.returncode == 2, proc.returncode
    assert "INTERP_RPC_MODE=native, but the host lacks:" in proc.stderr, proc.stderr
    assert "python3 >= 3.14" in proc.stderr or "Python module" in proc.stderr, proc.stderr


def check_repeat_reruns_and_stops_at_first_failure() -> None:
    passing = subprocess.run([DEV, "test", "--repeat", "2", QUICK_TEST],
                             capture_output=True, text=True)
    assert passing.returncode == 0, passing.stdout[-2000:] + passing.stderr[-2000:]
    assert "pytest run 2/2" in passing.stdout, passing.stdout[-2000:]
    assert "pytest, 2 runs in a row" in passing.stdout, passing.stdout[-2000:]
    # A selection that matches no test fails (pytest's exit 5), so the first
    # run fails and the other two never start.
    failing = subprocess.run([DEV, "test", "--repeat", "3", QUICK_TEST,
                              "-k", "no_test_has_this_name"], capture_output=True, text=True)
    assert failing.returncode != 0, failing.stdout[-2000:]
    assert "pytest run 1/3" in failing.stdout, failing.stdout[-2000:]
    assert "pytest run 2/3" not in failing.stdout, failing.stdout[-2000:]
    refused = subprocess.run([DEV, "test", "--repeat", "0"], capture_output=True, text=True)
    assert refused.returncode == 2, (refused.returncode, refused.stderr[-2000:])
    assert "--repeat takes a number of runs" in refused.stderr, refused.stderr[-2000:]


def dev_env(apt_dir: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "INTERP_RPC_MIRROR"}
    env.update(INTERP_RPC_APT_SOURCES=str(apt_dir), **extra)
    return subprocess.run([DEV, "env"], capture_output=True, text=True, env=env)


def check_mirror_comes_from_host_apt_sources() -> None:
    """The root's mirror is the Debian archive of the host's apt sources, in
    either format; INTERP_RPC_MIRROR overrides it; none found is explained."""
    mode = subprocess.run([DEV, "env"], capture_output=True, text=True).stdout
    if "mode:  root" not in mode:
        return  # native mode builds no root and needs no mirror
    with tempfile.TemporaryDirectory() as tmp:
        apt = Path(tmp)
        (apt / "sources.list.d").mkdir()
        # deb-src, a security suite and another project's repository come first.
        (apt / "sources.list").write_text(
            "deb-src http://src.example.test/debian sid main\n"
            "deb http://security.example.test/debian-security bookworm-security main\n")
        (apt / "sources.list.d" / "other.list").write_text(
            "deb [arch=amd64 signed-by=/k.gpg] https://other.example.test/apt stable main\n")
        (apt / "sources.list.d" / "debian.sources").write_text(
            "Types: deb-src\nURIs: http://wrong.example.test/debian\nSuites: sid\n\n"
            "Types: deb\nURIs: http://mirror.example.test/debian/\nSuites: bookworm\n")
        found = dev_env(apt)
        assert found.returncode == 0, found.stderr[-2000:]
        assert "mirror: http://mirror.example.test/debian\n" in found.stdout, found.stdout
        (apt / "sources.list.d" / "debian.sources").unlink()
        (apt / "sources.list").write_text(
            "deb [signed-by=/k.gpg] http://one-line.example.test/debian/ sid main\n")
        found = dev_env(apt)
        assert "mirror: http://one-line.example.test/debian\n" in found.stdout, found.stdout
        chosen = dev_env(apt, INTERP_RPC_MIRROR="http://chosen.example.test/debian")
        assert "mirror: http://chosen.example.test/debian\n" in chosen.stdout, chosen.stdout
        (apt / "sources.list").write_text("")
        missing = dev_env(apt)
        assert missing.returncode == 2, (missing.returncode, missing.stdout)
        assert "set INTERP_RPC_MIRROR" in missing.stderr, missing.stderr


def check_no_leaked_mounts() -> None:
    leaked = mounts_under(CACHE)
    assert not leaked, f"mounts survived ./dev commands: {leaked}"


CHECKS: list[Callable[[], None]] = [
    check_exit_code_passthrough,
    check_python_314,
    check_lab_serves_kernelspecs,
    check_missing_native_toolchain_is_explained,
    check_repeat_reruns_and_stops_at_first_failure,
    check_mirror_comes_from_host_apt_sources,
    check_no_leaked_mounts,
]


def main() -> int:
    print("\n=== checks of ./dev (on the host)", flush=True)
    passed = failed = 0
    for check in CHECKS:
        try:
            check()
        except Exception as exc:  # report every failing check, not just the first
            failed += 1
            print(f"  FAILED  {check.__name__}: {exc}", flush=True)
        else:
            passed += 1
            print(f"  ok      {check.__name__}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
