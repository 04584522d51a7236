"""Catalogue terms for the SGD dialogues of cs-transcripts, for ``chatmon eval benign``.

SGD annotates each utterance's slot values with their offsets. The values of the slots that
name things (titles, songs, albums, artists, events, venues, hotels, restaurants, properties,
cars, films, attractions, theatres) are a conversation's catalogue terms. This writes, into a
folder of your choice (never into the project), ``replay_turns.jsonl`` (a symbolic link to the
source) and ``terms.json`` keyed by the conversation ids that ``chatmon
eval benign`` gives the replayed conversations:

    python scripts/sgd_catalogue_terms.py ../shared/evaldata/cs-transcripts /tmp/sgd-terms
    chatmon eval benign /tmp/sgd-terms --json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SLOTS = frozenset({"title", "song_name", "album", "artist", "event_name", "venue",
                   "hotel_name", "restaurant_name", "property_name", "car_name", "movie_name",
                   "attraction_name", "theater_name"})


def main(source: Path, out: Path) -> None:
    dialogues = json.loads((source / "sgd_sample.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in
            (source / "replay_turns.jsonl").read_text(encoding="utf-8").splitlines() if line]
    out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    terms: dict[str, list[str]] = {}
    sgd = iter(dialogues)
    for i, row in enumerate(rows):
        cid = f"{row.get('source', 'replay')}-{row.get('conversation_id', i)}"
        cid = f"{cid}~{i}" if cid in seen else cid  # as pipeline/bench/corpus.py names them
        seen.add(cid)
        if row.get("source") != "sgd":
            continue
        dialogue = next(sgd)
        if dialogue["dialogue_id"] != row["conversation_id"]:
            raise SystemExit(f"line {i}: the replay and the SGD sample are not in one order")
        found = {t["utterance"][s["start"]:s["exclusive_end"]]
                 for t in dialogue["turns"] for f in t["frames"] for s in f["slots"]
                 if s["slot"] in SLOTS}
        terms[cid] = sorted(found)
    link = out / "replay_turns.jsonl"
    if not link.is_symlink():
        link.symlink_to((source / "replay_turns.jsonl").resolve())
    (out / "terms.json").write_text(json.dumps(terms, indent=1, sort_keys=True))
    print(f"{out}: {len(terms)} conversations, {sum(map(len, terms.values()))} terms")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
