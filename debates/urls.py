"""Routes of debates, AI models, schedules, spend, budgets and prices, under ``/api/``."""

from django.urls import path

from arena.apis import combine
from debates import streams
from debates.apis import ai_models, budgets, debates, human, schedules, spend

urlpatterns = [
    path("debates", combine(debates.DebateListApi, debates.DebateCreateApi), name="debates"),
    path(
        "debates/personalities",
        debates.PersonalityListApi.as_view(),
        name="debate-personalities",
    ),
    path(
        "debates/<int:debate_id>",
        combine(debates.DebateDetailApi, debates.DebateDeleteApi),
        name="debate",
    ),
    path("debates/<int:debate_id>/start", debates.DebateStartApi.as_view(), name="debate-start"),
    path("debates/<int:debate_id>/cancel", debates.DebateCancelApi.as_view(), name="debate-cancel"),
    path("debates/<int:debate_id>/retry", debates.DebateRetryApi.as_view(), name="debate-retry"),
    path(
        "debates/<int:debate_id>/advance",
        debates.DebateAdvanceApi.as_view(),
        name="debate-advance",
    ),
    path(
        "debates/<int:debate_id>/retry-step",
        debates.DebateRetryStepApi.as_view(),
        name="debate-retry-step",
    ),
    path(
        "debates/<int:debate_id>/messages",
        debates.DebateMessageListApi.as_view(),
        name="debate-messages",
    ),
    path(
        "debates/<int:debate_id>/turns",
        human.HumanTurnSubmitApi.as_view(),
        name="debate-turns",
    ),
    path(
        "debates/<int:debate_id>/skip-turn",
        human.HumanStepSkipApi.as_view(),
        name="debate-skip-turn",
    ),
    path(
        "debates/<int:debate_id>/votes",
        combine(debates.DebateVoteListApi, human.HumanVoteSubmitApi),
        name="debate-votes",
    ),
    path("debates/<int:debate_id>/stream", streams.debate_stream, name="debate-stream"),
    path(
        "debates/<int:debate_id>/stream-token",
        streams.DebateStreamTokenApi.as_view(),
        name="debate-stream-token",
    ),
    *ai_models.AI_MODELS.urls(),
    path(
        "ai-models/<int:ai_model_id>/check",
        ai_models.AIModelCheckApi.as_view(),
        name="ai-model-check",
    ),
    *schedules.SCHEDULES.urls(),
    path(
        "schedules/<int:schedule_id>/spend",
        spend.ScheduleSpendApi.as_view(),
        name="schedule-spend",
    ),
    path("spend", spend.UserSpendApi.as_view(), name="spend"),
    path("budget", budgets.BUDGET, name="budget"),
    path("prices", budgets.PRICES, name="prices"),
    path("prices/<int:price_id>", budgets.PRICE, name="price"),
    path(
        "schedules/<int:schedule_id>/pause",
        schedules.SchedulePauseApi.as_view(),
        name="schedule-pause",
    ),
    path(
        "schedules/<int:schedule_id>/resume",
        schedules.ScheduleResumeApi.as_view(),
        name="schedule-resume",
    ),
]
