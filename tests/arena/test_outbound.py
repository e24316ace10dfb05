"""The outbound URL policy: no URL a user enters makes the service call an internal
address, at save (a 400 naming the field) or at the call (a DNS answer that changed, a
redirect); allowed only when the operator allow-lists the address. The tests run with
production's policy (an empty allow-list) unless they say otherwise."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from django.test import override_settings

from arena.outbound import (
    OutboundRefused,
    check_url,
    parse_allowed,
    use_resolver,
)
from debates.models import AIModel, Message
from debates.providers import DeadlineExceeded, TerminalProviderError, complete
from debates.services import debate_start
from strategies.market.exceptions import PoolError
from strategies.market.pool import fetch_pool
from strategies.models import Strategy
from tests.api.conftest import refusal, run_steps
from tests.arena.conftest import ai_model_admin_form
from tests.debates.events_helpers import published
from tests.debates.providers.support import FAST_RETRIES, make_config, make_request
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.pool_server import FakePool

PRODUCTION = override_settings(OUTBOUND_ALLOWED_ADDRESSES=[])
PUBLIC = "93.184.215.14"  # resolved to, never connected to
CREDENTIALS_REFUSED = (
    "Must not carry a user name or password (user:password@), which would be stored and "
    "shown as typed"
)


@pytest.fixture(autouse=True)
def production_policy() -> Iterator[None]:
    """Production's allow-list: nothing internal may be called."""
    with PRODUCTION:
        yield


class Resolver:
    """A test resolver: each name answers what ``answers`` says now (rebinding: change it)."""

    def __init__(self, **answers: str) -> None:
        self.answers = {name.replace("_", "."): value for name, value in answers.items()}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise OSError("no such host")
        return [self.answers[host]]


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1:6379/", "loopback"),
        ("http://127.8.9.10/", "loopback"),
        ("http://[::1]:6379/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://[fc00::1]/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://224.0.0.1/", "multicast"),
        ("http://[ff02::1]/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://0.0.0.0:8000/", "unspecified"),
        ("http://[::]/", "unspecified"),
        ("http://100.64.0.1/", "not globally routable"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
    ],
)
def test_every_internal_address_class_is_refused(url, kind):
    with pytest.raises(OutboundRefused, match=f"is a {kind} address"):
        check_url(url)


def test_a_name_is_refused_for_what_it_resolves_to():
    with (
        use_resolver(Resolver(metadata_internal="169.254.169.254")),
        pytest.raises(OutboundRefused) as caught,
    ):
        check_url("http://metadata.internal/latest/")
    # the message names the host, not the internal address it resolves to
    assert str(caught.value) == (
        "metadata.internal resolves to a link-local address; the service does not call "
        "internal addresses unless an operator allows them (OUTBOUND_ALLOWED_ADDRESSES)."
    )


@pytest.mark.parametrize(
    "url", [f"https://{PUBLIC}/v1", "http://[2606:4700::1111]/", "https://unresolvable.invalid/"]
)
def test_public_and_unresolvable_hosts_pass_at_save(url):
    check_url(url)  # an unresolvable name is checked again when the call connects


@pytest.mark.parametrize(
    ("allowed", "url", "refused"),
    [
        (["127.0.0.1:11434"], "http://127.0.0.1:11434/v1", False),
        (["127.0.0.1:11434"], "http://127.0.0.1:6379/", True),
        (["127.0.0.0/8"], "http://127.3.2.1:6379/", False),
        (["[::1]:8000"], "http://[::1]:8000/", False),
        (["[::1]:8000"], "http://[::1]:8001/", True),
        (["10.0.0.0/8"], "http://10.9.9.9/", False),
        (["10.0.0.0/8"], "http://192.168.0.1/", True),
    ],
)
def test_the_allow_list_admits_exactly_its_networks_and_ports(allowed, url, refused):
    with override_settings(OUTBOUND_ALLOWED_ADDRESSES=allowed):
        if refused:
            with pytest.raises(OutboundRefused):
                check_url(url)
        else:
            check_url(url)


