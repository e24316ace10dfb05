"""Index the debates by origin and hold each origin to the source it names (apart from
the filled rows of 0008: PostgreSQL alters no table with updates pending in the same
transaction)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("debates", "0009_debate_origin")]

    operations = [
        migrations.AddIndex(
            model_name="debate",
            index=models.Index(
                fields=["owner", "origin", "-created_at"], name="debates_deb_owner_i_632bb7_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="debate",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("backtest__isnull", True), ("origin", "manual"), ("schedule__isnull", True)
                    ),
                    models.Q(("backtest__isnull", True), ("origin", "schedule")),
                    models.Q(("origin", "backtest"), ("schedule__isnull", True)),
                    _connector="OR",
                ),
                name="debate_origin_names_its_source",
            ),
        ),
    ]
