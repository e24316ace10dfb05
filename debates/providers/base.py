"""Plain values shared by every model provider: configuration, request, response, errors.

No Django import and no network here; ``registry.complete`` is the entry point that
turns a ``ProviderConfig`` and a ``ModelRequest`` into a ``ModelResponse`` or raises a
``ProviderError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from debates.providers.capabilities import Capabilities
from debates.providers.catalog import PROVIDERS, capabilities_for

REQUEST_KINDS = ("turn", "vote", "judge_summary", "judge_scores")
JUDGE_KINDS = ("judge_summary", "judge_scores")


@dataclass(frozen=True, repr=False)
class ProviderConfig:
    """How to reach one AI model: provider id, model name, key and per-model overrides.

    Empty ``base_url`` or ``model_name`` mean the provider's default (see
    ``catalog.PROVIDERS``). ``max_tokens`` bounds the answer: a reasoning model is sent
    more (``Capabilities.output_cap``). ``timeout_s`` is the whole call's deadline,
    retries included. ``output_mode`` is the form of the output contract the model is
    asked for (``debates.engine.contract``): ``json_schema`` has the server decode under
    the contract's JSON schema. ``capabilities`` are what the model accepts and reports
    (``capabilities.Capabilities``); None means the catalogue's for the model.
    """

    provider: str
    model_name: str
    api_key: str = ""
    base_url: str = ""
    temperature: float = 0.7
    max_tokens: int = 2000
    timeout_s: float = 60.0
    output_mode: str = "tagged"
    capabilities: Capabilities | None = None

    def __repr__(self) -> str:
        key = "'***'" if self.api_key else "''"
        return (
            f"ProviderConfig(provider={self.provider!r}, model_name={self.model_name!r}, "
            f"api_key={key}, base_url={self.base_url!r}, temperature={self.temperature!r}, "
            f"max_tokens={self.max_tokens!r}, timeout_s={self.timeout_s!r}, "
            f"output_mode={self.output_mode!r})"
        )

    @property
    def effective_base_url(self) -> str:
        """Return the base URL to call: the override, else the provider's default, no '/' end."""
        info = PROVIDERS.get(self.provider)
        base = self.base_url or (info.default_base_url if info else "")
        return base.rstrip("/")

    @property
    def effective_model(self) -> str:
        """Return the model name to send: the configured one, else the provider's default."""
        info = PROVIDERS.get(self.provider)
        return self.model_name or (info.default_model if info else "")

    @property
    def effective_capabilities(self) -> Capabilities:
        """Return the capabilities requests are built from: the configured ones, else
        the catalogue's for the model."""
        if self.capabilities is not None:
            return self.capabilities
        return capabilities_for(self.provider, self.effective_model)


@dataclass(frozen=True)
class Position:
    """A participant's latest position on one coin, as the debate so far shows it."""

    participant: str
    action: str
    confidence: float


@dataclass(frozen=True)
class ModelRequest:
    """One model call: the prompt plus the structured context the simulated model reads.

    ``snapshot`` is ``MarketSnapshot.to_dict()`` output; ``prior_actions`` maps each
    symbol to the actions the other participants took in earlier messages, oldest first
    (for a judge's summary: the actions of the round summarised). ``participant`` is the
    speaker's label (``P1``) and ``positions`` maps each symbol to every participant's
    latest answered position on it, the speaker's own included, as its prompt shows
    them. ``labels`` names the participants a judge scores. ``sample`` numbers the
    independent answers asked of one prompt (a backtest's budget-matched baseline, from
    1); a debate's own calls are 0.
    """

    system: str
    user: str
    kind: str = "turn"
    personality: str = "analyst"
    round: int = 1
    max_rounds: int = 3
    symbols: tuple[str, ...] = ()
    snapshot: dict[str, Any] | None = None
    prior_actions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    seed: int = 0
    participant: str = ""
    positions: Mapping[str, tuple[Position, ...]] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    sample: int = 0

    def __post_init__(self) -> None:
        if self.kind not in REQUEST_KINDS:
            raise ValueError(f"kind must be one of {REQUEST_KINDS}, not {self.kind!r}")
        object.__setattr__(self, "symbols", tuple(self.symbols))
        object.__setattr__(self, "labels", tuple(self.labels))


@dataclass(frozen=True)
class ModelResponse:
    """What a model answered, with the figures stored on each message and vote.

    ``finish_reason`` is normalised to ``stop`` or ``length`` when the provider says so
    (``length``: the output was cut at the output cap sent), else the provider's own
    value.
    ``cached``: the answer came from the model-call cache, with no call made.
    ``prompt_tokens`` counts every input token; ``cached_input_tokens`` of them were
    served from the provider's prompt cache and ``cache_write_tokens`` were written to
    it (Anthropic bills both at their own prices), as the provider reported.
    ``completion_tokens`` counts every output token billed; ``reasoning_tokens`` of them
    were spent reasoning, where the provider says.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    request_id: str
    provider: str
    model: str
    attempts: int
    simulated: bool = False
    finish_reason: str = ""
    cached: bool = False
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


class ProviderError(Exception):
    """A model call that did not produce a usable answer.

    ``code`` is a stable short string (``rate_limited``, ``server_error``,
    ``transport_error``, ``deadline_exceeded``, ``auth_failed``, ``forbidden``,
    ``not_found``, ``bad_request``, ``malformed_response``, ``config_error``, ...),
    ``retryable`` says whether trying again later may succeed, ``status`` is the HTTP
    status when there was one. The message never contains an API key, nor what a
    provider wrote in an error answer: that is ``upstream``, for the log only.
    """

    retryable = False
    upstream = ""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        attempts: int = 0,
        secrets: Iterable[str] = (),
    ) -> None:
        self.message = redact(message, secrets)
        self.code = code
        self.status = status
        self.attempts = attempts
        super().__init__(self.message)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"attempts={self.attempts!r}, message={self.message!r})"
        )


class RetryableProviderError(ProviderError):
    """A transient failure (429, 5xx, transport): a later attempt may succeed."""

    retryable = True


class TerminalProviderError(ProviderError):
    """A failure that repeating the same call cannot fix (4xx, malformed answer, config)."""

    retryable = False


class DeadlineExceeded(RetryableProviderError):
    """The call's deadline passed before an answer arrived (a hang, a trickle, retries)."""

    def __init__(self, message: str, *, attempts: int = 0, status: int | None = None) -> None:
        super().__init__(message, code="deadline_exceeded", status=status, attempts=attempts)


_MASK = "[redacted]"
# Shapes of credentials that providers echo back in error bodies, whatever the key was.
_SECRET_PATTERNS = (
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"\b(?:sk|pk|rk|xai|key)-[A-Za-z0-9_*-]{6,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{20,}"),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with every given secret, and anything shaped like a key, masked.

    A secret is also masked when only its first 8 characters appear, since providers
    often echo a truncated key ("Incorrect API key provided: sk-abcdef12****").
    """
    for secret in secrets:
        # Shorter strings are not real keys and masking them would shred the message.
        if len(secret) < 4:
            continue
        text = text.replace(secret, _MASK)
        if len(secret) >= 12:
            text = text.replace(secret[:8], _MASK)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_MASK, text)
    return text
