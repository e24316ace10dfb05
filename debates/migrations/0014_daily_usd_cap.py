"""A user's daily hard cap in USD, and the USD each day's ledger has reserved and used.

The ledgers already open count in USD what their scope's stored calls of their day cost,
as a ledger opened from now on does, so that a day's count errs high, never low."""

from datetime import UTC, datetime, time

import django.core.validators
from django.conf import settings
from django.db import migrations, models
from django.db.models import Sum

CALLS = ("Message", "Ballot", "JudgeCall", "DroppedCall")
OWNER = {"user": "owner_id", "schedule": "schedule_id"}


def count_what_open_ledgers_cost(apps, schema_editor):
    deleted = apps.get_model("debates", "DeletedSpend").objects
    for ledger in apps.get_model("debates", "TokenLedger").objects.all():
        column = OWNER[ledger.scope]
        since = datetime.combine(ledger.day, time.min, tzinfo=UTC)
        cost = sum(
            apps.get_model("debates", name)
            .objects.filter(created_at__gte=since, **{f"debate__{column}": ledger.scope_id})
            .aggregate(cost=Sum("cost_usd"))["cost"]
            or 0
            for name in CALLS
        )
        kept = deleted.filter(day__gte=ledger.day, **{column: ledger.scope_id})
        cost += kept.aggregate(cost=Sum("cost_usd"))["cost"] or 0
        ledger.used_usd = cost
        ledger.save(update_fields=["used_usd"])


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0013_dropped_calls"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="tokenbudget",
            name="daily_usd_cap",
            field=models.DecimalField(
                blank=True,
                decimal_places=4,
                help_text="USD a UTC day past which no model call starts.",
                max_digits=12,
                null=True,
                validators=[django.core.validators.MinValueValidator(0)],
                verbose_name="daily USD cap",
            ),
        ),
        migrations.AddField(
            model_name="tokenledger",
            name="used_usd",
            field=models.DecimalField(decimal_places=10, default=0, max_digits=16),
        ),
        migrations.AddConstraint(
            model_name="tokenbudget",
            constraint=models.CheckConstraint(
                condition=models.Q(daily_usd_cap__isnull=True) | models.Q(daily_usd_cap__gte=0),
                name="tokenbudget_usd_cap_not_negative",
            ),
        ),
        migrations.RunPython(count_what_open_ledgers_cost, migrations.RunPython.noop),
    ]
