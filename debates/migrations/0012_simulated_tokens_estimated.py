"""Mark the tokens of the simulated model's calls as its estimate, not a provider's count:
a stored call's ``tokens_estimated``, and the estimated part of deleted debates' spend.

The calls stored before are marked by the request id the simulated model gives every
answer (``sim-`` and its digest)."""

from django.db import migrations, models

ESTIMATED = models.BooleanField(
    default=False,
    help_text="The simulated model's estimate of its tokens, not a provider's count.",
)


def mark_simulated_calls(apps, schema_editor):
    for name in ("Message", "Ballot", "JudgeCall"):
        calls = apps.get_model("debates", name).objects
        calls.filter(request_id__startswith="sim-").update(tokens_estimated=True)


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0011_answer_tokens"),
    ]

    operations = [
        migrations.AddField(model_name="ballot", name="tokens_estimated", field=ESTIMATED),
        migrations.AddField(model_name="judgecall", name="tokens_estimated", field=ESTIMATED),
        migrations.AddField(model_name="message", name="tokens_estimated", field=ESTIMATED),
        migrations.AddField(
            model_name="deletedspend",
            name="estimated_tokens",
            field=models.PositiveBigIntegerField(
                default=0,
                help_text="Tokens the simulated model estimated rather than a provider counted.",
            ),
        ),
        migrations.RunPython(mark_simulated_calls, migrations.RunPython.noop),
    ]