@pytest.mark.parametrize("entry", ["localhost", "127.0.0.1:port", "[::1", "10.0.0.0/33"])
def test_a_malformed_allow_list_entry_is_an_error(entry):
    with pytest.raises(ValueError):
        parse_allowed(entry)


# --- At save: a 400 naming the field ----------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:6379/",
        "http://[::1]:6379/",
        "http://169.254.169.254/latest/meta-data/",
        "http://redis.internal:6379/",
    ],
)
def test_an_ai_model_on_an_internal_address_is_refused_at_save(api_client, base_url):
    with use_resolver(Resolver(redis_internal="127.0.0.1")):
        response = api_client.post(
            "/api/ai-models",
            {"name": "M", "provider": "openai_compatible", "model_name": "m", "base_url": base_url},
            format="json",
        )
    assert response.status_code == 400
    body = response.json()
    assert list(body["fields"]) == ["base_url"]
    assert "the service does not call internal addresses" in body["fields"]["base_url"][0]
    assert AIModel.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pool_url", "refusal"),
    [
        ("http://10.0.0.8/pool", "the service does not call internal addresses"),
        ("https://user:hunter2@pool.example.com/coins", f"{CREDENTIALS_REFUSED}."),
    ],
    ids=["internal-address", "credentials"],
)
def test_a_pool_url_the_policy_refuses_is_refused_at_save(api_client, pool_url, refusal):
    response = api_client.post(
        "/api/strategies",
        {"name": "S", "coin_source": "pool", "pool_url": pool_url, "static_coins": ["BTC"]},
        format="json",
    )
    assert response.status_code == 400
    fields = response.json()["fields"]
    assert list(fields) == ["pool_url"]
    assert refusal in fields["pool_url"][0]
    assert Strategy.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url",
    [
        "https://user:hunter2@example.com/v1",
        "https://sk-hunter2@example.com/v1",
        "https://me%40corp.com:hunter2@example.com/v1",
        f"https://user:hunter2@{PUBLIC}:8443/v1",
    ],
)
def test_an_ai_model_whose_base_url_carries_credentials_is_refused_at_save(api_client, base_url):
    # given a base URL with a user name or password in it
    body = {"name": "M", "provider": "openai_compatible", "model_name": "m", "base_url": base_url}
    # when a model is created with it
    response = api_client.post("/api/ai-models", body, format="json")
    # then it is refused, naming the field and where the key goes, without echoing it
    assert response.status_code == 400
    assert response.json() == refusal(
        {"base_url": [f"{CREDENTIALS_REFUSED}; put the key in api_key."]}
    )
    assert "hunter2" not in response.content.decode()
    assert AIModel.objects.count() == 0


@pytest.mark.django_db
def test_a_base_url_with_credentials_is_refused_on_update(api_client, user):
    # given a model on a public endpoint
    model = AIModel.objects.create(
        owner=user,
        name="M",
        provider="openai_compatible",
        model_name="m",
        base_url=f"https://{PUBLIC}/v1",
    )
    # when its base URL is changed to one carrying a password
    response = api_client.patch(
        f"/api/ai-models/{model.pk}",
        {"base_url": f"https://user:hunter2@{PUBLIC}/v1"},
        format="json",
    )
    # then it is refused and the stored URL is unchanged
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "base_url": [f"{CREDENTIALS_REFUSED}; put the key in api_key."]
    }
    model.refresh_from_db()
    assert model.base_url == f"https://{PUBLIC}/v1"


@pytest.mark.django_db
def test_a_url_with_an_at_sign_past_its_host_is_not_credentials(api_client):
    response = api_client.post(
        "/api/ai-models",
        {
            "name": "M",
            "provider": "openai_compatible",
            "model_name": "m",
            "base_url": f"https://{PUBLIC}/v1/@team",
        },
        format="json",
    )
    assert response.status_code == 201


@pytest.mark.django_db
def test_a_loopback_model_is_saved_when_the_operator_allows_it(api_client):
    with override_settings(OUTBOUND_ALLOWED_ADDRESSES=["127.0.0.1:11434"]):
        response = api_client.post(
            "/api/ai-models",
            {
                "name": "Ollama",
                "provider": "openai_compatible",
                "model_name": "llama3",
                "base_url": "http://127.0.0.1:11434/v1",
            },
            format="json",
        )
    assert response.status_code == 201


