"""Reads of debates and their children, each with a fixed number of queries."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import orjson
from django.apps import apps
from django.core.cache import cache
from django.db.models import Count, F, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone
from django_eventstream import get_current_event_id
from django_eventstream.models import EventCounter
from django_eventstream.utils import make_id

from arena.exceptions import NotFound
from arena.renderers import json_bytes
from arena.sse import channel_versions, debate_channel, owner_channel
from debates.engine.plan import Plan
from debates.models import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    Ballot,
    Debate,
    DebateStatus,
    Decision,
    DeletedSpend,
    DroppedCall,
    JudgeCall,
    JudgeScore,
    Message,
    ModelPrice,
    Participant,
    Schedule,
    TokenBudget,
    Usage,
    Vote,
)
from debates.providers.pricing import usd_text
from debates.state import STATE_COLUMNS, plan_of

# What the plan of steps and the actions read of a debate's seats, turns, ballots and
# decisions (``debates.state``).
_SEATS = Prefetch("participants", queryset=Participant.objects.order_by("speak_order"))
_DECISIONS = Prefetch("decisions", queryset=Decision.objects.select_related("execution"))
_STEP_RECORDS = (
    _SEATS,
    Prefetch(
        "messages",
        queryset=Message.objects.order_by().only(
            "id", "debate_id", "round", "participant_id", "status"
        ),
    ),
    Prefetch(
        "ballots",
        queryset=Ballot.objects.order_by().only("id", "debate_id", "participant_id", "status"),
    ),
    _DECISIONS,
)
# What a row of the list never shows: the market snapshot and its texts (17 KB of JSON
# for a debate of three coins).
_LIST_DEFERRED = ("market_snapshot", "market_summary", "market_text", "book", "track_record")


# What a debate that has stored no step has of them: its seats alone.
_NO_RECORDS = (
    _STEP_RECORDS[0],
    Prefetch("messages", queryset=Message.objects.none()),
    Prefetch("ballots", queryset=Ballot.objects.none()),
    Prefetch("decisions", queryset=Decision.objects.none()),
)


def debate_still(debate_id: int, statuses: tuple[str, ...]) -> Callable[[], bool]:
    """Return a check that the debate is still in one of ``statuses``: asked by a step
    that waited for a model slot, before its call goes out."""

    def check() -> bool:
        return Debate.objects.filter(pk=debate_id, status__in=statuses).exists()

    return check


def debate_state(*, debate_id: int, recorded: bool = True) -> Debate:
    """Return a debate's state columns with what its plan and actions read, prefetched
    (a ``status`` event's payload); five short queries.

    ``recorded=False`` for a debate that has stored no step yet (one just started from
    pending): its seats are read, and its turns, ballots and decisions taken as none;
    two queries.
    """
    records = _STEP_RECORDS if recorded else _NO_RECORDS
    return Debate.objects.only(*STATE_COLUMNS).prefetch_related(*records).get(pk=debate_id)


def debate_list(
    *,
    owner: Any,
    status: str | None = None,
    origin: str | None = None,
    schedule: int | None = None,
    backtest: int | None = None,
) -> QuerySet[Debate]:
    """Return the owner's debates, newest first, optionally only those of one status,
    one origin, one schedule or one backtest (by id): their ids and owner
    (``debate_rows`` serves what a page shows of them)."""
    given = {"status": status, "origin": origin, "schedule_id": schedule, "backtest_id": backtest}
    queryset = Debate.objects.filter(owner=owner).only("id", "owner_id")
    queryset = queryset.filter(**{name: value for name, value in given.items() if value})
    return queryset.order_by("-created_at", "-id")


def debate_rows(
    ids: list[int], render: Callable[[Debate, Plan], dict], *, owner_id: int
) -> list[dict | orjson.Fragment]:
    """Return the list rows of the debates ``ids`` of owner ``owner_id``, in order.

    A finished debate's row is stored (the cache) under its stream's version and its
    owner's, as its detail is, as JSON, and served from there as it is (an
    ``orjson.Fragment``, which the API's renderer writes out unparsed). The others are
    read with their seats, decisions, turns and ballots (five queries whatever their
    number; none when every row is stored) after the versions, and rendered by
    ``render`` from the debate and its plan.
    """
    keys = _row_keys(ids, owner_id)
    stored = cache.get_many(keys.values()) if keys else {}
    rows: dict[int, dict | orjson.Fragment] = {
        pk: orjson.Fragment(stored[key]) for pk, key in keys.items() if key in stored
    }
    if missing := [pk for pk in ids if pk not in rows]:
        fresh = _rows_rendered(missing, render)
        finished = {
            keys[pk]: json_bytes(row)
            for pk, row in fresh.items()
            if pk in keys and row["status"] in TERMINAL_STATUSES
        }
        cache.set_many(finished, DETAIL_CACHE_S)
        rows.update(fresh)
    return [rows[pk] for pk in ids if pk in rows]


def _row_keys(ids: list[int], owner_id: int) -> dict[int, str]:
    """Return the cache key of the list row of each debate of ``ids`` whose stream has a
    version: its stream's version and its owner's name the row."""
    channels = {pk: debate_channel(pk) for pk in ids}
    owner = owner_channel(owner_id)
    versions = channel_versions([*channels.values(), owner])
    return {
        pk: f"debate-row:{pk}:v{versions[channel]}.{versions[owner]}:json"
        for pk, channel in channels.items()
        if versions[channel] is not None
    }


def _rows_rendered(ids: list[int], render: Callable[[Debate, Plan], dict]) -> dict[int, dict]:
    """Return the list rows of the debates ``ids`` read with their seats, decisions, turns
    and ballots, rendered by ``render``."""
    debates = list(
        Debate.objects.filter(pk__in=ids)
        .defer(*_LIST_DEFERRED)
        .prefetch_related(_SEATS, _DECISIONS)
    )
    plans = debate_plans(debates)
    return {debate.pk: render(debate, plans[debate.pk]) for debate in debates}


def debate_plans(debates: list[Debate]) -> dict[int, Plan]:
    """Return the plan of steps of each of ``debates`` (their seats prefetched), their
    turns and ballots read as rows of values: two queries, whatever their number."""
    ids = [debate.pk for debate in debates]
    turns: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    ballots: dict[int, list[tuple[int, str]]] = defaultdict(list)
    rows = Message.objects.filter(debate_id__in=ids).order_by()
    for debate_id, *turn in rows.values_list("debate_id", "round", "participant_id", "status"):
        turns[debate_id].append(tuple(turn))
    rows = Ballot.objects.filter(debate_id__in=ids).order_by()
    for debate_id, *ballot in rows.values_list("debate_id", "participant_id", "status"):
        ballots[debate_id].append(tuple(ballot))
    return {
        d.pk: plan_of(d, seats=d.participants.all(), turns=turns[d.pk], ballots=ballots[d.pk])
        for d in debates
    }


def debate_detail_queryset() -> QuerySet[Debate]:
    """Return debates with everything the detail representation reads, prefetched."""
    return Debate.objects.select_related("strategy", "judge_model").prefetch_related(
        Prefetch(
            "participants",
            queryset=Participant.objects.select_related("ai_model").order_by("speak_order"),
        ),
        Prefetch(
            "messages",
            queryset=Message.objects.order_by("round", "participant__speak_order"),
        ),
        Prefetch("votes", queryset=Vote.objects.order_by("participant__speak_order", "symbol")),
        Prefetch(
            "ballots",
            queryset=Ballot.objects.order_by().only("id", "debate_id", "participant_id", "status"),
        ),
        Prefetch(
            "decisions",
            queryset=Decision.objects.select_related("execution", "execution__decision").order_by(
                "-is_primary", "symbol"
            ),
        ),
        Prefetch("judge_calls", queryset=JudgeCall.objects.order_by("round", "kind", "judge")),
        Prefetch("judge_scores", queryset=JudgeScore.objects.order_by("participant__speak_order")),
    )


def debate_get(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Return one debate with its children; another user's debate is not found."""
    queryset = debate_detail_queryset()
    if owner is not None:
        queryset = queryset.filter(owner=owner)
    try:
        return queryset.get(pk=debate_id)
    except Debate.DoesNotExist as exc:
        raise NotFound("Debate not found.") from exc


def debate_event_id(*, debate_id: int) -> str:
    """Return the id of the latest stored event of a debate's stream."""
    return get_current_event_id([debate_channel(debate_id)])


def debate_representation(
    *, debate_id: int, owner: Any | None = None, include_snapshot: bool = False
) -> dict[str, Any]:
    """Return the detail representation (REST, the ``initial`` event, ``run_debate``);
    the snapshot's raw candles only with ``include_snapshot``."""
    # The event id is read before the debate: a client resuming from it can only see an
    # event twice (and drops it by id), never miss one published between the two reads.
    event_id = debate_event_id(debate_id=debate_id)
    return _render(debate_id, owner, event_id, include_snapshot)


def _render(debate_id: int, owner: Any, event_id: str, include_snapshot: bool) -> dict[str, Any]:
    from debates.serializers import DebateDetailSerializer

    debate = debate_get(debate_id=debate_id, owner=owner)
    context = {"event_id": event_id, "include_snapshot": include_snapshot}
    return DebateDetailSerializer(debate, context=context).data


@dataclass(frozen=True)
class RenderedDetail:
    """A debate's detail as JSON bytes, and the entity tag naming that rendering."""

    body: bytes
    etag: str


# How long a finished debate's stored rendering (its detail, its list row) is kept after it
# was last stored.
DETAIL_CACHE_S = 24 * 3600


# What a debate's detail shows of its owner's other rows, read with its status where no
# version says they changed: their ids and last changes.
_SHOWN_ROWS = (
    "strategy_id",
    "strategy__updated_at",
    "trader_id",
    "schedule_id",
    "judge_model__updated_at",
)
_SEATS_CHANGED = Subquery(
    Participant.objects.filter(debate_id=OuterRef("pk"), ai_model__isnull=False)
    .order_by("-ai_model__updated_at")
    .values("ai_model__updated_at")[:1]
)


def debate_detail_rendered(
    *, debate_id: int, owner: Any, include_snapshot: bool = False
) -> RenderedDetail:
    """Return the detail of one of ``owner``'s debates as JSON bytes (orjson) with an ETag.

    A finished debate changes only through an event on its stream (an execution), its
    deletion, or a change of what it shows of its owner's other rows (a strategy or a
    model renamed, a schedule or a trader deleted), so its rendering is stored (the
    cache, with its owner) and served from there, the same ETag while nothing changed.
    It is stored under its stream's version and its owner's (``arena.sse``: changed once
    each publish commits, and each such change, ``debates.receivers``): a stored
    rendering is served with no query. Without a shared cache (no version), it is stored
    under the stream's latest event id and what it shows of those rows (their ids and
    last changes), read with the debate's status in one query. An active debate is
    rendered each time; its ETag is a digest of the bytes.
    """
    channel = debate_channel(debate_id)
    variant = "full" if include_snapshot else "summary"
    owned = owner_channel(owner.pk)
    versions = channel_versions([channel, owned])
    version = versions[channel]
    key = f"debate-detail:{debate_id}:v{version}.{versions[owned]}:{variant}"
    if version is not None and (stored := _stored_detail(key, owner)) is not None:
        return stored
    # One query reads the debate's status and its stream's latest event id (as
    # ``debate_event_id`` does), in the same snapshot of the database.
    latest = EventCounter.objects.filter(name=channel).values("value")
    row = (
        Debate.objects.filter(pk=debate_id, owner=owner)
        .annotate(latest_event=Coalesce(Subquery(latest), 0), seats_changed=_SEATS_CHANGED)
        .values_list("status", "created_at", "latest_event", *_SHOWN_ROWS, "seats_changed")
        .first()
    )
    if row is None:
        raise NotFound("Debate not found.")
    status, created_at, latest_event, *shown = row
    event_id = make_id({channel: str(latest_event)})
    if status not in TERMINAL_STATUSES:
        body = json_bytes(_render(debate_id, owner, event_id, include_snapshot))
        return RenderedDetail(body, f'"{hashlib.blake2b(body, digest_size=12).hexdigest()}"')
    if version is None:
        # The creation instant keeps a rendering of a deleted debate from serving a new
        # one that got its id (a database made again).
        stamps = ":".join(
            str(value.timestamp() if isinstance(value, datetime) else value) for value in shown
        )
        key = f"debate-detail:{debate_id}:{created_at.timestamp()}:{event_id}:{stamps}:{variant}"
        if (stored := _stored_detail(key, owner)) is not None:
            return stored
    body = json_bytes(_render(debate_id, owner, event_id, include_snapshot))
    cache.set(key, (owner.pk, body), DETAIL_CACHE_S)
    return RenderedDetail(body, _key_etag(key))


def _stored_detail(key: str, owner: Any) -> RenderedDetail | None:
    """Return the rendering stored under ``key``, if any; another owner's is not found."""
    stored = cache.get(key)
    if stored is None:
        return None
    owner_id, body = stored
    if owner_id != owner.pk:
        raise NotFound("Debate not found.")
    return RenderedDetail(body, _key_etag(key))


def _key_etag(key: str) -> str:
    return f'"{hashlib.blake2b(key.encode(), digest_size=12).hexdigest()}"'


@dataclass(frozen=True)
class Spend:
    """What a set of stored model calls (turns, ballots, judge calls, a backtest's
    baseline answers) used and cost.

    ``calls`` went to a model; ``cached_calls`` were answered from the model-call cache
    (no tokens, no cost). ``cached_input_tokens`` is the part of ``prompt_tokens`` the
    providers' prompt caches served; ``estimated_tokens`` the part of the tokens the
    simulated model estimated rather than a provider counted. ``dropped_calls`` of the
    calls were answered after their debate had left their step (``DroppedCall``), for
    ``dropped_cost_usd`` of the cost.
    """

    calls: int = 0
    cached_calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_input_tokens: int = 0
    estimated_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    dropped_calls: int = 0
    dropped_cost_usd: Decimal = Decimal(0)

    @property
    def tokens(self) -> int:
        """Return prompt plus completion tokens, what budgets count."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Spend) -> Spend:
        return Spend(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Spend)))

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form: every figure, ``tokens``, and the cost as a string."""
        data = {f.name: getattr(self, f.name) for f in fields(Spend)}
        money = {name: usd_text(data[name]) for name in ("cost_usd", "dropped_cost_usd")}
        return {**data, "tokens": self.tokens, **money}


_SPEND_SUMS = {
    "estimated_tokens": Sum(
        F("prompt_tokens") + F("completion_tokens"), filter=Q(tokens_estimated=True)
    ),
    # A row that asked no model (a light level's ballot copied from its opening, a
    # person's turn) made no attempt.
    "calls": Count("pk", filter=Q(cached=False, attempts__gt=0)),
    "cached_calls": Count("pk", filter=Q(cached=True)),
    **{name: Sum(name) for name in ("attempts", "prompt_tokens", "completion_tokens")},
    "cached_input_tokens": Sum("cached_input_tokens"),
    "cost_usd": Sum("cost_usd"),
}
# What the calls whose answers were dropped add to them.
_DROPPED_SUMS = {
    "dropped_calls": _SPEND_SUMS["calls"],
    "dropped_cost_usd": Sum("cost_usd"),
}


def call_models() -> list[type[Usage]]:
    """Return every model whose rows are stored model calls (each a ``Usage``)."""
    return [m for m in apps.get_models() if issubclass(m, Usage)]


def debate_call_models() -> list[type[Usage]]:
    """Return the models of the calls a debate made for itself (``Usage.debate_call``):
    its turns, ballots and judge calls, and those whose answers were dropped."""
    return [m for m in call_models() if m.debate_call]


def _sums(model: type[Usage]) -> dict[str, Any]:
    """Return the sums of a spend over the rows of ``model``, each named ``sum_`` and its
    figure (an aggregate may not take the name of a column it or another one reads)."""
    sums = {**_SPEND_SUMS, **(_DROPPED_SUMS if model is DroppedCall else {})}
    return {f"sum_{name}": aggregate for name, aggregate in sums.items()}


def _spend(found: dict[str, Any]) -> Spend:
    """Return the spend of the sums ``found`` (named as ``_sums`` names them)."""
    return Spend(**{f.name: found.get(f"sum_{f.name}") or f.default for f in fields(Spend)})


# Each scope of a spend: how a stored call reaches it, and how the spend of deleted
# debates does (None: a debate or a backtest has no deleted debates' spend of its own).
_SCOPES = {
    "debate_id": ("debate_id", None),
    "backtest_id": ("debate__backtest_step__backtest_id", None),
    "owner_id": ("debate__owner_id", "owner_id"),
    "schedule_id": ("debate__schedule_id", "schedule_id"),
}
# The sums of the deleted debates' spend, named as ``_sums`` names those of stored calls.
_DELETED_SUMS = {f"sum_{name}": Sum(name) for name in (*_SPEND_SUMS, *_DROPPED_SUMS)}


def _lookups(scope: dict[str, int | None]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Return the lookups of the stored calls of ``scope`` and of its deleted debates' spend."""
    given = {name: value for name, value in scope.items() if value is not None}
    calls = {_SCOPES[name][0]: value for name, value in given.items()}
    if any(_SCOPES[name][1] is None for name in given):
        return calls, None
    return calls, {_SCOPES[name][1]: value for name, value in given.items()}


def _midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC)


def spend_of(
    *,
    debate_id: int | None = None,
    backtest_id: int | None = None,
    owner_id: int | None = None,
    schedule_id: int | None = None,
    since: date | None = None,
) -> Spend:
    """Return the spend of the stored calls of a debate, a backtest, an owner or a
    schedule, made from UTC day ``since`` on. An owner's and a schedule's spend counts
    the calls of their deleted debates too (``DeletedSpend``): they were paid for. A
    debate's counts its own calls (``Usage.debate_call``); a backtest's and an owner's
    count its steps' baseline answers too."""
    calls, deleted = _lookups(
        {
            "debate_id": debate_id,
            "backtest_id": backtest_id,
            "owner_id": owner_id,
            "schedule_id": schedule_id,
        }
    )
    if since is not None:
        calls["created_at__gte"] = _midnight(since)
    total = Spend()
    for model in call_models():
        if debate_id is not None and not model.debate_call:
            continue  # a debate's spend is its own calls'
        total += _spend(model.objects.filter(**calls).aggregate(**_sums(model)))
    if deleted is not None:
        kept = DeletedSpend.objects.filter(**deleted)
        if since is not None:
            kept = kept.filter(day__gte=since)
        total += _spend(kept.aggregate(**_DELETED_SUMS))
    return total


def spend_by_day(
    *,
    days: int,
    today: date | None = None,
    owner_id: int | None = None,
    schedule_id: int | None = None,
) -> list[dict[str, Any]]:
    """Return the spend of each of the last ``days`` UTC days, oldest first, of an
    owner's or a schedule's calls, those of their deleted debates included; a day
    without calls has zeros."""
    today = today or datetime.now(UTC).date()
    first = today - timedelta(days=days - 1)
    calls, deleted = _lookups({"owner_id": owner_id, "schedule_id": schedule_id})
    per_day = {first + timedelta(days=n): Spend() for n in range(days)}
    for model in call_models():
        rows = (
            model.objects.filter(created_at__gte=_midnight(first), **calls)
            .annotate(day=TruncDate("created_at", tzinfo=UTC))
            .values("day")
            .annotate(**_sums(model))
        )
        for row in rows:
            if row["day"] in per_day:
                per_day[row["day"]] += _spend(row)
    if deleted is not None:
        kept = (
            DeletedSpend.objects.filter(day__gte=first, **deleted)
            .order_by()
            .values("day")
            .annotate(**_DELETED_SUMS)
        )
        for row in kept:
            if row["day"] in per_day:
                per_day[row["day"]] += _spend(row)
    return [{"day": day.isoformat(), **spend.to_dict()} for day, spend in per_day.items()]


def spend_to_keep(debates: QuerySet[Debate]) -> dict[tuple[int, int | None, date], Spend]:
    """Return the spend of the stored calls of ``debates`` by owner, schedule and UTC
    day: what ``DeletedSpend`` keeps of them when they are deleted."""
    kept: dict[tuple[int, int | None, date], Spend] = defaultdict(Spend)
    for model in call_models():
        rows = (
            model.objects.filter(debate__in=debates)
            .annotate(day=TruncDate("created_at", tzinfo=UTC))
            .order_by()
            .values("debate__owner_id", "debate__schedule_id", "day")
            .annotate(**_sums(model))
        )
        for row in rows:
            kept[row["debate__owner_id"], row["debate__schedule_id"], row["day"]] += _spend(row)
    return dict(kept)


def token_budget_of(*, owner: Any) -> TokenBudget:
    """Return the user's budget; an unsaved one, with no budget and no cap, when the user
    has never set one."""
    return TokenBudget.objects.filter(owner=owner).first() or TokenBudget(owner=owner)


def model_price_get(*, price_id: int) -> ModelPrice:
    """Return a row of the price table."""
    price = ModelPrice.objects.filter(pk=price_id).first()
    if price is None:
        raise NotFound("Price not found.")
    return price


def debate_spend(*, debate_id: int) -> Spend:
    """Return what one debate's calls used and cost."""
    return spend_of(debate_id=debate_id)


def waiting_for_person(debate: Debate) -> str:
    """Return what ``debate`` waits for from the person, and until when ("" for nothing)."""
    if debate.human_due_at is None or debate.status not in ACTIVE_STATUSES:
        return ""
    what = "vote" if debate.status == DebateStatus.VOTING else f"turn, round {debate.current_round}"
    until = timezone.localtime(debate.human_due_at).strftime("%Y-%m-%d %H:%M %Z")
    return f"the person's {what}, until {until}"


RUN_LEVELS = ("L1", "L2")


def schedules_with_runs(*, owner: Any) -> QuerySet[Schedule]:
    """Return the owner's schedules, each with ``runs_L1`` and ``runs_L2``: how many of
    its debates ran at each level (a skip at L0 is in its ``skips_by_reason``)."""
    return Schedule.objects.filter(owner=owner).annotate(
        **{
            f"runs_{level}": Count("debates", filter=Q(debates__level_used=level))
            for level in RUN_LEVELS
        }
    )
