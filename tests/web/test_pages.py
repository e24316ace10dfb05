"""The arena page's shell, its static files and the site's icon, login and logout (no
browser)."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.web.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def config_of(page: str) -> dict:
    """Return the JSON configuration the page hands to its script."""
    match = re.search(r'<script id="arena-config" type="application/json">(.*?)</script>', page)
    assert match is not None
    return json.loads(match.group(1))


@pytest.mark.parametrize("path", ["/", "/debates/7/"])
def test_the_page_sends_anonymous_visitors_to_the_login_page(path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={path}"


def test_the_page_is_a_shell_loading_its_own_script_and_style(user):
    # given a logged-in user
    client = Client()
    client.force_login(user)
    # when the page is opened
    response = client.get("/")
    # then it is the shell: the script and style sheet come from this server, no data yet
    assert response.status_code == 200
    page = response.content.decode()
    assert config_of(page) == {"debateId": None}
    assert re.findall(r'<script src="([^"]+)"', page) == [
        "/static/web/common.js",
        "/static/web/sidebar.js",
        "/static/web/arena.js",
    ]
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)"', page) == ["/static/web/arena.css"]
    assert "csrftoken" in response.cookies
    assert 'name="csrfmiddlewaretoken"' in page
    assert user.username in page


def test_a_debate_url_opens_the_page_on_that_debate(user):
    client = Client()
    client.force_login(user)
    response = client.get("/debates/42/")
    assert response.status_code == 200
    assert config_of(response.content.decode()) == {"debateId": 42}


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("web/arena.js", "text/javascript"),
        ("web/common.js", "text/javascript"),
        ("web/sidebar.js", "text/javascript"),
        ("web/arena.css", "text/css"),
        ("admin/css/base.css", "text/css"),
    ],
)
def test_the_static_files_are_served_without_a_static_server(path, content_type):
    response = Client().get(f"/static/{path}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    assert "Last-Modified" in response


def test_an_unchanged_static_file_is_not_sent_again():
    client = Client()
    first = client.get("/static/web/arena.js")
    again = client.get(
        "/static/web/arena.js", headers={"If-Modified-Since": first["Last-Modified"]}
    )
    assert again.status_code == 304
    assert again.content == b""


@pytest.mark.parametrize(
    "path", ["/static/web/missing.js", "/static/web/../views.py", "/static/web/%2e%2e/apps.py"]
)
def test_nothing_but_the_static_files_is_served(path):
    assert Client().get(path).status_code == 404


def test_logging_in_leads_to_the_page_asked_for(user):
    # given the login page, reached from a debate's URL
    client = Client()
    assert client.get("/login/?next=/debates/3/").status_code == 200
    # when the right password is given
    response = client.post(
        "/login/", {"username": user.username, "password": PASSWORD, "next": "/debates/3/"}
    )
    # then the user lands on that debate
    assert response.status_code == 302
    assert response["Location"] == "/debates/3/"


def test_logging_in_without_a_next_page_leads_to_the_arena(user):
    response = Client().post("/login/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_a_wrong_password_is_refused_on_the_login_page(user):
    response = Client().post("/login/", {"username": user.username, "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password." in response.content.decode()
    assert "_auth_user_id" not in response.wsgi_request.session


def test_logging_out_ends_the_session(user):
    # given a logged-in user
    client = Client()
    client.force_login(user)
    # when they log out
    response = client.post("/logout/")
    # then they are back on the login page, and the arena asks them to log in again
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert client.get("/").status_code == 302


def test_the_sites_icon_is_served_where_browsers_ask_for_it():
    # when a browser asks for the icon, as it does on every page naming none (the admin)
    response = Client().get("/favicon.ico")
    # then it is a small icon file, to anyone
    assert response.status_code == 200
    assert response["Content-Type"] == "image/vnd.microsoft.icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
    assert len(response.content) < 1024


@pytest.mark.parametrize(
    ("path", "logged_in"), [("/", True), ("/backtests/", True), ("/login/", False)]
)
def test_the_pages_name_the_sites_icon(user, path, logged_in):
    client = Client()
    if logged_in:
        client.force_login(user)
    page = client.get(path).content.decode()
    assert '<link rel="icon" href="/favicon.ico">' in page
