"""Drop the price rows 0001 seeded, where an operator left them as seeded: the model
catalogue (``debates/providers/catalogue.toml``) holds the list prices, and a stored
row, which overrides it, is an operator's own price."""

from decimal import Decimal

from django.db import migrations

SEEDED = [
    ("deepseek", "deepseek-v4-flash", "0.28", "0.028", "0.42", None),
    ("qwen", "qwen-plus", "0.40", "0.08", "1.20", None),
    ("openai", "gpt-5-mini", "0.25", "0.025", "2.00", None),
    ("claude", "claude-sonnet-4-6", "3.00", "0.30", "15.00", "3.75"),
    ("gemini", "gemini-2.5-flash", "0.30", "0.03", "2.50", None),
    ("grok", "grok-4", "3.00", "0.75", "15.00", None),
    ("kimi", "kimi-k2-0905-preview", "0.60", "0.15", "2.50", None),
]


def drop_seeded_prices(apps, schema_editor):
    model_price = apps.get_model("debates", "ModelPrice")
    for provider, model_name, inp, cached, out, write in SEEDED:
        model_price.objects.filter(
            provider=provider,
            model_name=model_name,
            input_usd_per_mtok=Decimal(inp),
            cached_input_usd_per_mtok=Decimal(cached),
            output_usd_per_mtok=Decimal(out),
            cache_write_usd_per_mtok=None if write is None else Decimal(write),
        ).delete()


class Migration(migrations.Migration):
    dependencies = [("debates", "0006_reasoning_tokens")]

    operations = [migrations.RunPython(drop_seeded_prices, migrations.RunPython.noop)]
