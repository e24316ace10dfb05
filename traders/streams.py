"""The live stream of a trader: ``GET /api/traders/{id}/stream``.

Served like a debate's (``debates.streams``): the owner and staff may read it, anyone
else gets a real 404 before any byte of stream, no credentials a 401. A fresh connection
receives ``initial`` (the trader, as the REST detail shows it) then every later event:
``history``, each line reconciliation writes in the trader's history; with
``Last-Event-ID`` (or ``?lastEventId=``), exactly the events after it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from arena.exceptions import NotFound
from debates.streams import Opening, request_user, serve_stream, stream_opening
from traders.events import trader_channel
from traders.models import Trader


def _open(request: HttpRequest, trader_id: int, resume_after: int | None) -> Opening:
    from traders.apis import TraderSerializer

    user = request_user(request)
    trader = Trader.objects.filter(pk=trader_id).first()
    if trader is None or not (user.is_staff or trader.owner_id == user.pk):
        raise NotFound("Trader not found.")
    return stream_opening(
        channel=trader_channel(trader_id),
        user_id=user.pk,
        resume_after=resume_after,
        detail=lambda: TraderSerializer(Trader.objects.get(pk=trader_id)).data,
    )


@csrf_exempt  # it changes nothing: any other method than GET is a 405, not a CSRF refusal
@require_GET
async def trader_stream(request: HttpRequest, trader_id: int) -> HttpResponseBase:
    """Stream a trader's live events as Server-Sent Events."""
    return await serve_stream(
        request,
        trader_channel(trader_id),
        lambda req, resume_after: _open(req, trader_id, resume_after),
    )
