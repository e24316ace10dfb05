"""Routes of the arena page, its login and logout, its static files and the site's icon."""

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.urls import path

from arena.auth import LoginForm
from web import views

urlpatterns = [
    path("", views.arena, name="arena"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("debates/<int:debate_id>/", views.arena, name="arena-debate"),
    path("backtests/", views.backtests, name="backtests"),
    path("backtests/<int:backtest_id>/", views.backtests, name="backtest-page"),
    path("backtests/<int:backtest_id>/equity.svg", views.backtest_chart, name="backtest-chart"),
    path(
        "backtests/<int:backtest_id>/reliability.svg",
        views.backtest_reliability,
        name="backtest-reliability",
    ),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="web/login.html",
            authentication_form=LoginForm,
            redirect_authenticated_user=True,
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
]

if "://" not in settings.STATIC_URL:
    urlpatterns.append(
        path(
            f"{settings.STATIC_URL.strip('/')}/<path:path>",
            views.static_file,
            name="web-static",
        )
    )
