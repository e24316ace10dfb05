"""A fake model server: real HTTP, OpenAI chat-completions and Anthropic messages formats.

Used by tests (in process, as a context manager or the ``llm_server`` fixture) and by
benchmarks and multi-process tests (``python -m tests.fakes.llm_server --port N``).

Model requests go to any path ending in ``/chat/completions`` (OpenAI format) or
``/messages`` (Anthropic format), so any base URL prefix works. Each request gets the
first matching *rule* (a reply whose ``match`` text, or every one of its texts, occurs in
the prompt), else the next
reply of the *queue*, else the default reply: a valid contract answer for the candidate
coins (``...USDT`` symbols) found in the prompt. A reply can carry a fault: HTTP
errors (429 with ``Retry-After``, 500, 401 echoing the key, ...), ``hang``, ``reset``,
``malformed``, ``truncated`` (answer cut, finish reason ``length``), ``truncated_body``,
``trickle`` (one byte at a time), ``empty`` and ``reasoning_exhausted`` (the output cap
spent on reasoning: empty content, finish reason ``length``). A reply's scripted usage
can say how many input tokens the prompt cache served (``cached_tokens``) and how many
output tokens went to reasoning (``reasoning_tokens``: spent inside the request's output
cap, as a reasoning model spends them, so that as many as the cap or more leave the
answer empty, cut at the cap, like ``reasoning_exhausted``), in the fields the model's
provider uses according to the catalogue (``llm_catalogue``): DeepSeek's
``prompt_cache_hit_tokens``, Kimi's ``cached_tokens``, xAI's reasoning apart from
``completion_tokens``, Anthropic's ``cache_read_input_tokens``. An error reply's
``error_style`` gives Anthropic's 529 ``overloaded_error`` body or Gemini's
list-wrapped error body. The server is strict: it refuses what the real providers refuse
(``llm_catalogue.refusal``), a model neither the catalogue lists nor the server serves of
its own (``local_models``, as a self-hosted server serves its loaded models) included.
``strict=False`` (``{"strict": false}``) answers whatever it is sent, for a test whose
point needs what a provider would refuse.

Every model request is recorded (path, headers, JSON body, arrival time) and the
server tracks the current and the maximum number of model requests in flight: from
arrival until the first byte of the answer is written, or until the client hangs up.
A request whose client has hung up no longer counts when the next one arrives, even if
its handler has not noticed yet (a thread waking a few milliseconds late would
otherwise count a call its client had already given up as still in flight).

Control over HTTP, for other processes:
- ``POST /_control`` with any of ``{"latency_s": 0.2, "replies": [reply, ...],
  "rules": [reply, ...], "clear": true, "reset_stats": true, "default_action": "wait"}``
  where a reply is ``Reply.to_dict()`` (``{"fault": "rate_limit", "retry_after": "1"}``,
  ``{"status": 500}``, ``{"text": "...", "match": "round 2", "times": 1}``, ...);
- ``GET /_stats``: ``{"requests", "in_flight", "max_in_flight", "by_status",
  "queued_replies", "rules", "latency_s", "connections", "billed_calls",
  "billed_tokens"}``: ``billed_*`` count the answers sent whole and their tokens,
  prompt plus completion, as a provider bills them;
- ``GET /_requests``: every recorded model request; ``POST /_reset``: back to the start.
``LLMServerClient`` wraps these calls.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.fakes import llm_catalogue

FAULTS = (
    "hang",
    "reset",
    "malformed",
    "truncated",
    "truncated_body",
    "trickle",
    "empty",
    "reasoning_exhausted",
)
ERROR_STYLES = ("anthropic_overloaded", "gemini_list")
_SYMBOL = re.compile(r"\b[A-Z0-9]{2,20}USDT\b")


@dataclass
class Reply:
    """One scripted answer. ``text`` None means the default contract answer.

    ``status`` other than 200 answers with an error body in the request's format
    (``retry_after`` sets the ``Retry-After`` header; ``echo_auth`` copies the received
    credential into the error message, as some providers do). ``fault`` is one of
    ``FAULTS``; ``delay_s`` adds latency; ``match`` and ``times`` apply to rules (``match``
    a text, or a list of texts that must all occur in the prompt).
    """

    text: str | None = None
    status: int = 200
    fault: str | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    error_message: str = ""
    echo_auth: bool = False
    match: str | list[str] | None = None
    times: int | None = None
    hang_s: float = 60.0
    trickle_interval_s: float = 0.2
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    error_style: str | None = None

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; one of {FAULTS}")
        if self.error_style is not None and self.error_style not in ERROR_STYLES:
            raise ValueError(f"unknown error style {self.error_style!r}; one of {ERROR_STYLES}")

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form accepted by ``POST /_control``."""
        return {k: v for k, v in asdict(self).items() if v != _DEFAULTS[k]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        """Build a reply from its JSON form; ``fault: "rate_limit"``/``"server_error"`` too."""
        data = dict(data)
        fault = data.get("fault")
        if fault == "rate_limit":
            data.pop("fault")
            data.setdefault("status", 429)
            data.setdefault("retry_after", "1")
        elif fault == "server_error":
            data.pop("fault")
            data.setdefault("status", 500)
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown reply fields {sorted(unknown)}")
        return cls(**data)

    @classmethod
    def answer(cls, text: str, **kwargs: Any) -> Reply:
        """Answer with ``text``."""
        return cls(text=text, **kwargs)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "1", **kwargs: Any) -> Reply:
        """Answer 429 with a ``Retry-After`` header."""
        return cls(
            status=429, retry_after=retry_after, error_message="Rate limit reached", **kwargs
        )

    @classmethod
    def server_error(cls, status: int = 500, **kwargs: Any) -> Reply:
        """Answer a 5xx error."""
        return cls(status=status, error_message="The server had an error", **kwargs)

    @classmethod
    def error(cls, status: int, message: str = "", **kwargs: Any) -> Reply:
        """Answer any HTTP error status with an error body."""
        return cls(status=status, error_message=message or f"error {status}", **kwargs)

    @classmethod
    def fault_of(cls, fault: str, **kwargs: Any) -> Reply:
        """Answer with one of ``FAULTS``."""
        return cls(fault=fault, **kwargs)


