"""The image's HEALTHCHECK: healthy when chatmon's HTTP server in this container answers /health.

The port is the one chatmon was started with: ``--web-port`` of ``chatmon worker`` (default
CHATMON_WORKER_WEB_PORT, 6066) or ``--port`` of ``chatmon serve`` (default 8080), read from the
command lines of the container's processes; the defaults are tried too."""

import os
import sys
import urllib.request
from pathlib import Path


def ports() -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        for flag in ("--web-port", "--port"):
            if flag in argv[:-1]:
                found.append(argv[argv.index(flag) + 1])
            found += [a.split("=", 1)[1] for a in argv if a.startswith(flag + "=")]
    return [*found, os.environ.get("CHATMON_WORKER_WEB_PORT", "6066"), "8080"]


for port in dict.fromkeys(ports()):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=4) as resp:
            if resp.status == 200:
                sys.exit(0)
    except (OSError, ValueError):
        continue
sys.exit(1)
