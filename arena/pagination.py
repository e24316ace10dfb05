"""The page numbers of every list (``DEFAULT_PAGINATION_CLASS``).

A module of its own: DRF imports it while its own modules load, so it imports only DRF.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """DRF's page numbers, with an empty ``?page=`` refused as any other invalid page
    (DRF reads it as page 1)."""

    def get_page_number(self, request: Any, paginator: Any) -> Any:
        if request.query_params.get(self.page_query_param) == "":
            raise NotFound("Invalid page.")
        return super().get_page_number(request, paginator)
