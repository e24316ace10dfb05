import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from arena.admin import OutboundUrlAdminMixin, SecretAdminMixin, masked_key
from arena.exceptions import ApplicationError, ValidationError
from debates.engine.book import Book, book_text, record_text
from debates.models import (
    AIModel,
    Ballot,
    Debate,
    DebateOrigin,
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
    SeatKind,
    TokenBudget,
    TokenLedger,
    Vote,
)
from debates.providers.capabilities import CapabilityError
from debates.providers.capabilities import parse as parse_capabilities
from debates.providers.catalog import lifecycle
from debates.selectors import waiting_for_person
from debates.services import debates_delete
from debates.services.checks import ai_model_check
from debates.services.inputs import SEATING_FIELDS
from debates.services.schedules import (
    schedule_check,
    schedule_create,
    schedule_delete,
    schedule_pause,
    schedule_resume,
    schedule_update,
)

SCHEDULE_FIELDS = (
    "owner",
    "name",
    "strategy",
    "symbol",
    "participants",
    "max_rounds",
    "prompt_variant",
    "auto_execute",
    "trader",
    "interval_minutes",
    "enabled",
    "replay_as_of",
    "cache",
    "daily_token_budget",
    "daily_token_cap",
    "level",
    *SEATING_FIELDS,
)
SCHEDULE_READONLY_FIELDS = (
    "periodic_task",
    "last_fired_at",
    "last_debate",
    "run_count",
    "skip_count",
    "last_skip_reason",
    "created_at",
    "updated_at",
)


class ReadOnlyInline(admin.TabularInline):
    """A child list shown on the debate page; children are written by the engine only."""

    extra = 0
    can_delete = False
    show_change_link = True

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None):
        return False


class ParticipantInline(ReadOnlyInline):
    model = Participant
    fields = ("speak_order", "kind", "personality", "ai_model")


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ("round", "participant", "status", "positions", "argument", "latency_ms")
    ordering = ("round", "participant__speak_order")

    @admin.display(description="positions")
    def positions(self, message: Message) -> str:
        return positions_text(message.decisions) or "-"

    @admin.display(description="argument")
    def argument(self, message: Message) -> str:
        if message.status == "error":
            return format_html("<strong>failed</strong>: {}", json.dumps(message.error))
        return folded(message.reasoning or message.content)


def positions_text(decisions: list[dict[str, Any]]) -> str:
    """Return a turn's per-coin positions on one line: ``BTCUSDT open_long 67 · ...``."""
    return " · ".join(
        f"{d.get('symbol')} {d.get('action')} {d.get('confidence', '')}".strip()
        for d in decisions or []
        if isinstance(d, dict)
    )


def folded(text: str, opening: int = 140) -> str:
    """Return ``text`` as HTML folded after its first ``opening`` characters (escaped)."""
    if len(text) <= opening:
        return format_html('<div class="admin-text">{}</div>', text)
    return format_html(
        '<details class="admin-text"><summary>{} …</summary>{}</details>',
        text[:opening].rstrip(),
        text,
    )


class VoteInline(ReadOnlyInline):
    model = Vote
    fields = (
        "participant",
        "symbol",
        "action",
        "confidence",
        "leverage",
        "position_pct",
        "stop_loss",
        "take_profit",
        "abstained",
        "abstain_reason",
    )


class DecisionInline(ReadOnlyInline):
    model = Decision
    fields = (
        "symbol",
        "is_primary",
        "action",
        "confidence",
        "leverage",
        "position_pct",
        "stop_loss",
        "take_profit",
        "scores",
        "clamps",
        "reason",
    )


class JudgeCallInline(ReadOnlyInline):
    """The judge's calls; each one's page shows its prompt and answer."""

    model = JudgeCall
    fields = (
        "kind",
        "round",
        "judge",
        "temperature",
        "status",
        "parse_status",
        "summary",
        "error",
        "latency_ms",
        "cached",
    )
    ordering = ("round", "kind", "judge")

    @admin.display(description="summary")
    def summary(self, obj: JudgeCall) -> str:
        result = obj.result if isinstance(obj.result, dict) else {}
        return result.get("text", "") if obj.kind == "round_summary" else ""


