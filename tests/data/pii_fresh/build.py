"""Write synth_dataset_v2.json (presidio-research's layout, for ``chatmon eval presidio-synth``)
from the fresh.txt beside it: one record per sentence, each its own template.

Usage: python tests/data/pii_fresh/build.py [FOLDER ...]; with no folder it rebuilds every fresh
set (tests/data/pii_fresh, pii_fresh2, pii_fresh3 and pii_fresh4)."""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
FOLDERS = (HERE, HERE.parent / "pii_fresh2", HERE.parent / "pii_fresh3", HERE.parent / "pii_fresh4",
           HERE.parent / "pii_fresh5", HERE.parent / "pii_fresh6", HERE.parent / "pii_fresh7",
           HERE.parent / "pii_fresh8", HERE.parent / "pii_fresh9")
MARK = re.compile(r"\[([A-Z_]+):([^\]]+)\]")


def records(folder: Path = HERE) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    lines = [x for x in (Path(folder) / "fresh.txt").read_text(encoding="utf-8").splitlines()
             if x.strip() and not x.startswith("#")]
    for tid, line in enumerate(lines):
        text, spans, pos = "", [], 0
        for m in MARK.finditer(line):
            text += line[pos:m.start()]
            spans.append({"entity_type": m.group(1), "entity_value": m.group(2),
                          "start_position": len(text), "end_position": len(text) + len(m.group(2))})
            text += m.group(2)
            pos = m.end()
        text += line[pos:]
        out.append({"full_text": text, "masked": None, "spans": spans, "template_id": tid,
                    "metadata": None})
    return out


if __name__ == "__main__":
    for folder in [Path(a) for a in sys.argv[1:]] or FOLDERS:
        rows = records(folder)
        (folder / "synth_dataset_v2.json").write_text(
            json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"{len(rows)} sentences -> {folder / 'synth_dataset_v2.json'}")
