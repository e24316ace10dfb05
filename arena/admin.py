"""Admin helpers shared by the apps: write-only secret fields, checked outbound URLs."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from arena.fields import mask_secret
from arena.outbound import OutboundRefused, check_no_user_info, check_url


def secret_form(model: type, secret_fields: tuple[str, ...]) -> type[forms.ModelForm]:
    """Return a ModelForm where each secret is write-only: blank keeps the stored value."""

    class SecretForm(forms.ModelForm):
        class Meta:
            fields = "__all__"  # noqa: DJ007 - the admin chooses the fields it shows

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            for name in secret_fields:
                stored = bool(self.instance.pk and getattr(self.instance, name))
                self.fields[name] = forms.CharField(
                    required=False,
                    strip=True,
                    widget=forms.PasswordInput(render_value=False),
                    help_text="Stored encrypted; leave blank to keep the current value."
                    if stored
                    else "Stored encrypted, never shown again.",
                )
                self.initial[name] = ""

        def clean(self) -> dict[str, Any]:
            cleaned = super().clean()
            for name in secret_fields:
                if not cleaned.get(name) and self.instance.pk:
                    cleaned[name] = getattr(self.instance, name)
            return cleaned

    SecretForm.Meta.model = model
    return SecretForm


class OutboundUrlAdminMixin:
    """Refuse, as the API does at save, a URL the outbound policy would not let the
    service call, or one carrying a user name or password (``arena.outbound``): each of
    ``outbound_url_fields``."""

    outbound_url_fields: tuple[str, ...] = ()

    def get_form(self, request: Any, obj: Any = None, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, **kwargs)
        names = self.outbound_url_fields

        class OutboundUrlForm(form):
            def clean(self) -> dict[str, Any]:
                cleaned = super().clean()
                for name in names:
                    if cleaned.get(name):
                        try:
                            check_no_user_info(cleaned[name])
                            check_url(cleaned[name])
                        except OutboundRefused as exc:
                            self.add_error(name, str(exc))
                return cleaned

        return OutboundUrlForm


class SecretAdminMixin:
    """Show secrets masked in lists and pages; edit them write-only."""

    secret_fields: tuple[str, ...] = ()

    def get_form(self, request: Any, obj: Any = None, **kwargs: Any) -> Any:
        kwargs["form"] = secret_form(self.model, self.secret_fields)
        return super().get_form(request, obj, **kwargs)


@admin.display(description="key")
def masked_key(obj: Any) -> str:
    """Return the masked API key of ``obj`` for list columns."""
    return mask_secret(obj.api_key) or "-"