class JudgeScoreInline(ReadOnlyInline):
    model = JudgeScore
    fields = ("participant", "score", "items", "agreement", "judges", "missing")
    ordering = ("participant__speak_order",)


@admin.register(AIModel)
class AIModelAdmin(OutboundUrlAdminMixin, SecretAdminMixin, admin.ModelAdmin):
    secret_fields = ("api_key",)
    outbound_url_fields = ("base_url",)
    list_display = (
        "name",
        "owner",
        "provider",
        "model_name",
        masked_key,
        "enabled",
        "catalogue_warning",
        "training_cutoff",
        "timeout_seconds",
        "created_at",
    )
    list_filter = ("provider", "enabled")
    search_fields = ("name", "model_name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("catalogue_warning", "created_at", "updated_at")
    autocomplete_fields = ("owner",)
    actions = ("check_connection",)

    @admin.action(description="Check the connection of the selected AI models")
    def check_connection(self, request: HttpRequest, queryset: QuerySet[AIModel]) -> None:
        for model in queryset:
            outcome = ai_model_check(ai_model_id=model.pk)
            level = messages.SUCCESS if outcome.ok else messages.ERROR
            self.message_user(request, outcome.message, level=level)

    @admin.display(description="catalogue")
    def catalogue_warning(self, obj: AIModel) -> str:
        """Show the catalogue's warning for a deprecated or retired model, else "-"."""
        if obj.pk is None:
            return "-"
        return lifecycle(obj.provider, obj.model_name, timezone.localdate()).warning or "-"

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, **kwargs)

        class CapabilitiesForm(form):
            def clean_capabilities(self) -> Any:
                """Refuse an override the catalogue's rules refuse, naming the key."""
                value = self.cleaned_data.get("capabilities") or {}
                try:
                    parse_capabilities(value)
                except CapabilityError as error:
                    raise forms.ValidationError(str(error)) from None
                return value

        return CapabilitiesForm


class WaitsForPersonFilter(admin.SimpleListFilter):
    """Debates that wait for the person in their human seat, or not."""

    title = "waits for a person"
    parameter_name = "waits_for_person"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Debate]) -> QuerySet[Debate]:
        if self.value() in ("yes", "no"):
            return queryset.filter(human_due_at__isnull=self.value() == "no")
        return queryset


def not_applying(debate: Debate | None) -> set[str]:
    """Return the fields of ``debate`` (a new one: a manual debate) that say nothing of it:
    the interval and schedule of a debate no schedule fired, the backtest of one no
    backtest ran, the judge's count without a judge, the open-interest ranking's settings
    with the ranking off, and the person's time and wait without a human seat."""
    origin = debate.origin if debate is not None else DebateOrigin.MANUAL
    hidden = set()
    if origin != DebateOrigin.SCHEDULE:
        hidden |= {"interval_minutes", "schedule"}
    if origin != DebateOrigin.BACKTEST:
        hidden.add("backtest")
    if debate is None or debate.judge_model_id is None:
        hidden.add("judge_count")
    if debate is None or not debate.enable_oi_ranking:
        hidden |= {"oi_ranking_limit", "oi_duration"}
    if debate is None or not debate.participants.filter(kind=SeatKind.HUMAN).exists():
        hidden |= {"human_turn_timeout_minutes", "human_due_at", "waits_for"}
    return hidden


