"""Admin helpers shared by the apps: write-only secret fields, checked outbound URLs;
the admin of API tokens, in place of DRF's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from rest_framework.authtoken.models import TokenProxy

from arena.auth import token_expires_at, token_revoke
from arena.fields import mask_secret
from arena.outbound import OutboundUrlValidator


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
                            OutboundUrlValidator()(cleaned[name])
                        except ValidationError as exc:
                            self.add_error(name, exc.messages)
                return cleaned

        return OutboundUrlForm


class SecretAdminMixin:
    """Show secrets masked in lists and pages; edit them write-only."""

    secret_fields: tuple[str, ...] = ()

    def get_form(self, request: Any, obj: Any = None, **kwargs: Any) -> Any:
        kwargs["form"] = secret_form(self.model, self.secret_fields)
        return super().get_form(request, obj, **kwargs)


def decimal_column(name: str) -> Callable[[Any], str]:
    """Return a list column showing the decimal field ``name`` in fixed point with no
    trailing zeros ("57970.9", not the column's "57970.9000000000"), "-" when empty."""

    @admin.display(description=name.replace("_", " "), ordering=name)
    def column(obj: Any) -> str:
        value = getattr(obj, name)
        return "-" if value is None else format(value.normalize(), "f")

    column.__name__ = name  # the column's CSS class, field-<name>, as for the field
    return column


@admin.display(description="key")
def masked_key(obj: Any) -> str:
    """Return the masked API key of ``obj`` for list columns."""
    return mask_secret(obj.api_key) or "-"


# DRF's own admin of API tokens lists every key in full, and names each token by its key
# (the token's primary key, so also in links, check boxes and the admin's log).
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


@admin.register(TokenProxy)
class ApiTokenAdmin(admin.ModelAdmin):
    """API tokens: which user has one, since when and until when, its key masked; a
    token is revoked from its row, and none is added or changed here (POST
    /api/auth/token issues them). No page, link or log entry names a token by its key,
    its primary key: the row and the revoke page are the user's."""

    list_display = ("user", "masked_key", "created", "expires_at", "revoke")
    list_display_links = None
    list_select_related = ("user",)
    list_filter = ("created",)
    search_fields = ("user__username",)
    ordering = ("user__username",)
    actions = None  # an action's check boxes carry each row's primary key

    @admin.display(description="key")
    def masked_key(self, obj: TokenProxy) -> str:
        return mask_secret(obj.key)

    @admin.display(description="expires")
    def expires_at(self, obj: TokenProxy) -> datetime:
        return token_expires_at(obj)

    @admin.display(description="")
    def revoke(self, obj: TokenProxy) -> str:
        url = reverse(f"admin:{self._url_name('revoke')}", args=[obj.user_id])
        return format_html('<a href="{}">Revoke</a>', url)

    def _url_name(self, view: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{view}"

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "",
                self.admin_site.admin_view(self.changelist_view),
                name=self._url_name("changelist"),
            ),
            path(
                "<int:user_id>/revoke/",
                self.admin_site.admin_view(self.revoke_view),
                name=self._url_name("revoke"),
            ),
        ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def revoke_view(self, request: HttpRequest, user_id: int) -> HttpResponse:
        """Ask, then revoke the API token of the user ``user_id`` (``token_revoke``)."""
        if not self.has_delete_permission(request):
            raise PermissionDenied
        token = self.get_queryset(request).select_related("user").filter(user_id=user_id).first()
        if token is None:
            raise Http404("This user has no API token.")
        shown = f"{token.user} ({mask_secret(token.key)})"
        if request.method == "POST":
            token_revoke(user=token.user)
            LogEntry.objects.create(
                user_id=request.user.pk,
                content_type=ContentType.objects.get_for_model(
                    self.model, for_concrete_model=False
                ),
                object_id=str(user_id),
                object_repr=f"API token of {shown}"[:200],
                action_flag=DELETION,
            )
            self.message_user(request, f"The API token of {shown} was revoked.", messages.SUCCESS)
            return HttpResponseRedirect(reverse(f"admin:{self._url_name('changelist')}"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Revoke an API token",
            "shown": shown,
        }
        return TemplateResponse(request, "admin/authtoken/tokenproxy/revoke.html", context)