# --- At the call: DNS rebinding, redirects ----------------------------------------------


def test_a_name_that_rebinds_to_loopback_after_the_save_is_refused_at_the_call(llm_server):
    # given a model URL whose name resolved to a public address when it was saved
    resolver = Resolver(llm_rebind_test=PUBLIC)
    url = f"http://llm.rebind.test:{llm_server.port}/v1"
    with use_resolver(resolver):
        check_url(url)
        # when the name answers loopback by the time the call connects
        resolver.answers["llm.rebind.test"] = "127.0.0.1"
        config = make_config(llm_server, base_url=url)
        with pytest.raises(TerminalProviderError) as caught:
            complete(config, make_request(), policy=FAST_RETRIES)
    # then the call is refused once, never retried, and nothing reached the server
    assert caught.value.code == "address_refused"
    assert caught.value.attempts == 1
    assert llm_server.requests == []


def test_a_rebound_name_is_called_when_its_address_is_allow_listed(llm_server):
    llm_server.enqueue(Reply.answer("<decision>[]</decision>"))
    url = f"http://llm.rebind.test:{llm_server.port}/v1"
    with (
        use_resolver(Resolver(llm_rebind_test="127.0.0.1")),
        override_settings(OUTBOUND_ALLOWED_ADDRESSES=[f"127.0.0.1:{llm_server.port}"]),
    ):
        response = complete(make_config(llm_server, base_url=url), make_request())
    assert response.text == "<decision>[]</decision>"
    assert len(llm_server.requests) == 1


def test_a_resolver_that_hangs_frees_the_call_at_its_deadline(llm_server):
    # given a model URL whose name never resolves (the resolver hangs)
    released = threading.Event()

    def hanging(host: str, port: int) -> list[str]:
        released.wait(30)
        raise OSError("gave up")

    url = f"http://llm.hangs.test:{llm_server.port}/v1"
    try:
        with (
            use_resolver(hanging),
            pytest.raises(DeadlineExceeded) as caught,
        ):
            complete(make_config(llm_server, base_url=url, timeout_s=0.5), make_request())
    finally:
        released.set()
    # then the call ends at its deadline, not when the resolver gives up
    assert caught.value.code == "deadline_exceeded"
    assert llm_server.requests == []


class _Redirector:
    """A server answering every request with ``307`` to ``location``."""

    def __init__(self, location: str) -> None:
        location_ = location

        class Handler(BaseHTTPRequestHandler):
            def _redirect(self) -> None:
                self.send_response(307)
                self.send_header("Location", location_)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_model_call_does_not_follow_a_redirect(llm_server):
    # given a model URL (allowed) that redirects to another loopback server
    redirector = _Redirector(f"{llm_server.url}/v1/chat/completions")
    try:
        with (
            override_settings(OUTBOUND_ALLOWED_ADDRESSES=[f"127.0.0.1:{redirector.port}"]),
            pytest.raises(TerminalProviderError) as caught,
        ):
            complete(
                make_config(llm_server, base_url=f"http://127.0.0.1:{redirector.port}/v1"),
                make_request(),
                policy=FAST_RETRIES,
            )
    finally:
        redirector.close()
    # then the redirect is an error, and the target never heard of the call
    assert (caught.value.code, caught.value.status) == ("unexpected_status", 307)
    assert llm_server.requests == []


@pytest.fixture
def pools() -> Iterator[tuple[FakePool, FakePool]]:
    """Two coin pools on loopback, on different ports."""
    with FakePool(["BTCUSDT"]) as first, FakePool(["ETHUSDT"]) as second:
        yield first, second


def test_a_pool_redirect_to_another_host_is_not_followed(pools):
    # given an allowed pool that redirects to a loopback server on another port
    first, second = pools
    first.location = second.url
    with (
        override_settings(OUTBOUND_ALLOWED_ADDRESSES=[f"127.0.0.1:{urlsplit(first.url).port}"]),
        pytest.raises(PoolError, match="redirected to another host, which is not followed"),
    ):
        fetch_pool(first.url)
    assert second.requests == []


