"""Backtests in the admin: status, progress and headline metrics; read-only detail.

Backtests are created through the API, the page or ``manage.py backtest``, and change
only through their services, so the admin shows them and changes nothing.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from backtests.models import Backtest, BacktestStep
from backtests.services.reports import closed_by_text


def _metric(backtest: Backtest, rule: str, name: str) -> float | None:
    return (backtest.headline or {}).get(rule, {}).get(name)


class StepInline(admin.TabularInline):
    model = BacktestStep
    fields = (
        "index",
        "as_of",
        "level",
        "skip_reason",
        "debate",
        "baseline_seat",
        "baseline_target",
        "baseline_state",
        "baseline_note",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("debate")


@admin.register(Backtest)
class BacktestAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "owner",
        "status",
        "progress",
        "start",
        "end",
        "interval_minutes",
        "debate_return",
        "buy_and_hold_return",
        "debate_drawdown",
        "flip_accuracy",
        "final_vs_round1",
        "contaminated",
        "warnings",
        "created_at",
    )
    list_filter = ("status", "book", "coins", "cache")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    date_hierarchy = "created_at"
    inlines = (StepInline,)

    def get_queryset(self, request: HttpRequest):
        # The list shows the headline; a backtest's page reads its report when it needs it.
        return super().get_queryset(request).defer("report")

    def get_fields(self, request: HttpRequest, obj=None) -> list[str]:
        hidden = ("id", "report", "headline")
        shown = [f.name for f in Backtest._meta.fields if f.name not in hidden]
        return [*shown, "metrics"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        return self.get_fields(request, obj)

    @admin.display(description="metrics per rule")
    def metrics(self, obj: Backtest) -> str:
        rules = (obj.report or {}).get("rules", ())
        if not rules:
            return "-"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>",
            (
                (
                    run["label"],
                    f"{run['metrics']['final_equity']:.2f}",
                    _percent(run["metrics"]["total_return"]),
                    _share(run["metrics"]["max_drawdown"]),
                    _figure(run["metrics"]["sharpe"]),
                    run["metrics"]["trades"],
                    closed_by_text(run.get("closed_by", {})),
                    len(run.get("guard_trips", ())),
                )
                for run in rules
            ),
        )
        head = (
            "<tr><th>rule</th><th>final equity</th><th>return</th><th>max drawdown</th>"
            "<th>Sharpe</th><th>trades</th><th>closed by</th><th>guard trips</th></tr>"
        )
        return format_html("<table>{}{}</table>", mark_safe(head), rows)  # noqa: S308

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="progress")
    def progress(self, obj: Backtest) -> str:
        return f"{obj.steps_done}/{obj.steps_total}"

    @admin.display(description="debate return")
    def debate_return(self, obj: Backtest) -> str:
        return _percent(_metric(obj, "debate", "total_return"))

    @admin.display(description="buy & hold return")
    def buy_and_hold_return(self, obj: Backtest) -> str:
        return _percent(_metric(obj, "buy_and_hold", "total_return"))

    @admin.display(description="debate max drawdown")
    def debate_drawdown(self, obj: Backtest) -> str:
        return _share(_metric(obj, "debate", "max_drawdown"))

    def _evaluation(self, obj: Backtest, name: str):
        return (obj.headline or {}).get("evaluation", {}).get(name)

    @admin.display(description="flip accuracy")
    def flip_accuracy(self, obj: Backtest) -> str:
        value = self._evaluation(obj, "flip_accuracy")
        return "-" if value is None else f"{value:.0%}"

    @admin.display(description="accuracy: final / round 1")
    def final_vs_round1(self, obj: Backtest) -> str:
        final, first = (self._evaluation(obj, n) for n in ("final_accuracy", "round1_accuracy"))
        shown = ["-" if v is None else f"{v:.0%}" for v in (final, first)]
        return " / ".join(shown)

    @admin.display(description="contaminated", boolean=True)
    def contaminated(self, obj: Backtest) -> bool | None:
        return self._evaluation(obj, "contaminated")

    @admin.display(description="monitor warnings")
    def warnings(self, obj: Backtest) -> str:
        value = self._evaluation(obj, "warnings")
        return "-" if value is None else str(value)


def _percent(value: float | None) -> str:
    """A return: signed."""
    return "-" if value is None else f"{value:+.2%}"


def _share(value: float | None) -> str:
    """A drawdown: a share, with no sign."""
    return "-" if value is None else f"{value:.2%}"


def _figure(value: float | None) -> str:
    """A ratio (Sharpe): two decimals, "-" where it is undefined (no variation)."""
    return "-" if value is None else f"{value:.2f}"