_DEFAULTS = {f.name: f.default for f in fields(Reply)}


@dataclass
class RecordedRequest:
    """A model request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    arrived_at: float
    wire: str
    prompt: str
    status: int | None = None
    fault: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable form."""
        return asdict(self)


@dataclass
class _State:
    queue: deque[Reply] = field(default_factory=deque)
    rules: list[Reply] = field(default_factory=list)
    latency_s: float = 0.0
    default_action: str = "open_long"
    requests: list[RecordedRequest] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    connections: int = 0
    # Answers sent whole, and their tokens: what a provider would bill.
    billed_calls: int = 0
    billed_tokens: int = 0
    # The connection of each model request counted in flight, by the record's id.
    open: dict[int, socket.socket] = field(default_factory=dict)


def default_answer(prompt: str, action: str = "open_long") -> str:
    """Return a valid contract answer for the candidate coins named in ``prompt``."""
    symbols = list(dict.fromkeys(_SYMBOL.findall(prompt))) or ["BTCUSDT"]
    decisions = [
        {
            "symbol": symbol,
            "action": action,
            "confidence": 70,
            "leverage": 3,
            "position_pct": 0.2,
            "stop_loss": 0.03,
            "take_profit": 0.06,
            "reasoning": f"Fake model: {action} on {symbol}.",
        }
        for symbol in symbols
    ]
    return (
        "<reasoning>\nFake model answer for "
        + ", ".join(symbols)
        + ".\n</reasoning>\n<decision>\n"
        + json.dumps(decisions, indent=2)
        + "\n</decision>\n"
    )