def test_a_pool_redirect_on_its_own_host_is_followed(pools):
    first, _ = pools
    first.location = first.url.replace("/pool", "/moved")
    with override_settings(OUTBOUND_ALLOWED_ADDRESSES=["127.0.0.0/8"]):
        result = fetch_pool(first.url)
    assert result.symbols == ("BTCUSDT",)
    assert first.requests == ["/pool", "/moved"]


def test_a_pool_whose_name_rebinds_to_loopback_is_refused_at_the_call(pools):
    first, _ = pools
    port = urlsplit(first.url).port
    with (
        use_resolver(Resolver(pool_rebind_test="127.0.0.1")),
        pytest.raises(PoolError, match=r"refused: pool\.rebind\.test resolves to a loopback"),
    ):
        fetch_pool(f"http://pool.rebind.test:{port}/pool")
    assert first.requests == []


def test_the_live_market_override_obeys_the_policy():
    from strategies.market.exceptions import SourceUnavailableError
    from strategies.market.live import LiveSource

    with pytest.raises(SourceUnavailableError, match="is a loopback address"):
        LiveSource("binanceusdm", api_urls="http://127.0.0.1:9")


def test_the_trader_exchange_override_obeys_the_policy():
    from traders.exchanges.base import OrderRejected
    from traders.exchanges.ccxt_exchange import CcxtExchange

    with pytest.raises(OrderRejected, match="is a private address"):
        CcxtExchange("binanceusdm", api_key="k", secret="s", api_url="http://10.0.0.1:8080")


# --- What users see: no upstream body in any response or event -------------------------


@pytest.mark.django_db(transaction=True)
def test_an_error_answer_body_reaches_no_response_or_event(api_client, user, llm_server):
    # given a debate whose model answers 401 with a body naming internal things
    banner = "redis_version:7.0.15 internal-banner"
    llm_server.enqueue(*[Reply.error(401, banner)] * 10)
    with override_settings(OUTBOUND_ALLOWED_ADDRESSES=["127.0.0.0/8"]):
        debate = _debate(user, llm_server)
        debate_start(debate_id=debate.pk, owner=user)
        run_steps(debate.pk)
    # when the user reads the debate, its messages and its events
    detail = api_client.get(f"/api/debates/{debate.pk}").content.decode()
    events = json.dumps(published(debate.pk), default=str)
    # then each failed turn says what happened in our words, and the body is nowhere
    errors = {message.error["message"] for message in Message.objects.filter(debate=debate)}
    assert errors == {"openai_compatible returned HTTP 401: the provider refused the API key"}
    assert "internal-banner" not in detail
    assert "internal-banner" not in events


def _debate(user: object, llm: FakeLLMServer):
    """Create a pending two-seat debate on models calling ``llm``."""
    from debates.services import DebateInput, debate_create
    from tests.debates.factories import fake_llm_seats
    from tests.strategies.factories import StrategyFactory

    data = DebateInput(
        name="Leak",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=fake_llm_seats(user, llm),
    )
    return debate_create(owner=user, data=data)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("base_url", "refusal"),
    [
        ("http://169.254.169.254/latest/", "the service does not call internal addresses"),
        (f"https://user:hunter2@{PUBLIC}/v1", f"{CREDENTIALS_REFUSED}."),
    ],
    ids=["internal-address", "credentials"],
)
def test_the_admin_refuses_an_ai_model_base_url_the_api_refuses(
    client, staff_user, base_url, refusal
):
    # given an operator in the admin
    client.force_login(staff_user)
    # when a model pointing at the metadata address, or holding a password, is saved
    response = client.post(
        "/admin/debates/aimodel/add/",
        ai_model_admin_form(
            staff_user,
            name="Refused",
            provider="openai_compatible",
            model_name="m",
            base_url=base_url,
        ),
    )
    # then the form comes back naming the field, and nothing was saved
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["base_url"]
    assert refusal in errors["base_url"][0]
    assert AIModel.objects.count() == 0
