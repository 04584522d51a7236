"""Write synth_dataset_v2.json (presidio-research's layout, for ``chatmon eval presidio-synth``)
from fresh.txt beside it: one record per sentence, each its own template."""

import json
import re
from pathlib import Path

HERE = Path(__file__).parent
MARK = re.compile(r"\[([A-Z_]+):([^\]]+)\]")


def records() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    lines = [x for x in (HERE / "fresh.txt").read_text(encoding="utf-8").splitlines()
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
    rows = records()
    (HERE / "synth_dataset_v2.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False),
                                                encoding="utf-8")
    print(f"{len(rows)} sentences -> {HERE / 'synth_dataset_v2.json'}")