class FakeLLMServer:
    """The server, run in a background thread; use as a context manager or start/stop."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        latency_s: float = 0.0,
        strict: bool = True,
        local_models: Iterable[str] = llm_catalogue.LOCAL_MODELS,
    ):
        self.strict = strict
        self.local_models = set(local_models)
        self._lock = threading.Lock()
        self._state = _State(latency_s=latency_s)
        self._stopping = threading.Event()
        self._counter = 0
        self.responder: Callable[[RecordedRequest], Reply | None] | None = None
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Return the server's root URL, ``http://127.0.0.1:<port>``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        """Return the port the server listens on."""
        return self._httpd.server_address[1]

    def start(self) -> FakeLLMServer:
        """Start serving in a daemon thread."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hanging and trickling replies end at once."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting -------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the queue served in order to requests no rule matches."""
        with self._lock:
            self._state.queue.extend(replies)

    def add_rule(self, reply: Reply) -> None:
        """Answer every request whose prompt contains ``reply.match`` with ``reply``."""
        if not reply.match:
            raise ValueError("a rule needs match text")
        with self._lock:
            self._state.rules.append(reply)

    def set_latency(self, seconds: float) -> None:
        """Delay every model answer by ``seconds``."""
        with self._lock:
            self._state.latency_s = seconds

    def set_default_action(self, action: str) -> None:
        """Use ``action`` for every coin in the default answer."""
        with self._lock:
            self._state.default_action = action

    def clear_script(self) -> None:
        """Drop queued replies, rules and the responder."""
        with self._lock:
            self._state.queue.clear()
            self._state.rules.clear()
        self.responder = None

    def reset_stats(self) -> None:
        """Forget recorded requests and counters (the requests in flight stay counted)."""
        with self._lock:
            self._state.requests.clear()
            self._state.by_status.clear()
            self._state.max_in_flight = self._state.in_flight
            self._state.connections = 0
            self._state.billed_calls = self._state.billed_tokens = 0

    def reset(self) -> None:
        """Return to the freshly started state (no script, no latency, no records)."""
        self.clear_script()
        self.reset_stats()
        with self._lock:
            self._state.latency_s = 0.0
            self._state.default_action = "open_long"
        self.strict = True
        self.local_models = set(llm_catalogue.LOCAL_MODELS)

    def control(self, data: dict[str, Any]) -> None:
        """Apply a ``POST /_control`` document."""
        if data.get("clear"):
            self.clear_script()
        if data.get("reset_stats"):
            self.reset_stats()
        if "latency_s" in data:
            self.set_latency(float(data["latency_s"]))
        if "default_action" in data:
            self.set_default_action(str(data["default_action"]))
        if "strict" in data:
            self.strict = bool(data["strict"])
        self.enqueue(*(Reply.from_dict(item) for item in data.get("replies", ())))
        for item in data.get("rules", ()):
            self.add_rule(Reply.from_dict(item))

    # --- observations ----------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Return the recorded model requests, in arrival order."""
        with self._lock:
            return list(self._state.requests)

    def stats(self) -> dict[str, Any]:
        """Return counts: requests, in_flight, max_in_flight, by_status, queue, rules, the
        TCP connections accepted, and the answers billed with their tokens."""
        with self._lock:
            state = self._state
            return {
                "requests": len(state.requests),
                "in_flight": state.in_flight,
                "max_in_flight": state.max_in_flight,
                "by_status": dict(state.by_status),
                "queued_replies": len(state.queue),
                "rules": len(state.rules),
                "latency_s": state.latency_s,
                "connections": state.connections,
                "billed_calls": state.billed_calls,
                "billed_tokens": state.billed_tokens,
            }

    # --- used by the handler ---------------------------------------------------------

    def _arrive(
        self, record: RecordedRequest, connection: socket.socket
    ) -> tuple[Reply, float, str, int]:
        responder = self.responder
        chosen = responder(record) if responder else None
        with self._lock:
            state = self._state
            for key, other in list(state.open.items()):
                if _hung_up(other):
                    del state.open[key]
                    state.in_flight -= 1
            state.requests.append(record)
            state.open[id(record)] = connection
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            self._counter += 1
            if chosen is None:
                chosen = self._pick(record.prompt)
            return chosen, state.latency_s, state.default_action, self._counter

    def _pick(self, prompt: str) -> Reply:
        state = self._state
        for rule in state.rules:
            texts = [rule.match] if isinstance(rule.match, str) else rule.match or []
            if texts and all(text in prompt for text in texts):
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        state.rules.remove(rule)
                return rule
        if state.queue:
            return state.queue.popleft()
        return Reply()

    def _bill(self, tokens: int) -> None:
        """Count an answer sent whole and its tokens, prompt plus completion."""
        with self._lock:
            self._state.billed_calls += 1
            self._state.billed_tokens += tokens

    def _leave(self, record: RecordedRequest, status: int | None, fault: str | None) -> None:
        with self._lock:
            if self._state.open.pop(id(record), None) is not None:
                self._state.in_flight -= 1  # unless counted out when its client hung up
            record.status = status
            record.fault = fault
            key = str(status) if status is not None else (fault or "none")
            self._state.by_status[key] = self._state.by_status.get(key, 0) + 1