@admin.register(Debate)
class DebateAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "owner",
        "status",
        "origin",
        "waits_for",
        "rounds",
        "symbol",
        "created_at",
    )
    list_filter = (
        "status",
        "origin",
        WaitsForPersonFilter,
        "phase",
        "prompt_variant",
        "auto_execute",
    )
    search_fields = ("name", "symbol", "owner__username")
    list_select_related = ("owner",)
    date_hierarchy = "created_at"
    # The snapshot is shown summarised (``snapshot``; its prompt renderings are the snapshot
    # again); the mode's models, range and output caps are in the API's detail, and kept
    # off this page to keep it small.
    exclude = (
        "market_snapshot",
        "book",
        "track_record",
        "caller_task",
        "market_text",
        "market_summary",
        "mode_models",
        "temperature_range",
        "max_output_tokens",
    )
    readonly_fields = (
        "status",
        "pace",
        "steps_released",
        "step_outcomes",
        "waits_for",
        "human_due_at",
        "phase",
        "current_round",
        "current_speaker",
        "symbols",
        "snapshot",
        "awaits_book",
        "book_shown",
        "track_record_shown",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "progressed_at",
        "origin",
        "schedule",
        "backtest",
        "judge_model",
        "judge_count",
        "weighting",
        # What the create checked and the gate decided: shown, never edited here.
        "level",
        "level_used",
        "level_reasons",
        "forced",
        "stopped_early",
        "mode",
        "role_model_map",
    )
    autocomplete_fields = ("owner", "strategy", "trader")
    inlines = (
        ParticipantInline,
        MessageInline,
        VoteInline,
        JudgeScoreInline,
        DecisionInline,
        JudgeCallInline,
    )
    judge_inlines = (JudgeScoreInline, JudgeCallInline)

    def has_change_permission(self, request: HttpRequest, obj: Debate | None = None) -> bool:
        """Let a pending debate be changed, not one that has started: its settings are
        what it ran with (its page then shows them all read-only)."""
        if obj is not None and obj.status != DebateStatus.PENDING:
            return False
        return super().has_change_permission(request, obj)

    def get_fields(self, request: HttpRequest, obj: Debate | None = None) -> list[str]:
        """Leave out the fields that do not apply to the debate (``not_applying``)."""
        hidden = not_applying(obj)
        return [name for name in super().get_fields(request, obj) if name not in hidden]

    def get_inlines(self, request: HttpRequest, obj: Debate | None) -> list[type]:
        """Leave the judge's scores and calls out of a debate that has no judge."""
        judged = obj is not None and obj.judge_model_id is not None
        return [i for i in self.inlines if judged or i not in self.judge_inlines]

    def delete_model(self, request: HttpRequest, obj: Debate) -> None:
        debates_delete(debates=Debate.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Debate]) -> None:
        debates_delete(debates=queryset)

    @admin.display(description="Waits for", ordering="human_due_at")
    def waits_for(self, debate: Debate) -> str:
        """Say what the debate waits for from the person in its human seat, and until when."""
        return waiting_for_person(debate) or "–"

    @admin.display(description="round", ordering="current_round")
    def rounds(self, debate: Debate) -> str:
        return f"{debate.current_round}/{debate.max_rounds}"

    @admin.display(description="book")
    def book_shown(self, debate: Debate) -> str:
        """The trader's account as the votes saw it ("-" without a trader)."""
        if not debate.book:
            return "-"
        return format_html(
            '<pre class="admin-text">{}</pre>',
            book_text(Book.from_dict(debate.book), debate.symbols),
        )

    @admin.display(description="track record")
    def track_record_shown(self, debate: Debate) -> str:
        """Each voter's reviewed calls as its vote saw them ("-" when none was shown)."""
        if debate.track_record is None:
            return "-"
        seats = {str(p.pk): str(p) for p in debate.participants.all()}
        return format_html_join(
            "",
            '<p>{}</p><pre class="admin-text">{}</pre>',
            (
                (seats.get(seat, seat), record_text(calls))
                for seat, calls in debate.track_record.items()
            ),
        )

    @admin.display(description="market snapshot")
    def snapshot(self, debate: Debate) -> str:
        """The snapshot as its one-line-per-coin summary, the rest (indicators, notes)
        folded away, the raw candles left out."""
        if not debate.market_snapshot:
            return "-"
        from debates.serializers import snapshot_without_candles
        from strategies.snapshots import market_summary

        details = json.dumps(snapshot_without_candles(debate.market_snapshot), indent=1)
        return format_html(
            '<pre class="admin-text">{}</pre><details class="admin-text"><summary>'
            "indicators and notes</summary><pre>{}</pre></details>",
            market_summary(debate.market_snapshot),
            details,
        )


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = (
        "debate",
        "round",
        "participant",
        "message_type",
        "status",
        "parse_status",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "tokens_estimated",
        "cost_usd",
        "created_at",
    )
    list_filter = ("status", "parse_status", "message_type")
    search_fields = ("debate__name", "content")
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in Message._meta.fields]


