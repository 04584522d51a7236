"""Logging set-up. chatmon never logs transcript text or secrets; some libraries do at DEBUG
(presidio logs the text it analyses, httpcore the headers it sends), so their loggers are held at
WARNING whatever level chatmon runs at."""

from __future__ import annotations

import logging

TEXT_LOGGING_LIBRARIES = ("presidio-analyzer", "presidio-anonymizer", "presidio_analyzer",
                          "presidio_anonymizer", "spacy", "transformers", "urllib3", "faust",
                          "aiokafka", "kafka", "mode", "sqlalchemy.engine",
                          # the probe's HTTP client: request lines and headers at DEBUG
                          "httpx", "httpcore")


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in TEXT_LOGGING_LIBRARIES:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