def _hung_up(connection: socket.socket) -> bool:
    """Say whether the client of ``connection`` has closed it (without waiting)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        if not readable:
            return False
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    fake: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        """Send small writes at once (headers and body go out in separate writes)."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        fake = self.server.fake
        with fake._lock:
            fake._state.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def parse_request(self) -> bool:
        """Note when a request began to arrive: its latency runs from there."""
        self.began = time.monotonic()
        return super().parse_request()

    def do_GET(self) -> None:
        """Serve ``/_stats`` and ``/_requests``."""
        fake = self.server.fake
        if self.path == "/_stats":
            self._send_json(200, fake.stats())
        elif self.path == "/_requests":
            self._send_json(200, [r.to_dict() for r in fake.requests])
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        """Serve model requests and the control endpoints."""
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        if path == "/_control":
            try:
                fake.control(body or {})
            except (TypeError, ValueError) as exc:
                self._send_json(400, {"error": {"message": str(exc)}})
                return
            self._send_json(200, fake.stats())
        elif path == "/_reset":
            fake.reset()
            self._send_json(200, fake.stats())
        elif path.endswith("/chat/completions"):
            self._model_call("openai", path, body)
        elif path.endswith("/messages"):
            self._model_call("anthropic", path, body)
        else:
            self._send_json(404, {"error": {"message": f"no route {path}"}})

    # --- model calls -----------------------------------------------------------------

    def _model_call(self, wire: str, path: str, body: Any) -> None:
        fake = self.server.fake
        record = RecordedRequest(
            method="POST",
            path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            arrived_at=time.time(),
            wire=wire,
            prompt=_prompt_text(body),
        )
        reply, latency_s, default_action, number = fake._arrive(record, self.connection)
        refused = (
            llm_catalogue.refusal(wire, body, local_models=fake.local_models)
            if fake.strict
            else None
        )
        if refused is not None:
            reply = Reply.error(*refused)
        left = False

        def leave(status: int | None, fault: str | None = None) -> None:
            nonlocal left
            if not left:
                left = True
                fake._leave(record, status, fault)

        try:
            # The answer is made, and the request read, within the latency, as with a
            # real provider: the answer leaves L after the request began to arrive.
            answer = _Answer.make(wire, record, reply, default_action, number)
            spent = time.monotonic() - self.began
            if not self._pause(latency_s + reply.delay_s - spent):
                leave(None, "client_gone")
                self.close_connection = True
                return
            self._answer(wire, record, reply, answer, leave)
        finally:
            leave(None, "handler_error")

    def _answer(
        self,
        wire: str,
        record: RecordedRequest,
        reply: Reply,
        answer: _Answer,
        leave: Callable[[int | None, str | None], None],
    ) -> None:
        fault = reply.fault
        if fault == "hang":
            if not self._pause(reply.hang_s):
                leave(None, "hang")
                self.close_connection = True
                return
            fault = None  # a client that waited the whole hang gets its answer
        if fault == "reset":
            leave(None, "reset")
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        if fault == "malformed":
            leave(200, "malformed")
            self._send_raw(200, b"<html><body>upstream proxy error</body></html>")
            return
        if reply.status != 200:
            leave(reply.status, None)
            message = reply.error_message or f"error {reply.status}"
            if reply.echo_auth:
                credential = record.headers.get("x-api-key") or record.headers.get(
                    "authorization", ""
                ).removeprefix("Bearer ")
                message = f"{message}: Incorrect API key provided: {credential}"
            headers = {"Retry-After": reply.retry_after} if reply.retry_after else {}
            payload = _error_body(wire, reply.status, message, reply.error_style)
            self._send_json(reply.status, payload, headers)
            return

        data, headers = answer.data, answer.headers
        if fault == "truncated_body":
            leave(200, "truncated_body")
            self._send_head(200, len(data), headers)
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if fault == "trickle":
            leave(200, "trickle")
            self._send_head(200, len(data), headers)
            for offset in range(len(data)):
                if self.server.fake._stopping.is_set():
                    break
                try:
                    self.wfile.write(data[offset : offset + 1])
                    self.wfile.flush()
                except OSError:
                    break
                if not self._pause(reply.trickle_interval_s):
                    break
            self.close_connection = True
            return
        leave(200, fault)
        self.server.fake._bill(answer.tokens)
        self._send_raw(200, data, headers)

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``; return False early if the client hangs up or the server stops."""
        end = time.monotonic() + seconds
        stopping = self.server.fake._stopping
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return True
            if stopping.is_set():
                return False
            readable, _, _ = select.select([self.connection], [], [], min(0.05, left))
            if readable:
                try:
                    peeked = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    return False
                if not peeked:
                    return False
                # Bytes of a next request: the client is alive, just sleep it out.
                return not stopping.wait(max(0.0, end - time.monotonic()))

    # --- writing ---------------------------------------------------------------------

    def _send_head(self, status: int, length: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self._send_head(status, len(data), headers)
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)


@dataclass(frozen=True)
class _Answer:
    """The bytes and headers of a successful answer to one request, and the tokens it
    bills (prompt plus completion, reasoning included)."""

    data: bytes
    headers: dict[str, str]
    tokens: int

    @classmethod
    def make(
        cls, wire: str, record: RecordedRequest, reply: Reply, default_action: str, number: int
    ) -> _Answer:
        text = (
            reply.text if reply.text is not None else default_answer(record.prompt, default_action)
        )
        finish = "stop"
        if reply.fault == "truncated":
            cut = text.find("<decision>")
            text = text[: (cut + len(text)) // 2 if cut >= 0 else len(text) // 2]
            finish = "length"
        elif reply.fault == "empty":
            text = ""
        elif _spends_the_cap(reply, record.body):
            text, finish = "", "length"
        prompt_tokens, completion_tokens = _usage(record, reply, text)
        payload = _success_body(wire, record, reply, text, finish, number)
        id_header = "x-request-id" if wire == "openai" else "request-id"
        headers = {id_header: f"req-fake-{number}"}
        return cls(json.dumps(payload).encode(), headers, prompt_tokens + completion_tokens)


def _prompt_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    system = body.get("system")
    if isinstance(system, list):  # Anthropic's content blocks
        system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    parts = [system if isinstance(system, str) else ""]
    for message in body.get("messages") or ():
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            parts.append(message["content"])
    return "\n".join(parts)


def _reasoning(record: RecordedRequest, reply: Reply) -> int:
    """Return the reasoning tokens an answer reports: the reply's, within the output cap
    when it spends the cap."""
    reasoning = reply.reasoning_tokens
    if _spends_the_cap(reply, record.body):
        cap = _output_cap(record.body)
        reasoning = min(reasoning or cap, cap) if cap else (reasoning or 1000)
    return reasoning


def _usage(record: RecordedRequest, reply: Reply, text: str) -> tuple[int, int]:
    """Return the prompt and completion tokens of an answer (reasoning included)."""
    prompt_tokens = (
        reply.prompt_tokens if reply.prompt_tokens is not None else len(record.prompt) // 4
    )
    completion_tokens = (
        reply.completion_tokens if reply.completion_tokens is not None else len(text) // 4
    )
    return prompt_tokens, max(completion_tokens, _reasoning(record, reply))


def _success_body(
    wire: str, record: RecordedRequest, reply: Reply, text: str, finish: str, number: int
) -> dict[str, Any]:
    model = record.body.get("model", "") if isinstance(record.body, dict) else ""
    prompt_tokens, completion_tokens = _usage(record, reply, text)
    reasoning = _reasoning(record, reply)
    if wire == "openai":
        usage = llm_catalogue.openai_usage(
            str(model),
            prompt=prompt_tokens,
            completion=completion_tokens,
            cached=reply.cached_tokens,
            reasoning=reasoning,
        )
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": usage,
        }
    return {
        "id": f"msg_fake_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": "end_turn" if finish == "stop" else "max_tokens",
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt_tokens - reply.cached_tokens - reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cached_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "output_tokens": completion_tokens,
        },
    }


def _spends_the_cap(reply: Reply, body: Any) -> bool:
    """Say whether ``reply`` spends the whole output cap of ``body`` on reasoning."""
    cap = _output_cap(body)
    return reply.fault == "reasoning_exhausted" or 0 < cap <= reply.reasoning_tokens


def _output_cap(body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    return cap if isinstance(cap, int) else 0


def _error_body(wire: str, status: int, message: str, style: str | None = None) -> Any:
    if style == "anthropic_overloaded":
        return {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    if style == "gemini_list":
        return [{"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}]
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }.get(status, "api_error")
    if wire == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": status}}


class LLMServerClient:
    """Script and observe a fake server running in another process, over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def control(self, **data: Any) -> dict[str, Any]:
        """POST ``data`` to ``/_control``; replies may be ``Reply`` objects or dicts."""
        for name in ("replies", "rules"):
            if name in data:
                data[name] = [r.to_dict() if isinstance(r, Reply) else r for r in data[name]]
        return self._call("POST", "/_control", data)

    def stats(self) -> dict[str, Any]:
        """Return ``GET /_stats``."""
        return self._call("GET", "/_stats")

    def requests(self) -> list[dict[str, Any]]:
        """Return ``GET /_requests``."""
        return self._call("GET", "/_requests")

    def reset(self) -> dict[str, Any]:
        """Return the server to its start state."""
        return self._call("POST", "/_reset", {})

    def _call(self, method: str, path: str, data: Any = None) -> Any:
        response = httpx.request(method, self.url + path, json=data, timeout=10)
        response.raise_for_status()
        return response.json()


@contextlib.contextmanager
def llm_server_process(latency_s: float = 0.0) -> Iterator[LLMServerClient]:
    """Run the fake server in a child process; yield a client whose ``url`` points at it."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.llm_server",
            "--port",
            "0",
            "--latency",
            str(latency_s),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        match = re.search(r"http://\S+", line)
        if match is None:
            raise RuntimeError(f"fake LLM server did not start: {line!r}")
        yield LLMServerClient(match.group(0))
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """Give the test a fresh fake model server on a free local port."""
    with FakeLLMServer() as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT, printing the URL on the first line of stdout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds from a request's arrival to its answer"
    )
    args = parser.parse_args(argv)
    server = FakeLLMServer(args.host, args.port, latency_s=args.latency)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with server:
        print(f"fake LLM server listening on {server.url}", flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
