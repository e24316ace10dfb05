"""Model providers: one entry point, ``complete``, over every supported model API.

See ``registry`` (the entry point and the provider table), ``base`` (config, request,
response, errors), ``slots`` (the cross-process cap on calls in flight) and
``simulated`` (the built-in deterministic model).
"""

from debates.providers.base import (
    DeadlineExceeded,
    ModelRequest,
    ModelResponse,
    ProviderConfig,
    ProviderError,
    RetryableProviderError,
    TerminalProviderError,
)
from debates.providers.registry import PROVIDERS, complete

__all__ = [
    "PROVIDERS",
    "DeadlineExceeded",
    "ModelRequest",
    "ModelResponse",
    "ProviderConfig",
    "ProviderError",
    "RetryableProviderError",
    "TerminalProviderError",
    "complete",
]
