"""The image's HEALTHCHECK: healthy when chatmon's HTTP server answers /health, the worker's
(CHATMON_WORKER_WEB_PORT, 6066) or chatmon serve's (8080, or the port given as argv[1])."""

import os
import sys
import urllib.request

ports = [os.environ.get("CHATMON_WORKER_WEB_PORT", "6066"), *sys.argv[1:2], "8080"]
for port in dict.fromkeys(ports):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=4) as resp:
            if resp.status == 200:
                sys.exit(0)
    except OSError:
        continue
sys.exit(1)
