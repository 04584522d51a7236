"""The one settings class: the only reader of environment variables (prefix ``CHATMON_``).

Built in ``main()``, never at import. A TOML or JSON config file named by ``CHATMON_CONFIG``
(or ``--config``) supplies defaults that environment variables override.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipeline.errors import ConfigError


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CHATMON_", frozen=True, extra="forbid")

    database_url: str = "sqlite:///chatmon.db"
    # Detectors to run, in order (empty: every registered detector), and per-detector options
    # passed to their factories.
    detectors: tuple[str, ...] = ()
    detector_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # Policy: a finding whose score reaches its label's threshold is "flagged". Labels not listed
    # fall back to their detector's entry, then to "default". Shipped: pipeline/policy/*.json.
    thresholds: dict[str, float] = Field(default_factory=dict)
    # A policy file (TOML: global, per-tenant and per-bot thresholds, allow-list entries;
    # docs/review.md). Its global thresholds sit under `thresholds` above.
    policy_file: Path | None = None

    max_text_chars: int = 20_000
    # 32: at full load on 2 cores a batch of 32 is done in about 70 ms (p99 about 110 ms) and
    # gives more turns/s than 64 (BENCHMARKS.md).
    batch_size: int = 32
    history_turns: int = 20
    # The language of turns that carry no `lang` (nor does their conversation): detectors whose
    # models read only other languages skip them. None: unknown, every detector scores them.
    default_lang: str | None = "en"
    # Without a `lang` tag, a turn whose text is surely another language counts as that one
    # (pipeline/scoring/language.py).
    detect_language: bool = True
    model_dir: Path = Path("models")
    # The shared MiniLM encoder: "onnx-int8" (exported once, cached in ~/.cache/chatmon/onnx)
    # or "torch" (the reference; see BENCHMARKS.md / QUALITY.md for speed and accuracy).
    encoder_backend: Literal["onnx-int8", "torch"] = "onnx-int8"
    # The PII detector's Presidio analyser in a child process of its own, beside the GIL the
    # encoder and the other detectors share (same findings; docs/benchmarks.md). None: on when
    # the machine has two cores or more. A `process` key in detector_options.pii wins.
    pii_process: bool | None = None
    # On: `chatmon run` on a file reads the next batch before scoring this one, and the encoder
    # starts on it on the core the GIL-bound detectors leave (same findings; a record then
    # waits up to a batch longer; docs/benchmarks.md). Off by default: it helped only where the
    # encoder is the bottleneck (an AVX2-only CPU), cost CPU on AVX-512 VNNI and doubled p99.
    read_ahead: bool = False

    # Raw text is never stored unless a team opts in, and then only for this many days.
    keep_raw_text: bool = False
    raw_retention_days: int = 7
    # Data lifecycle (docs/privacy.md#data-lifecycle; retention itself is in the policy file):
    # serve and worker purge expired rows this often (and at start), and apply new deletion
    # records (chatmon purge) to their in-memory state and Kafka tables this often.
    purge_interval_s: float = Field(default=3600.0, gt=0)
    deletion_poll_s: float = Field(default=30.0, gt=0)
    # A turn the redaction stage's PII analyser fails on (alone too) is never stored as written:
    # "mask" stores it fully masked with its findings, "dead_letter" stores a dead letter
    # without its text instead (docs/privacy.md).
    redaction_failure: Literal["mask", "dead_letter"] = "mask"

    serve_token: SecretStr | None = None
    # `chatmon probe`: the key sent to the bot under test (`--api-key-env` names another variable).
    probe_api_key: SecretStr | None = None
    # `chatmon judge`: the key sent to the judge endpoint (`--api-key-env` names another variable).
    judge_api_key: SecretStr | None = None
    metrics_port: int | None = None
    # Embedded alerting (pipeline/alerts/): on when a webhook is configured. Rules, thresholds
    # and severities live in pipeline/alerts/rules.py; alert_rules overrides numbers per rule.
    alert_webhook_url: SecretStr | None = None
    alert_webhook_format: Literal["json", "slack", "pagerduty"] = "json"
    alert_slack_webhook_url: SecretStr | None = None
    alert_pagerduty_routing_key: SecretStr | None = None
    alert_pagerduty_url: str = "https://events.pagerduty.com/v2/enqueue"
    alert_cooldown_s: float = 300.0
    alert_eval_interval_s: float = 5.0
    alert_rules: dict[str, dict[str, float]] = Field(default_factory=dict)
    log_level: str = "WARNING"
    # `chatmon report`: a bot, model or user group with fewer replies than this in the window is
    # listed as "too few replies" instead of drawn (its interval would be noise).
    report_min_replies: int = Field(default=20, ge=1)
    # `chatmon dashboards push`: Grafana's URL and a service-account token (Editor or Admin).
    grafana_url: str | None = None
    grafana_token: SecretStr | None = None

    # OpenTelemetry GenAI traces in (POST /v1/traces; docs/otel.md): the span or resource
    # attributes that name a conversation after gen_ai.conversation.id and session.id (e.g.
    # langfuse.session.id), the bot and the tenant, and the attributes copied into metadata
    # (none unless listed: span attributes can hold anything).
    otel_conversation_attributes: tuple[str, ...] = ()
    otel_bot_attribute: str = "service.name"
    otel_tenant_attribute: str | None = None
    otel_metadata_attributes: tuple[str, ...] = ()
    # Exporters batch up to 512 spans and each repeats its conversation: the Collector's OTLP
    # receiver allows 20 MiB, and so does chatmon (compressed and inflated alike).
    otel_max_body_bytes: int = Field(default=20 * 1024 * 1024, gt=0)

    kafka_bootstrap: str = "127.0.0.1:9092"
    # Kafka workers (chatmon worker / produce / topics; CLI flags override these).
    kafka_group: str = "chatmon"
    kafka_turns_topic: str = "turns"
    kafka_phrases_topic: str = "phrases"
    kafka_dlq_topic: str = "turns.dlq"
    kafka_partitions: int = 8
    kafka_batch_within_s: float = 0.5
    kafka_session_timeout_s: float = 30.0
    # Bytes; 1 puts every record in a batch of its own. tansu (the broker we ship with) reports
    # a partition's end offset as the start of its last batch + 1, so after a restart faust's
    # Table recovery stopped before the last records of a multi-record batch and a worker saw a
    # shorter conversation history (docs/kafka.md). Raise it on Apache Kafka for throughput.
    kafka_producer_max_batch_size: int = 1
    worker_web_port: int = 6066
    # The OTLP topic the OpenTelemetry Collector's Kafka exporter writes (its default is
    # otlp_spans), and its encoding; unset: the worker reads no OTLP (docs/otel.md).
    kafka_otlp_topic: str | None = None
    kafka_otlp_encoding: Literal["otlp_proto", "otlp_json"] = "otlp_proto"

    def enabled_detectors(self) -> tuple[str, ...]:
        from detectors.registry import REGISTRY

        return self.detectors or tuple(REGISTRY)

    def scoring_options(self) -> dict[str, dict[str, Any]]:
        """``detector_options`` for the scoring suites of a run, serve or worker: with the PII
        analyser's ``process`` option from ``pii_process`` unless the options set it."""
        out = {name: dict(opts) for name, opts in self.detector_options.items()}
        process = self.pii_process if self.pii_process is not None else (os.cpu_count() or 1) > 1
        out.setdefault("pii", {}).setdefault("process", process)
        return out


def secret_from_env(name: str) -> SecretStr | None:
    """A secret from the environment variable ``name`` (for options that let a user name the
    variable, e.g. ``chatmon probe --api-key-env OPENAI_API_KEY``); None when unset or empty."""
    value = os.environ.get(name, "")
    return SecretStr(value) if value else None


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings from (lowest to highest) the shipped defaults, a config file, the
    environment, and explicit overrides (CLI flags)."""
    file_values: dict[str, Any] = {}
    if config_file is not None:
        try:
            text = config_file.read_text()
            file_values = tomllib.loads(text) if config_file.suffix == ".toml" else json.loads(text)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc}") from exc
    try:
        env_settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except Exception as exc:  # pydantic's ValidationError names the bad variable
        raise ConfigError(str(exc)) from exc
    if not file_values:
        return env_settings
    # Environment and overrides win over the file: only fill fields the env did not set.
    merged = {**file_values, **env_settings.model_dump(exclude_unset=True)}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**merged)
    except Exception as exc:
        raise ConfigError(f"{config_file}: {exc}") from exc
