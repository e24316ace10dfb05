"""Outcome reviews in the admin: read-only, as the review service wrote them."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from evaluations.models import DebateReview, DecisionReview, VoteReview


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class DecisionReviewInline(admin.TabularInline):
    model = DecisionReview
    fields = (
        "symbol",
        "round1_action",
        "round1_verdict",
        "action",
        "verdict",
        "realised_return",
        "executed",
        "realised_pnl",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(DebateReview)
class DebateReviewAdmin(ReadOnly):
    list_display = ("debate", "instant", "horizon_minutes", "flat_pct", "source", "reviewed_at")
    list_filter = ("source", "horizon_minutes")
    list_select_related = ("debate",)
    date_hierarchy = "instant"
    inlines = (DecisionReviewInline,)


@admin.register(DecisionReview)
class DecisionReviewAdmin(ReadOnly):
    list_display = (
        "review",
        "symbol",
        "round1_action",
        "action",
        "flipped",
        "verdict",
        "round1_verdict",
        "realised_return",
        "executed",
        "realised_pnl",
    )
    list_filter = ("verdict", "round1_verdict", "action", "executed")
    search_fields = ("symbol",)

    @admin.display(boolean=True, description="flipped")
    def flipped(self, obj: DecisionReview) -> bool:
        return obj.flipped


@admin.register(VoteReview)
class VoteReviewAdmin(ReadOnly):
    list_display = (
        "review",
        "ai_model",
        "personality",
        "symbol",
        "action",
        "confidence",
        "verdict",
        "realised_return",
        "known_at",
    )
    list_filter = ("verdict", "personality", "action")
    list_select_related = ("review", "ai_model")
