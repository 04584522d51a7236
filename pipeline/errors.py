"""One root exception with a few typed children."""

from __future__ import annotations


class ChatmonError(Exception):
    """Root of every error chatmon raises on purpose."""


class ConfigError(ChatmonError):
    """Settings or a config file are invalid."""


class MissingExtraError(ChatmonError):
    """An optional dependency is not installed; the message names the extra."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"{module} is not installed; install it with: pip install 'chatmon[{extra}]'"
        )
        self.module = module
        self.extra = extra


class DetectorShapeError(ChatmonError):
    """A detector returned a result list whose length differs from its batch."""


class SinkError(ChatmonError):
    """The store could not be written or read."""


class StoreUnavailable(SinkError):
    """The store cannot be reached or timed out: the same write may succeed later (retry,
    answer 503), unlike a write the store refuses."""


class EvalDataError(ChatmonError):
    """An evaluation folder does not hold the expected files."""
