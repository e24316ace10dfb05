"""The live stream of a backtest: ``GET /api/backtests/{id}/stream``.

Served like a debate's (``debates.streams``): the owner and staff may read it, anyone
else gets a real 404 before any byte of stream, no credentials a 401. A browser on the
same origin authenticates with its session cookie, an API client with its token. A
fresh connection receives ``initial`` (the REST detail) then every later event; with
``Last-Event-ID`` (or ``?lastEventId=``), exactly the events after it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arena.apis import documented_by
from arena.exceptions import NotFound
from backtests.events import backtest_channel
from backtests.models import Backtest
from backtests.selectors import backtest_representation
from debates.streams import (
    Opening,
    request_user,
    serve_stream,
    stream_opening,
    stream_schema,
)


def _open(request: HttpRequest, backtest_id: int, resume_after: int | None) -> Opening:
    user = request_user(request)
    owner_id = Backtest.objects.filter(pk=backtest_id).values_list("owner_id", flat=True).first()
    if owner_id is None or not (user.is_staff or owner_id == user.pk):
        raise NotFound("Backtest not found.")
    return stream_opening(
        channel=backtest_channel(backtest_id),
        user_id=user.pk,
        resume_after=resume_after,
        detail=lambda: backtest_representation(backtest_id=backtest_id),
    )


class BacktestStreamSchema(APIView):
    """What the schema says of ``backtest_stream``, which serves the stream."""

    @extend_schema(
        **stream_schema(
            operation_id="backtests_stream",
            tag="backtests",
            description="Stream a backtest's live events as Server-Sent Events.",
            events="initial, status, progress, report",
        )
    )
    def get(self, request: Request, backtest_id: int) -> Response:
        raise NotImplementedError("backtest_stream serves the stream")


@documented_by(BacktestStreamSchema)
@csrf_exempt  # it changes nothing: any other method than GET is a 405, not a CSRF refusal
@require_GET
async def backtest_stream(request: HttpRequest, backtest_id: int) -> HttpResponseBase:
    """Stream a backtest's live events as Server-Sent Events."""
    return await serve_stream(
        request,
        backtest_channel(backtest_id),
        lambda req, resume_after: _open(req, backtest_id, resume_after),
    )
