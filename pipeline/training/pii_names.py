"""Rebuild ``detectors/pii/data/first_names.txt``: the given names the PII detector's
``GivenNameRecognizer`` looks for, from Faker's person providers (MIT; the lists come from
national name statistics) for the locales support bots commonly serve. See docs/models/pii.md.

    pip install -c constraints.txt faker && python -m pipeline.training.pii_names

Kept: names written in Latin letters (with accents), two letters or more, capitalised, and not
an English word that often starts a sentence or is a month, weekday or common noun ("May",
"Will", "Hope", "Summer": ``COMMON_WORDS``, and spaCy's English stop words: "My", "Do").
Nothing here reads any evaluation set.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path

import regex as re

from detectors.pii.names import FIRST_NAMES_FILE

LOCALES = (
    "en_US", "en_GB", "en_IE", "en_AU", "en_CA", "en_NZ", "en_IN", "de_DE", "de_AT", "de_CH",
    "fr_FR", "fr_CA", "es_ES", "es_MX", "it_IT", "pt_BR", "pt_PT", "nl_NL", "nl_BE", "pl_PL",
    "sv_SE", "no_NO", "da_DK", "fi_FI", "cs_CZ", "sk_SK", "hu_HU", "ro_RO", "hr_HR", "sl_SI",
    "tr_TR", "id_ID", "fil_PH", "is_IS", "et_EE", "lv_LV", "lt_LT", "ja_JP", "zh_CN", "zh_TW",
    "vi_VN", "hi_IN", "ga_IE", "es_AR", "es_CO", "es_CL",
)
# Given names that are also everyday English words, months, weekdays or places: as a single
# capitalised word they are far more often the word than the name.
COMMON_WORDS = frozenset(
    """
    april may june july august summer autumn winter spring dawn eve sunny storm rain will bill
    mark pat hope faith joy grace glory charity honor honour mercy patience prudence trinity
    destiny harmony melody unity liberty justice precious angel baby king prince princess queen
    duke earl major rich rusty sandy scott ray rose lily iris ivy holly hazel heather daisy jade
    ruby pearl amber crystal coral olive violet jasmine ginger poppy fern sky river ocean brook
    forest stone flint clay cliff dale glen heath lane chase hunter archer carter cooper mason
    tanner taylor parker miles page piper reed wade drew gene art jack jean guy don van doc
    bud buck chip colt sterling sterling skip rocky penny nova star sonny christian china
    india georgia virginia carolina florida austin dallas houston denver phoenix orlando jordan
    paris sydney london adelaide victoria regina florence lourdes sierra savannah dakota cheyenne
    madison brooklyn camden aurora eden haven london essex kent york avery else long young
    do so to the and or an on in at by of am us me we he she it all ed al
    """.split()  # noqa: SIM905
)
_NAME = re.compile(r"\p{Lu}[\p{Ll}\p{M}]+(?:[-'’]\p{Lu}?[\p{Ll}\p{M}]+)?")


def given_names(locales: tuple[str, ...] = LOCALES) -> list[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # "My", "Do", "Will" as given names

    names: set[str] = set()
    for loc in locales:
        try:
            mod = importlib.import_module(f"faker.providers.person.{loc}")
        except ImportError:
            continue
        prov = mod.Provider
        for attr in ("first_names", "first_names_male", "first_names_female",
                     "first_romanized_names", "first_romanized_names_male",
                     "first_romanized_names_female"):
            values = getattr(prov, attr, ())
            if not isinstance(values, (list, tuple, dict)):
                continue  # some locales compute these (a property), not a list
            for n in values:
                n = str(n).strip()
                low = n.lower()
                if _NAME.fullmatch(n) and low not in COMMON_WORDS and low not in STOP_WORDS:
                    names.add(n)
    return sorted(names)


def write_word_list(doc: str, default: Path, make: Callable[[], list[str]], what: str) -> None:
    """The command line of a shipped word list: ``--out`` (default ``default``), one entry a
    line. ``pii_places`` uses it too."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--out", type=Path, default=default)
    args = ap.parse_args()
    words = make()
    args.out.write_text("\n".join(words) + "\n", encoding="utf-8")
    print(f"{len(words)} {what} -> {args.out}")


def main() -> None:
    write_word_list(__doc__, FIRST_NAMES_FILE, given_names,
                    f"given names from {len(LOCALES)} locales")


if __name__ == "__main__":
    main()
