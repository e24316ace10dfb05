"""Say where each debate came from: ``origin`` and, for a backtest's step, its backtest.

Existing rows are filled from the links they have: a debate with a schedule is a
schedule's firing, one that a backtest step holds is that backtest's, and the others
are manual (a schedule deleted earlier left its debates no trace of it).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def fill_origins(apps, schema_editor):
    debate = apps.get_model("debates", "Debate")
    step = apps.get_model("backtests", "BacktestStep")
    debate.objects.filter(schedule__isnull=False).update(origin="schedule")
    stepped = step.objects.filter(debate_id=OuterRef("pk")).values("backtest_id")[:1]
    debate.objects.filter(pk__in=step.objects.values("debate_id")).update(
        origin="backtest", backtest_id=Subquery(stepped)
    )


class Migration(migrations.Migration):
    dependencies = [
        ("backtests", "0003_book"),
        ("debates", "0008_debate_start_log"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="debate",
            name="backtest",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="debates",
                to="backtests.backtest",
            ),
        ),
        migrations.AddField(
            model_name="debate",
            name="origin",
            field=models.CharField(
                choices=[
                    ("manual", "Manual"),
                    ("schedule", "A schedule's firing"),
                    ("backtest", "A backtest's step"),
                ],
                default="manual",
                help_text="Where it came from; a schedule's or a backtest's debate names it "
                "below (empty once that is deleted).",
                max_length=8,
            ),
        ),
        migrations.RunPython(fill_origins, migrations.RunPython.noop),
    ]