@admin.register(Ballot)
class BallotAdmin(admin.ModelAdmin):
    list_display = (
        "debate",
        "participant",
        "status",
        "parse_status",
        "latency_ms",
        "cost_usd",
        "created_at",
    )
    list_filter = ("status", "parse_status")
    search_fields = ("debate__name",)
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in Ballot._meta.fields]


@admin.register(DroppedCall)
class DroppedCallAdmin(admin.ModelAdmin):
    """Calls answered after their debate had left their step: counted in the spend,
    their answers not used; written by the steps only."""

    list_display = (
        "debate",
        "kind",
        "round",
        "participant",
        "reason",
        "debate_status",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "created_at",
    )
    list_filter = ("reason", "kind")
    search_fields = ("debate__name",)
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in DroppedCall._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(TokenBudget)
class TokenBudgetAdmin(admin.ModelAdmin):
    """A user's daily token budget and hard caps, on tokens and in USD."""

    list_display = ("owner", "daily_token_budget", "daily_token_cap", "daily_usd_cap", "updated_at")
    list_editable = ("daily_token_budget", "daily_token_cap", "daily_usd_cap")
    search_fields = ("owner__username",)


@admin.register(TokenLedger)
class TokenLedgerAdmin(admin.ModelAdmin):
    """The tokens reserved and used per day; written by model calls only."""

    list_display = ("day", "scope", "scope_id", "used_tokens")
    list_filter = ("scope", "day")
    readonly_fields = ("scope", "scope_id", "day", "used_tokens")


@admin.register(DeletedSpend)
class DeletedSpendAdmin(admin.ModelAdmin):
    """What the calls of deleted debates used and cost; written by debate deletes only."""

    list_display = ("day", "owner", "schedule", "calls", "prompt_tokens", "cost_usd")
    list_filter = ("day",)
    search_fields = ("owner__username",)
    list_select_related = ("owner", "schedule")
    readonly_fields = [f.name for f in DeletedSpend._meta.fields]


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    """The price table: USD per million tokens, used for every later call's cost."""

    list_display = ("provider", "model_name", *ModelPrice.PRICE_COLUMNS, "updated_at")
    list_editable = ModelPrice.PRICE_COLUMNS
    list_filter = ("provider",)
    search_fields = ("model_name",)


@admin.register(Vote)
class VoteAdmin(admin.ModelAdmin):
    list_display = ("debate", "participant", "symbol", "action", "confidence", "abstained")
    list_filter = ("action", "abstained", "symbol")
    search_fields = ("debate__name", "symbol")
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in Vote._meta.fields]


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    list_display = ("debate", "kind", "round", "judge", "status", "parse_status", "latency_ms")
    list_filter = ("kind", "status", "parse_status")
    search_fields = ("debate__name", "content")
    list_select_related = ("debate",)
    readonly_fields = [f.name for f in JudgeCall._meta.fields]


@admin.register(JudgeScore)
class JudgeScoreAdmin(admin.ModelAdmin):
    list_display = ("debate", "participant", "score", "agreement", "judges", "missing")
    search_fields = ("debate__name",)
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in JudgeScore._meta.fields]


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = (
        "debate",
        "symbol",
        "is_primary",
        "action",
        "confidence",
        "leverage",
        "position_pct",
        "created_at",
    )
    list_filter = ("action", "is_primary", "symbol")
    search_fields = ("debate__name", "symbol")
    list_select_related = ("debate",)
    readonly_fields = [f.name for f in Decision._meta.fields]


