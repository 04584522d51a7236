"""Reproduce the sample comparison in docs/probe.md: the scripted bot of the probe tests
(a warm model and a templated one behind one chat-completions endpoint on a loopback port),
probed with the built-in suite, then ``chatmon compare``.

    .venv/bin/python scripts/probe_demo.py [--db /tmp/probe_demo.db] [--suite FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from pipeline.cli import cli  # noqa: E402
from tests.probe.scripted_bot import ScriptedBot  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=Path("/tmp/probe_demo.db"))
    ap.add_argument("--suite", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.db.unlink(missing_ok=True)
    env = {"CHATMON_DATABASE_URL": f"sqlite:///{args.db}"}
    suite = ["--suite", str(args.suite)] if args.suite else []
    with ScriptedBot() as bot:
        for model in ("warm-1", "templated-1"):
            res = CliRunner().invoke(cli, ["probe", "--endpoint", bot.url, "--model", model,
                                           "--json", *suite], env=env)
            out = json.loads(res.stdout)
            print(f"{model}: {out['conversations_stored']} conversations, "
                  f"{out['turns_stored']} turns, failed {len(out['failed'])}", file=sys.stderr)
    res = CliRunner().invoke(cli, ["compare", "--model", "warm-1", "--model", "templated-1"],
                             env=env)
    print(res.stdout)


if __name__ == "__main__":
    main()
