"""Fresh-phrasing check for the PII detector: support-chat sentences from templates written for
chatmon (not the eval set's), filled with Faker values, written in presidio-research's layout so
``chatmon eval presidio-synth`` scores them (docs/models/pii.md, "Fresh phrasing").

    pip install -c constraints.txt faker
    python -m pipeline.training.pii_synth --out /tmp/pii-fresh   # writes synth_dataset_v2.json
    chatmon eval presidio-synth /tmp/pii-fresh --json

The templates were written before either detector version was scored on them, and nothing was
tuned on them afterwards; they are a check, not training data. Person names come half from
locales whose names ``detectors/pii/data/first_names.txt`` was built from and half from locales
it was not (Azerbaijani, Yoruba, Zulu, Hausa, Igbo, Swahili, Uzbek): the second half measures
names the list does not hold. Deterministic for a given ``--seed`` and Faker version.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

LIST_LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL", "pt_BR",
                "sv_SE")
OTHER_LOCALES = ("az_AZ", "yo_NG", "zu_ZA", "ha_NG", "ig_NG", "sw", "uz_UZ")
TEMPLATES = (
    "hey, it's {PERSON} again, the parcel still hasn't shown up",
    "{PERSON} here. I was charged twice for the same order",
    "can you put {PERSON} on the account as a second user?",
    "the delivery guy left it with {PERSON} next door",
    "I'm writing on behalf of my mum, {PERSON}, who can't use the app",
    "{FIRST} told me you could sort out the refund today",
    "please cancel the subscription for {FIRST}, she moved out",
    "who is {PERSON}? that name is on my invoice and I don't know them",
    "the technician, {FIRST}, never turned up",
    "ok so {FIRST} and {FIRST2} both need access to the shared folder",
    "text me at {PHONE} when the engineer is on the way",
    "my new mobile is {PHONE}",
    "you can ring {PHONE} any time after 5",
    "best number to get me on: {PHONE}",
    "{PHONE} is my work line, use that one",
    "the courier tried calling {PHONE} but I was in a meeting",
    "I changed numbers, it's {PHONE} now",
    "whatsapp works better for me, {PHONE}",
    "I'm flying to {CITY} on Friday, will the roaming work there?",
    "we relocated to {CITY} last month",
    "the store in {CITY} refused to take the return",
    "is the service available in {COUNTRY}?",
    "I'm travelling around {COUNTRY} for two weeks",
    "my bank is in {COUNTRY}, will that be a problem?",
    "the package is stuck in customs in {COUNTRY}",
    "it was sent from {CITY}, {COUNTRY} three weeks ago",
    "please send the replacement to {ADDRESS}",
    "new address: {ADDRESS}",
    "the box went to {ADDRESS} instead of my flat",
    "I'm at {ADDRESS}, the buzzer doesn't work so call me",
    "my billing address is still {ADDRESS}, please update it",
    "{PERSON}, {ADDRESS}, {CITY}",
    "Order for {PERSON}, deliver to {ADDRESS}. Phone {PHONE}",
    "{FIRST} said the parcel was left at {ADDRESS}",
    "you can email {PERSON} at {EMAIL} about the contract",
    "I moved from {CITY} to {CITY2} and now nothing works",
    "the invoice number is INV-{DIGITS} and it was paid in {YEAR}",
    "my order 4{DIGITS} arrived damaged",
    "thanks, the app works fine now",
    "I was on hold for {MINUTES} minutes yesterday",
)
# Set "b", written after version 1.2.0's first changes and scored once per version (see the
# model card): other phrasings, more lowercase and list-like turns.
TEMPLATES_B = (
    "so {FIRST} from your team promised a callback, never happened",
    "pls transfer the licence to {PERSON}",
    "{PERSON} and {PERSON2} are the two admins on our plan",
    "my husband {FIRST} set this up, I don't have his login",
    "could {FIRST} from billing ring me back?",
    "the reviewer was {PERSON}, according to the email",
    "{FIRST} here, quick question about my bill",
    "this is about my late father's account, {PERSON}",
    "ask for {FIRST} at reception",
    "I spoke to {PERSON} last week and she said it was fixed",
    "number's {PHONE} if you need it",
    "{PHONE} - that's my husband's, please don't use it",
    "if it's urgent try {PHONE}",
    "call back on {PHONE} please",
    "I've got two numbers, {PHONE} and {PHONE2}",
    "reach me on my cell {PHONE} between 9 and 5",
    "sms to {PHONE} never arrive",
    "contact: {PHONE}",
    "we're opening a second branch in {CITY}",
    "does the warranty cover purchases made in {COUNTRY}?",
    "I'm based near {CITY} so the depot is far",
    "the conference in {CITY} went badly because the app crashed",
    "shipping to {COUNTRY} costs way too much",
    "{CITY} store staff were rude to me",
    "I'll be in {CITY} until the 12th",
    "my parents live in {COUNTRY} and want to use it too",
    "deliver to {ADDRESS} between 8 and 12",
    "address on the account should be {ADDRESS}",
    "return label shows {ADDRESS}, which is wrong",
    "I'm now living at {ADDRESS}",
    "{ADDRESS} - please use this from now on",
    "collection point is {ADDRESS}, {CITY}",
    "my details: {PERSON}, {ADDRESS}, {PHONE}",
    "forward it to {PERSON} at {EMAIL}",
    "{PERSON} ({EMAIL}) needs a copy of the invoice",
    "the update broke sync on version 4.{YEAR}",
    "ticket {DIGITS} still says pending",
    "I paid {MINUTES} euros extra for nothing",
    "why is the Premium plan more expensive than Basic?",
    "my account number is {DIGITS}, can you check it",
)
TEMPLATE_SETS = {"a": TEMPLATES, "b": TEMPLATES_B}


def _faker(locale: str, seed: int) -> Any:
    from faker import Faker

    f = Faker(locale)
    f.seed_instance(seed)
    return f


def _name(fakers: dict[str, Any], rng: random.Random, first: bool) -> str:
    locales = OTHER_LOCALES if rng.random() < 0.5 else LIST_LOCALES
    f = fakers[rng.choice(locales)]
    return str(f.first_name() if first else f"{f.first_name()} {f.last_name()}")


def build(n: int, seed: int = 17, templates: tuple[str, ...] = TEMPLATES) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    fakers = {loc: _faker(loc, seed + i) for i, loc in enumerate(LIST_LOCALES + OTHER_LOCALES)}
    values = {
        "PERSON": ("PERSON", lambda: _name(fakers, rng, first=False)),
        "FIRST": ("PERSON", lambda: _name(fakers, rng, first=True)),
        "FIRST2": ("PERSON", lambda: _name(fakers, rng, first=True)),
        "PERSON2": ("PERSON", lambda: _name(fakers, rng, first=False)),
        "PHONE": ("PHONE_NUMBER", lambda: fakers[rng.choice(LIST_LOCALES)].phone_number()),
        "PHONE2": ("PHONE_NUMBER", lambda: fakers[rng.choice(LIST_LOCALES)].phone_number()),
        "CITY": ("GPE", lambda: fakers[rng.choice(LIST_LOCALES)].city()),
        "CITY2": ("GPE", lambda: fakers[rng.choice(LIST_LOCALES)].city()),
        "COUNTRY": ("GPE", lambda: fakers["en_US"].country()),
        "ADDRESS": ("STREET_ADDRESS",
                    lambda: fakers[rng.choice(LIST_LOCALES)].street_address().replace("\n", ", ")),
        "EMAIL": ("EMAIL_ADDRESS", lambda: fakers["en_US"].email()),
        "DIGITS": (None, lambda: str(rng.randint(1_000_000, 9_999_999))),
        "YEAR": (None, lambda: str(rng.randint(2015, 2025))),
        "MINUTES": (None, lambda: str(rng.randint(5, 90))),
    }
    rows = []
    for i in range(n):
        tid = i % len(templates)
        template = templates[tid]
        text, found = fill(template, values)
        spans = [{"entity_type": entity, "entity_value": text[start:end],
                  "start_position": start, "end_position": end}
                 for start, end, entity in found]
        rows.append({"full_text": text, "masked": template, "spans": spans, "template_id": tid,
                     "metadata": None})
    return rows


Values = dict[str, tuple[str | None, Callable[[], object]]]


def fill(template: str, values: Values) -> tuple[str, list[tuple[int, int, str]]]:
    """The template with each ``{SLOT}`` replaced by its maker's value, in order, and the
    (start, end, entity) of every value whose slot names an entity (None: context only)."""
    text, spans, pos = "", [], 0
    for m in re.finditer(r"\{([A-Z0-9]+)\}", template):
        text += template[pos:m.start()]
        entity, make = values[m.group(1)]
        value = str(make())
        if entity:
            spans.append((len(text), len(text) + len(value), entity))
        text += value
        pos = m.end()
    return text + template[pos:], spans


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for synth_dataset_v2.json")
    ap.add_argument("-n", type=int, default=800)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--templates", choices=sorted(TEMPLATE_SETS), default="a")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    templates = TEMPLATE_SETS[args.templates]
    rows = build(args.n, args.seed, templates)
    (args.out / "synth_dataset_v2.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False),
                                                    encoding="utf-8")
    print(f"{len(rows)} sentences from {len(templates)} templates -> {args.out}")


if __name__ == "__main__":
    main()
