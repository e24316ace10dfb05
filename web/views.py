"""The arena page and its static files.

The page is a shell: it holds no debate data. Its script (``static/web/arena.js``) reads
everything from the REST API with the session cookie and the CSRF token, and follows the
open debate on its live stream. Domain rules stay in the services behind the API.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.shortcuts import render
from django.utils.http import http_date
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe
from django.views.static import was_modified_since

from backtests.charts import equity_svg
from backtests.models import DEFAULT_WINDOW, Backtest
from debates.models import Pace
from evaluations.charts import reliability_svg
from strategies.models import PromptVariant


@login_required
@ensure_csrf_cookie
def arena(request: HttpRequest, debate_id: int | None = None) -> HttpResponse:
    """Render the arena page, opening debate ``debate_id`` when the URL names one."""
    config = {"debateId": debate_id}
    context = {
        "config": config,
        "prompt_variants": PromptVariant.choices,
        "paces": Pace.choices,
    }
    return render(request, "web/arena.html", context)


@login_required
@ensure_csrf_cookie
def backtests(request: HttpRequest, backtest_id: int | None = None) -> HttpResponse:
    """Render the backtests page, opening backtest ``backtest_id`` when the URL names one;
    its form starts from the window `manage.py backtest` does."""
    start, end = DEFAULT_WINDOW
    context = {
        "config": {"backtestId": backtest_id},
        "window": {"start": f"{start:%Y-%m-%dT%H:%M}", "end": f"{end:%Y-%m-%dT%H:%M}"},
    }
    return render(request, "web/backtests.html", context)


def _shown_backtest(request: HttpRequest, backtest_id: int) -> Backtest:
    """Return the name and report of a backtest of the user (staff: anyone's), or 404."""
    found = Backtest.objects.filter(pk=backtest_id)
    if not request.user.is_staff:
        found = found.filter(owner=request.user)
    backtest = found.only("name", "report").first()
    if backtest is None:
        raise Http404("No such backtest.")
    return backtest


@login_required
@require_safe
def backtest_chart(request: HttpRequest, backtest_id: int) -> HttpResponse:
    """Return the equity chart of a backtest of the user (staff: anyone's) as SVG."""
    backtest = _shown_backtest(request, backtest_id)
    chart = equity_svg(backtest.report or {}, title=backtest.name)
    return HttpResponse(chart, content_type="image/svg+xml")


@login_required
@require_safe
def backtest_reliability(request: HttpRequest, backtest_id: int) -> HttpResponse:
    """Return the reliability chart of a backtest's voters (staff: anyone's) as SVG."""
    backtest = _shown_backtest(request, backtest_id)
    voters = (backtest.report or {}).get("calibration", [])
    chart = reliability_svg(voters, title=f"Reliability: {backtest.name}")
    return HttpResponse(chart, content_type="image/svg+xml")


@require_safe
def static_file(request: HttpRequest, path: str) -> HttpResponse:
    """Serve a static file of any installed app (the page's, the admin's), with 304s.

    The ASGI server serves no static files of its own and the stack has no static file
    server, so they come from here, found the way ``collectstatic`` finds them. A proxy
    in front that serves ``STATIC_URL`` takes over unchanged. The files are small and
    read whole: Django's ``serve`` streams a file through a synchronous iterator, which
    the ASGI handler warns about on every request.
    """
    found = finders.find(path)
    if not found:
        raise Http404("No such file.")
    file = Path(found)
    modified = file.stat().st_mtime
    if not was_modified_since(request.headers.get("If-Modified-Since"), modified):
        return HttpResponseNotModified()
    content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    response = HttpResponse(file.read_bytes(), content_type=content_type)
    response["Last-Modified"] = http_date(modified)
    return response


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """Serve the site's icon where browsers ask for it, ``/favicon.ico``: the pages name
    it, the admin's and the API's pages do not, and a browser then asks here."""
    return static_file(request, "web/favicon.ico")
