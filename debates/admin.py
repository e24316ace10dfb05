from django.contrib import admin

from arena.admin import SecretAdminMixin, masked_key
from debates.models import (
    AIModel,
    Ballot,
    Debate,
    Decision,
    Message,
    Participant,
    Schedule,
    Vote,
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
    fields = ("speak_order", "personality", "ai_model")


class MessageInline(ReadOnlyInline):
    model = Message
    fields = (
        "round",
        "participant",
        "message_type",
        "status",
        "parse_status",
        "reasoning",
        "decisions",
        "error",
        "latency_ms",
    )
    ordering = ("round", "participant__speak_order")


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


@admin.register(AIModel)
class AIModelAdmin(SecretAdminMixin, admin.ModelAdmin):
    secret_fields = ("api_key",)
    list_display = (
        "name",
        "owner",
        "provider",
        "model_name",
        masked_key,
        "enabled",
        "timeout_seconds",
        "created_at",
    )
    list_filter = ("provider", "enabled")
    search_fields = ("name", "model_name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("created_at", "updated_at")
    autocomplete_fields = ("owner",)


@admin.register(Debate)
class DebateAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "owner",
        "status",
        "phase",
        "current_round",
        "symbol",
        "max_rounds",
        "auto_execute",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "phase", "prompt_variant", "auto_execute")
    search_fields = ("name", "symbol", "owner__username")
    list_select_related = ("owner",)
    date_hierarchy = "created_at"
    readonly_fields = (
        "status",
        "phase",
        "current_round",
        "current_speaker",
        "symbols",
        "market_snapshot",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "progressed_at",
        "schedule",
    )
    autocomplete_fields = ("owner", "strategy", "trader")
    inlines = (ParticipantInline, MessageInline, VoteInline, DecisionInline)


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
        "created_at",
    )
    list_filter = ("status", "parse_status", "message_type")
    search_fields = ("debate__name", "content")
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in Message._meta.fields]


@admin.register(Ballot)
class BallotAdmin(admin.ModelAdmin):
    list_display = ("debate", "participant", "status", "parse_status", "latency_ms", "created_at")
    list_filter = ("status", "parse_status")
    search_fields = ("debate__name",)
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in Ballot._meta.fields]


@admin.register(Vote)
class VoteAdmin(admin.ModelAdmin):
    list_display = ("debate", "participant", "symbol", "action", "confidence", "abstained")
    list_filter = ("action", "abstained", "symbol")
    search_fields = ("debate__name", "symbol")
    list_select_related = ("debate", "participant")
    readonly_fields = [f.name for f in Vote._meta.fields]


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


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "owner",
        "enabled",
        "interval_minutes",
        "auto_execute",
        "run_count",
        "skip_count",
        "last_fired_at",
        "last_skip_reason",
    )
    list_filter = ("enabled", "auto_execute")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = (
        "periodic_task",
        "last_fired_at",
        "last_debate",
        "run_count",
        "skip_count",
        "last_skip_reason",
        "created_at",
        "updated_at",
    )
    autocomplete_fields = ("owner", "strategy", "trader")