class ScheduleAdminForm(forms.ModelForm):
    """The schedule form: refused by the same rules as the API, next to each field."""

    class Meta:
        model = Schedule
        fields = SCHEDULE_FIELDS

    def clean(self) -> dict[str, Any]:
        """Check the template with the schedule service; show each refusal on its field."""
        cleaned = super().clean()
        if self.errors:
            return cleaned
        owner = cleaned.get("owner") or self.instance.owner
        try:
            schedule_check(owner=owner, data=schedule_values(cleaned))
        except ValidationError as exc:
            for name, errors in exc.fields.items():
                # participants[1].ai_model is shown on the participants field
                field = name.split("[")[0].split(".")[0]
                self.add_error(field if field in self.fields else None, errors)
        return cleaned


def schedule_values(cleaned: dict[str, Any]) -> dict[str, Any]:
    """Return the service input of a schedule form: objects become ids, owner goes."""
    values = {name: cleaned[name] for name in SCHEDULE_FIELDS if name in cleaned}
    values.pop("owner", None)
    for name in ("strategy", "trader"):
        if name in values:
            values[name] = values[name].pk if values[name] is not None else None
    return values


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    """Schedules, written only through ``debates.services.schedules``, so every save,
    pause, resume and delete keeps the Celery beat entry in step."""

    form = ScheduleAdminForm
    fields = (*SCHEDULE_FIELDS, *SCHEDULE_READONLY_FIELDS)
    list_display = (
        "name",
        "owner",
        "enabled",
        "interval_minutes",
        "auto_execute",
        "replay_as_of",
        "run_count",
        "skip_count",
        "last_fired_at",
        "last_skip_reason",
    )
    list_filter = ("enabled", "auto_execute")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = SCHEDULE_READONLY_FIELDS
    autocomplete_fields = ("owner", "strategy", "trader")
    actions = ("pause_schedules", "resume_schedules")

    def get_readonly_fields(self, request: HttpRequest, obj: Schedule | None = None) -> tuple:
        # The owner of an existing schedule stays: its debates and objects are theirs.
        return self.readonly_fields + (("owner",) if obj is not None else ())

    def save_model(
        self, request: HttpRequest, obj: Schedule, form: forms.ModelForm, change: bool
    ) -> None:
        """Create or change the schedule and its beat entry through the service."""
        values = schedule_values(form.cleaned_data)
        if change:
            saved = schedule_update(owner=obj.owner, schedule_id=obj.pk, changes=values)
        else:
            saved = schedule_create(owner=form.cleaned_data["owner"], data=values)
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        schedule_delete(owner=obj.owner, schedule_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset.select_related("owner").order_by("pk"):
            schedule_delete(owner=schedule.owner, schedule_id=schedule.pk)

    @admin.action(description="Pause the selected schedules")
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        schedules = list(queryset.select_related("owner").order_by("pk"))
        for schedule in schedules:
            schedule_pause(owner=schedule.owner, schedule_id=schedule.pk)
        self.message_user(request, f"Paused {len(schedules)} schedule(s).", messages.SUCCESS)

    @admin.action(description="Resume the selected schedules")
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        resumed = 0
        for schedule in queryset.select_related("owner").order_by("pk"):
            try:
                schedule_resume(owner=schedule.owner, schedule_id=schedule.pk)
            except ApplicationError as exc:
                self.message_user(
                    request,
                    f"{schedule.name} stays paused: "
                    + "; ".join(
                        f"{name}: {' '.join(map(str, errors))}"
                        for name, errors in exc.fields.items()
                    ),
                    messages.ERROR,
                )
            else:
                resumed += 1
        self.message_user(request, f"Resumed {resumed} schedule(s).", messages.SUCCESS)
