"""The live stream of a debate (SPEC 7): ``GET /api/debates/{id}/stream`` and its token.

Who may read it: the debate's owner, and staff. Anyone else gets 404, as for every debate
endpoint; no credentials, 401; a bad or expired token, 401. Each is a real status sent
before any stream starts (django-eventstream's own view would answer 200 and then a
``stream-error`` event). Credentials, in this order:

- ``?token=``: a short-lived token from ``POST /api/debates/{id}/stream-token``, signed
  with ``django.core.signing`` and bound to the user, the user's password (a keyed
  digest of its hash: a token stops working when the password changes) and the
  debate; refused once the user is inactive. A browser
  ``EventSource`` cannot send headers; this is how a page on another origin connects.
  The token is checked when a stream opens: an ``EventSource`` reconnecting after it
  expired gets 401 and stops, so such a page asks for a new token and connects again
  with ``?lastEventId=`` (the id of the last event it got).
- ``Authorization: Token <key>``: API clients, as for the REST API.
- the session cookie: the admin and same-origin pages.

What a client receives: on a fresh connection, ``initial`` (the REST detail), whose id
is the channel's latest event id read *before* the detail, then every event after that
id, so nothing published while it connects is lost. With ``Last-Event-ID`` (the header
an ``EventSource`` sends when it reconnects, or ``?lastEventId=``, e.g. the detail's
``event_id``): exactly the events after it, in order. An id that storage no longer knows
(trimmed after a day) is answered as a fresh connection: ``initial`` again.

The view is a plain async Django view (DRF does not run here): the stream is served by
the ASGI server's event loop, and its database work goes through ``arena.sse.run_db``,
which holds no connection while the stream is open.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.utils.crypto import constant_time_compare, salted_hmac
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from django_eventstream.utils import add_default_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arena.apis import JsonApi, documented_by, error_responses
from arena.auth import ExpiringTokenAuthentication
from arena.exceptions import ApplicationError, NotFound, ValidationError
from arena.sse import (
    channel_stream,
    current_event_number,
    debate_channel,
    encode,
    event_id,
    parse_event_id,
    run_db,
    stored_event_known,
)
from debates.models import Debate
from debates.selectors import debate_representation

SIGNING_SALT = "debates.stream-token"


class NotAuthenticated(ApplicationError):
    code = "not_authenticated"
    status_code = status.HTTP_401_UNAUTHORIZED
    default_message = "Authentication credentials were not provided."


class AuthenticationFailed(ApplicationError):
    code = "authentication_failed"
    status_code = status.HTTP_401_UNAUTHORIZED
    default_message = "Invalid credentials."


@dataclass(frozen=True)
class StreamToken:
    """A signed token that opens one debate's stream for one user until ``expires_at``."""

    token: str
    expires_at: datetime


def debate_stream_check(*, user: Any, debate_id: int) -> None:
    """Raise ``NotFound`` unless ``user`` may read the debate's stream (owner or staff)."""
    owner_id = Debate.objects.filter(pk=debate_id).values_list("owner_id", flat=True).first()
    if owner_id is None or not (user.is_staff or owner_id == user.pk):
        raise NotFound("Debate not found.")


def stream_token_issue(*, user: Any, debate_id: int) -> StreamToken:
    """Return a token opening the debate's stream for ``user`` (``SSE_TOKEN_MAX_AGE`` s)."""
    debate_stream_check(user=user, debate_id=debate_id)
    # The signature's timestamp is this second or the next: expires_at never overstates.
    issued = int(time.time())
    payload = {"user": user.pk, "password": _password_digest(user), "debate": debate_id}
    token = signing.dumps(payload, salt=SIGNING_SALT)
    expires_at = datetime.fromtimestamp(issued + settings.SSE_TOKEN_MAX_AGE, tz=UTC)
    return StreamToken(token=token, expires_at=expires_at)


def stream_token_user(*, token: str, debate_id: int) -> Any:
    """Return the user a stream token was issued to; ``AuthenticationFailed`` otherwise."""
    try:
        payload = signing.loads(token, salt=SIGNING_SALT, max_age=settings.SSE_TOKEN_MAX_AGE)
    except signing.SignatureExpired as exc:
        raise AuthenticationFailed("The stream token has expired.") from exc
    except signing.BadSignature as exc:
        raise AuthenticationFailed("The stream token is not valid.") from exc
    if not isinstance(payload, dict) or payload.get("debate") != debate_id:
        raise AuthenticationFailed("The stream token is not valid for this debate.")
    user = get_user_model().objects.filter(pk=payload.get("user"), is_active=True).first()
    if user is None or not constant_time_compare(
        payload.get("password", ""), _password_digest(user)
    ):
        raise AuthenticationFailed("The stream token is not valid.")
    return user


def _password_digest(user: Any) -> str:
    """Return a digest of the user's password hash keyed with ``SECRET_KEY``: it changes
    with the password and, read in a token, tells nothing of the hash."""
    return salted_hmac(SIGNING_SALT, user.password, algorithm="sha256").hexdigest()[:32]


def _stream_user(request: HttpRequest, debate_id: int) -> Any:
    token = request.GET.get("token")
    if token is not None:
        return stream_token_user(token=token, debate_id=debate_id)
    return request_user(request)


def request_user(request: HttpRequest) -> Any:
    """Return the user of a stream request by its ``Authorization: Token`` header, else
    its session; raise ``NotAuthenticated`` or ``AuthenticationFailed``."""
    if request.headers.get("Authorization"):
        try:
            authenticated = ExpiringTokenAuthentication().authenticate(request)
        except drf_exceptions.AuthenticationFailed as exc:
            raise AuthenticationFailed(str(exc.detail)) from exc
        if authenticated is not None:
            return authenticated[0]
    user = request.user
    if user.is_authenticated and user.is_active:
        return user
    raise NotAuthenticated()


