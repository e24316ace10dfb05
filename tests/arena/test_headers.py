"""Browser security headers: a Content-Security-Policy on every page, no inline script
on ours, and Swagger UI served from the project's own static files."""

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "font-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>")


def policy(response) -> dict[str, str]:
    """Return the directives of a response's Content-Security-Policy."""
    directives = (
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";")
    )
    return {name: value for name, value in directives}


@pytest.fixture
def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def staff(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.mark.parametrize(
    ("who", "path"),
    [
        ("anon", "/login/"),
        ("anon", "/admin/login/"),
        ("logged_in", "/"),
        ("staff", "/admin/"),
        ("staff", "/admin/debates/debate/"),
        ("staff", "/admin/debates/aimodel/add/"),
    ],
)
def test_pages_carry_the_policy_and_no_inline_script(request, who, path):
    client = Client() if who == "anon" else request.getfixturevalue(who)
    response = client.get(path)
    assert response.status_code == 200
    assert policy(response) == POLICY
    assert INLINE_SCRIPT.findall(response.content) == []


def test_the_admin_debate_page_with_its_live_panel_carries_the_policy_and_no_inline_script(
    staff,
):
    from tests.debates.factories import DebateFactory

    response = staff.get(f"/admin/debates/debate/{DebateFactory().pk}/change/")
    assert response.status_code == 200
    assert b'id="live-debate"' in response.content
    assert policy(response) == POLICY
    assert INLINE_SCRIPT.findall(response.content) == []
    assert re.findall(rb"<style", response.content) == []


def test_the_docs_page_loads_swagger_ui_from_our_static_files_and_no_inline_script():
    # given the Swagger UI page
    client = Client()
    page = client.get("/api/docs/")
    assert page.status_code == 200
    # then its scripts and style sheet are the project's own static files
    sources = re.findall(rb'(?:src|href)="([^"]+)"', page.content)
    assert all(not source.startswith((b"http:", b"https:", b"//")) for source in sources)
    assert INLINE_SCRIPT.findall(page.content) == []
    assert policy(page) == {**POLICY, "style-src": "'self' 'unsafe-inline'"}
    # and each of them is served
    for source in sources:
        response = client.get(source.decode().replace("&amp;", "&"))
        assert response.status_code == 200, source
    script = next(s for s in sources if b"script" in s and b"docs" in s)
    assert b"/api/schema/" in client.get(script.decode().replace("&amp;", "&")).content
