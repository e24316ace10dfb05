"""Project-wide reads through the ORM."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from arena.exceptions import NotFound


def one_or_none(queryset: QuerySet, **lookup: Any) -> Any:
    """Return the row of ``queryset`` that ``lookup`` selects (a model, or a tuple of a
    ``values_list``), or None when there is none.

    A row found by a key is read with ``get()``, not ``filter().first()``: ``first()``
    sorts by the model's default ordering (a debate's ``-created_at, -id``), which the
    query compiler spends time on and, through a relation, PostgreSQL joins for.
    """
    try:
        return queryset.get(**lookup)
    except queryset.model.DoesNotExist:
        return None


def owned_by(queryset: QuerySet, owner: Any | None) -> QuerySet:
    """Return the objects of ``queryset`` that ``owner`` owns; all of them for no owner
    (an operator: the admin, a management command)."""
    return queryset if owner is None else queryset.filter(owner=owner)


def owned_or_404(queryset: QuerySet, pk: int, label: str) -> Any:
    """Return the object ``pk`` of ``queryset`` (already scoped to its owner) or 404."""
    obj = queryset.filter(pk=pk).first()
    if obj is None:
        raise NotFound(f"{label} not found.")
    return obj