@dataclass(frozen=True)
class Opening:
    """Where a stream starts: its user, the event number it follows, the events sent first."""

    user_id: int
    after: int
    head: str


def stream_opening(
    *, channel: str, user_id: int, resume_after: int | None, detail: Callable[[], dict]
) -> Opening:
    """Return where a stream of ``channel`` starts: after ``resume_after`` when storage
    still has it, else after an ``initial`` event carrying ``detail()``."""
    if resume_after is not None and stored_event_known(channel, resume_after):
        return Opening(user_id=user_id, after=resume_after, head="")
    # The id first, the detail second: an event stored in between is sent after
    # ``initial`` (at worst telling the client something the detail already shows),
    # never lost.
    number = current_event_number(channel)
    shown = dict(detail())
    shown["event_id"] = event_id(channel, number)
    head = encode("initial", json.dumps(shown, cls=DjangoJSONEncoder), channel, number)
    return Opening(user_id=user_id, after=number, head=head)


def _open(request: HttpRequest, debate_id: int, resume_after: int | None) -> Opening:
    user = _stream_user(request, debate_id)
    debate_stream_check(user=user, debate_id=debate_id)
    return stream_opening(
        channel=debate_channel(debate_id),
        user_id=user.pk,
        resume_after=resume_after,
        detail=lambda: debate_representation(debate_id=debate_id),
    )


def refusal(exc: ApplicationError) -> JsonResponse:
    """Return the JSON answer refusing a stream before it starts (a 401 says how to
    authenticate)."""
    response = JsonResponse(exc.as_dict(), status=exc.status_code)
    if exc.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = 'Token realm="api"'
    return response


async def serve_stream(
    request: HttpRequest,
    channel: str,
    open_: Callable[[HttpRequest, int | None], Opening],
) -> HttpResponseBase:
    """Answer a stream request for ``channel``: refuse it with a real status, or stream
    from where ``open_(request, resume_after)`` (run on a stream database thread) says."""
    last_event_id = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId")
    try:
        resume_after = parse_event_id(last_event_id, channel) if last_event_id else None
    except ValueError:
        kind = channel.rsplit("-", 1)[0]
        message = f"Not an event id of this stream (expected {kind}-<id>:<number>)."
        return refusal(ValidationError(fields={"Last-Event-ID": [message]}))
    try:
        opening = await run_db(open_, request, resume_after)
    except ApplicationError as exc:
        return refusal(exc)
    stream = channel_stream(
        channel, after=opening.after, head=opening.head, user_id=opening.user_id
    )
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    add_default_headers(response, request=request)
    return response


# How a stream request resumes, as the schema shows it.
RESUME_PARAMETERS = [
    OpenApiParameter(
        "lastEventId",
        str,
        description="Resume after this event id, as the Last-Event-ID header does.",
    ),
    OpenApiParameter(
        "Last-Event-ID",
        str,
        location=OpenApiParameter.HEADER,
        description="The id of the last event received (an EventSource sends it when it "
        "reconnects): exactly the events after it follow.",
    ),
]


def stream_schema(
    *,
    operation_id: str,
    tag: str,
    description: str,
    events: str,
    parameters: tuple[OpenApiParameter, ...] = (),
) -> dict[str, Any]:
    """Return the ``extend_schema`` arguments of a live stream: Server-Sent Events whose
    types are ``events``, or a JSON error before any event."""
    return {
        "operation_id": operation_id,
        "tags": [tag],
        "description": description,
        "parameters": [*parameters, *RESUME_PARAMETERS],
        "responses": {
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR,
                description=f"Server-Sent Events ({events}), each with an id to resume "
                "after and JSON data; `initial` first, unless resuming.",
            ),
            **error_responses(400, 404),
        },
    }


class DebateStreamSchema(APIView):
    """What the schema says of ``debate_stream``, which serves the stream."""

    @extend_schema(
        **stream_schema(
            operation_id="debates_stream",
            tag="debates",
            description="Stream a debate's live events as Server-Sent Events.",
            events="initial, status, round_start, round_end, message, vote, consensus, "
            "execution, error, judge_call, judge_scores",
            parameters=(
                OpenApiParameter(
                    "token",
                    str,
                    description="A stream token (POST .../stream-token): how a page on "
                    "another origin authenticates, its EventSource sending no header.",
                ),
            ),
        )
    )
    def get(self, request: Request, debate_id: int) -> Response:
        raise NotImplementedError("debate_stream serves the stream")


@documented_by(DebateStreamSchema)
@csrf_exempt  # it changes nothing: any other method than GET is a 405, not a CSRF refusal
@require_GET
async def debate_stream(request: HttpRequest, debate_id: int) -> HttpResponseBase:
    """Stream a debate's live events as Server-Sent Events (SPEC 7)."""
    return await serve_stream(
        request,
        debate_channel(debate_id),
        lambda req, resume_after: _open(req, debate_id, resume_after),
    )


class DebateStreamTokenApi(JsonApi):
    """Issue a short-lived token that opens the debate's stream as ``?token=...``."""

    @extend_schema_serializer(component_name="StreamToken")
    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField()
        expires_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="debates_stream_token",
        tags=["debates"],
        request=None,
        responses={200: OutputSerializer, **error_responses(404)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        issued = stream_token_issue(user=request.user, debate_id=debate_id)
        return Response(self.OutputSerializer(issued).data)
