"""Debates and what they are made of: models, participants, messages, votes, decisions.

Database constraints carry the rules that must hold under any concurrency: one message
per (debate, round, participant), one vote per (debate, participant, coin), one decision
per (debate, coin), range checks on every bounded number. Rows change state only through
the services in ``debates.services``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from arena.fields import EncryptedTextField
from strategies.models import OIDuration, PromptVariant


class Provider(models.TextChoices):
    DEEPSEEK = "deepseek", "DeepSeek"
    QWEN = "qwen", "Qwen (DashScope)"
    OPENAI = "openai", "OpenAI"
    CLAUDE = "claude", "Claude (Anthropic)"
    GEMINI = "gemini", "Gemini"
    GROK = "grok", "Grok (xAI)"
    KIMI = "kimi", "Kimi (Moonshot)"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible (any base URL)"
    SIMULATED = "simulated", "Simulated (built in, offline)"


class OutputMode(models.TextChoices):
    TAGGED = "tagged", "Tagged blocks (any server)"
    JSON_SCHEMA = "json_schema", "JSON decoded under the contract's schema"


class AIModel(models.Model):
    """A model configuration a user can seat in debates; the key is encrypted at rest."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ai_models"
    )
    name = models.CharField(max_length=100)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    model_name = models.CharField(max_length=100, blank=True)
    base_url = models.URLField(blank=True)
    api_key = EncryptedTextField(blank=True)
    temperature = models.FloatField(default=0.7)
    max_tokens = models.PositiveIntegerField(default=2000)
    timeout_seconds = models.PositiveIntegerField(default=60)
    output_mode = models.CharField(
        max_length=11,
        choices=OutputMode.choices,
        default=OutputMode.TAGGED,
        help_text="The form of the output contract the model is asked for; json_schema "
        "needs a server that decodes under a JSON schema.",
    )
    training_cutoff = models.DateField(
        null=True,
        blank=True,
        help_text="The last day of the model's training data (the catalogue's default for "
        "the known models; none for simulated). A backtest starting earlier is contaminated.",
    )
    capabilities = models.JSONField(
        default=dict,
        blank=True,
        help_text="Overrides of the catalogue's capabilities of the model (the keys of "
        "debates/providers/catalogue.toml: temperature, reasoning, turn_effort, "
        "brief_effort, json_schema, output_cap_param, max_output, usage, temperature_max).",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "AI model"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(temperature__gte=0, temperature__lte=2), name="aimodel_temperature_0_2"
            ),
            models.CheckConstraint(
                condition=Q(max_tokens__gte=1, max_tokens__lte=200_000),
                name="aimodel_max_tokens_range",
            ),
            models.CheckConstraint(
                condition=Q(timeout_seconds__gte=1, timeout_seconds__lte=180),
                name="aimodel_timeout_range",
            ),
        ]

    def __str__(self) -> str:
        label = " [simulated]" if self.provider == Provider.SIMULATED else ""
        return f"{self.name}{label}"


class CacheMode(models.TextChoices):
    """What a debate does with the durable model-call cache (``ModelAnswer``).

    ``off``: every call goes to the model and nothing is stored; ``use``: a call made
    before is answered from the cache, any other goes to the model and its answer is
    stored; ``refresh``: every call goes to the model and its answer replaces the stored.
    """

    OFF = "off", "Off"
    USE = "use", "Use"
    REFRESH = "refresh", "Refresh"


class DebateMode(models.TextChoices):
    """Which model sits in each seat (``debates.services.modes``)."""

    CUSTOM = "custom", "Each seat its own model"
    HOMOGENEOUS = "homogeneous", "One model in every seat"
    TEMPERATURE = "temperature", "One model, the seats at temperatures over a range"
    ADVERSARIAL = "adversarial", "Bullish seats on model A, bearish on B, the judge on C"


class DebateLevel(models.TextChoices):
    """How much of a debate runs (``debates.engine.gate``)."""

    AUTO = "auto", "Auto: gated after the openings"
    L1 = "L1", "L1: light, the openings are the ballots"
    L2 = "L2", "L2: the full debate"


def level_field(default: str, help_text: str) -> models.CharField:
    """Return the field of the level a debate asks for, or a template's debates do."""
    return models.CharField(
        max_length=4, choices=DebateLevel.choices, default=default, help_text=help_text
    )


class DebateOrigin(models.TextChoices):
    """Where a debate came from: a person (the API, the page, ``run_debate``), a schedule's
    firing or a backtest's step."""

    MANUAL = "manual", "Manual"
    SCHEDULE = "schedule", "A schedule's firing"
    BACKTEST = "backtest", "A backtest's step"


class DebateStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    VOTING = "voting", "Voting"
    COMPLETED = "completed", "Completed"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


ACTIVE_STATUSES = (DebateStatus.RUNNING, DebateStatus.VOTING)
TERMINAL_STATUSES = (DebateStatus.COMPLETED, DebateStatus.CANCELLED, DebateStatus.FAILED)


DEFAULT_HUMAN_TURN_TIMEOUT_MINUTES = 30
MAX_HUMAN_TURN_TIMEOUT_MINUTES = 24 * 60


class Pace(models.TextChoices):
    """How a debate moves from one step of its plan to the next."""

    AUTO = "auto", "Automatic"
    MANUAL = "manual", "Manual: each step waits for advance"


class DebatePhase(models.TextChoices):
    CREATED = "created", "Created"
    OPENING = "opening", "Opening analyses"
    REBUTTAL = "rebuttal", "Rebuttals"
    VOTING = "voting", "Voting"
    CONSENSUS = "consensus", "Consensus"
    EXECUTION = "execution", "Execution"
    DONE = "done", "Done"


class Weighting(models.TextChoices):
    """How the consensus weighs each vote (``debates.engine.consensus.Weighting``)."""

    CONFIDENCE = "confidence", "By confidence"
    JUDGE = "judge", "By confidence times the judge's score"
    CALIBRATED = "calibrated", "By confidence times the voter's shrunk hit rate"


class Seating(models.Model):
    """Which model sits in each seat and how much each role may write
    (``debates.services.modes``): a debate's settings, and a schedule's for its firings."""

    mode = models.CharField(max_length=12, choices=DebateMode.choices, default=DebateMode.CUSTOM)
    mode_models = models.JSONField(
        default=list, blank=True, help_text="The AI model ids the mode seats: [A], or [A, B, C]."
    )
    temperature_range = models.JSONField(
        default=list, blank=True, help_text="[lowest, highest] of the temperature mode."
    )
    role_model_map = models.JSONField(
        default=dict,
        blank=True,
        help_text='{personality or "judge": ai_model id}, over the seats the mode gives.',
    )
    max_output_tokens = models.JSONField(
        default=dict,
        blank=True,
        help_text='Output caps per role: {"participants": n, "judge": n}, under each model\'s.',
    )

    class Meta:
        abstract = True


class Debate(Seating, models.Model):
    """One debate session: its settings, its state, and the market snapshot it saw."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="debates"
    )
    name = models.CharField(max_length=200)
    strategy = models.ForeignKey(
        "strategies.Strategy", on_delete=models.SET_NULL, null=True, related_name="debates"
    )
    symbol = models.CharField(max_length=20, blank=True)
    symbols = models.JSONField(default=list, blank=True)
    max_rounds = models.PositiveSmallIntegerField(default=3)
    prompt_variant = models.CharField(
        max_length=12, choices=PromptVariant.choices, default=PromptVariant.BALANCED
    )
    interval_minutes = models.PositiveIntegerField(default=5)
    auto_execute = models.BooleanField(default=False)
    trader = models.ForeignKey(
        "traders.Trader", on_delete=models.SET_NULL, null=True, blank=True, related_name="debates"
    )
    enable_oi_ranking = models.BooleanField(default=False)
    oi_ranking_limit = models.PositiveSmallIntegerField(default=10)
    oi_duration = models.CharField(max_length=3, choices=OIDuration.choices, default="4h")
    as_of = models.DateTimeField(
        null=True, blank=True, help_text="Replay instant for the dataset market source."
    )
    cache = models.CharField(max_length=7, choices=CacheMode.choices, default=CacheMode.OFF)
    level = level_field(
        DebateLevel.L2,
        "The level asked for: a debate from the API or the page is L2 unless told "
        "otherwise, a schedule's firing auto.",
    )
    level_used = models.CharField(max_length=4, blank=True, help_text="L1 or L2, once known.")
    level_reasons = models.JSONField(default=list, blank=True)
    forced = models.BooleanField(
        default=False, help_text="The level may not be lowered (asked for, or high impact)."
    )
    quota_counted = models.BooleanField(
        default=True,
        help_text="Counted in its owner's debate quotas; a backtest's step is admitted by "
        "the backtest's own quota instead.",
    )
    caller_task = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="The Celery task sent with the debate's id once it ends (completed, "
        "failed or cancelled), and once its votes wait for their book: a backtest's step "
        "names the one that advances its backtest.",
    )
    awaits_book = models.BooleanField(
        default=False,
        help_text="Its votes wait for the book its caller gives (a backtest step replaying "
        "its simulated account): the rounds run, the votes once the book is given.",
    )
    stopped_early = models.JSONField(
        null=True, blank=True, help_text="{after_round, reason} when the rounds settled early."
    )
    judge_model = models.ForeignKey(
        AIModel,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="judged_debates",
        help_text="The judge's model: it summarises each round and scores the participants, "
        "never votes. Empty: no judge.",
    )
    judge_count = models.PositiveSmallIntegerField(
        default=1, help_text="How many judge calls score the participants: 1, or 3 (median)."
    )
    weighting = models.CharField(
        max_length=12, choices=Weighting.choices, default=Weighting.CONFIDENCE
    )
    human_turn_timeout_minutes = models.PositiveSmallIntegerField(
        default=DEFAULT_HUMAN_TURN_TIMEOUT_MINUTES,
        help_text="How long the person in a human seat has for a turn or a vote before it "
        "is skipped.",
    )
    human_due_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the turn or vote the person owes now is skipped; empty when the "
        "debate waits for no person.",
    )
    origin = models.CharField(
        max_length=8,
        choices=DebateOrigin.choices,
        default=DebateOrigin.MANUAL,
        help_text="Where it came from; a schedule's or a backtest's debate names it below "
        "(empty once that is deleted).",
    )
    schedule = models.ForeignKey(
        "debates.Schedule",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="debates",
    )
    backtest = models.ForeignKey(
        "backtests.Backtest",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="debates",
    )

    status = models.CharField(
        max_length=10, choices=DebateStatus.choices, default=DebateStatus.PENDING
    )
    phase = models.CharField(max_length=10, choices=DebatePhase.choices, default="created")
    current_round = models.PositiveSmallIntegerField(default=0)
    current_speaker = models.ForeignKey(
        "debates.Participant",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    market_snapshot = models.JSONField(null=True, blank=True)
    book = models.JSONField(
        null=True,
        blank=True,
        help_text="The trader's account as of the debate's instant, read by its prepare step "
        "or given by its caller (debates.engine.book.Book); null without one.",
    )
    track_record = models.JSONField(
        null=True,
        blank=True,
        help_text="Each voter's last reviewed calls on the debate's coins known by its "
        "instant, by participant id, stored with the book (debates.engine.book.Call); null "
        "without a book or with the strategy's track record off.",
    )
    market_text = models.TextField(
        blank=True, help_text="The snapshot as the turns' prompts show it (made once, at prepare)."
    )
    market_summary = models.TextField(
        blank=True, help_text="The snapshot as the votes' prompts show it (made once, at prepare)."
    )
    error = models.JSONField(
        null=True, blank=True, help_text="{step, code, message} of the step that failed."
    )
    pace = models.CharField(max_length=6, choices=Pace.choices, default=Pace.AUTO)
    steps_released = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="How many steps of the plan may run; empty: all (the manual pace and a "
        "retried step release them one at a time).",
    )
    step_outcomes = models.JSONField(
        default=dict,
        blank=True,
        help_text="The outcome of each step no other row records (prepare, execution, ...), "
        "by step key.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progressed_at = models.DateTimeField(
        null=True, blank=True, help_text="Last time a step of the run made progress."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "status", "-created_at"]),
            models.Index(fields=["owner", "origin", "-created_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_rounds__gte=2, max_rounds__lte=5), name="debate_max_rounds_2_5"
            ),
            models.CheckConstraint(
                condition=Q(
                    origin=DebateOrigin.MANUAL, schedule__isnull=True, backtest__isnull=True
                )
                | Q(origin=DebateOrigin.SCHEDULE, backtest__isnull=True)
                | Q(origin=DebateOrigin.BACKTEST, schedule__isnull=True),
                name="debate_origin_names_its_source",
            ),
            models.CheckConstraint(
                condition=Q(current_round__lte=5), name="debate_current_round_0_5"
            ),
            models.CheckConstraint(
                condition=Q(interval_minutes__gte=1), name="debate_interval_positive"
            ),
            models.CheckConstraint(
                condition=Q(oi_ranking_limit__gte=1, oi_ranking_limit__lte=10),
                name="debate_oi_limit_1_10",
            ),
            models.CheckConstraint(
                condition=Q(judge_count__in=(1, 3)), name="debate_judge_count_1_or_3"
            ),
            models.CheckConstraint(
                condition=Q(
                    human_turn_timeout_minutes__gte=1,
                    human_turn_timeout_minutes__lte=MAX_HUMAN_TURN_TIMEOUT_MINUTES,
                ),
                name="debate_human_turn_timeout_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Personality(models.TextChoices):
    BULL = "bull", "Bull"
    BEAR = "bear", "Bear"
    ANALYST = "analyst", "Analyst"
    CONTRARIAN = "contrarian", "Contrarian"
    RISK_MANAGER = "risk_manager", "Risk manager"


class SeatKind(models.TextChoices):
    MODEL = "model", "AI model"
    HUMAN = "human", "Person (the debate's owner)"


class Participant(models.Model):
    """A seat in a debate, speaking in ``speak_order``: a model playing a personality, or
    (``kind: human``) the debate's owner, who writes the seat's turns and vote."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="participants")
    kind = models.CharField(max_length=5, choices=SeatKind.choices, default=SeatKind.MODEL)
    ai_model = models.ForeignKey(
        AIModel, on_delete=models.PROTECT, null=True, blank=True, related_name="participants"
    )
    personality = models.CharField(max_length=20, choices=Personality.choices)
    speak_order = models.PositiveSmallIntegerField()
    temperature = models.FloatField(
        null=True, blank=True, help_text="The seat's own temperature (the temperature mode)."
    )

    class Meta:
        ordering = ["debate_id", "speak_order"]
        constraints = [
            models.UniqueConstraint(
                fields=["debate", "speak_order"], name="participant_unique_speak_order"
            ),
            models.CheckConstraint(
                condition=Q(speak_order__lte=5), name="participant_speak_order_0_5"
            ),
            models.CheckConstraint(
                condition=Q(kind=SeatKind.MODEL, ai_model__isnull=False)
                | Q(kind=SeatKind.HUMAN, ai_model__isnull=True),
                name="participant_model_unless_human",
            ),
            models.UniqueConstraint(
                fields=["debate"],
                condition=Q(kind=SeatKind.HUMAN),
                name="participant_one_human_seat",
            ),
        ]

    def __str__(self) -> str:
        return f"P{self.speak_order + 1} {self.personality}"

    @property
    def is_human(self) -> bool:
        return self.kind == SeatKind.HUMAN


class MessageType(models.TextChoices):
    ANALYSIS = "analysis", "Opening analysis"
    REBUTTAL = "rebuttal", "Rebuttal"


class StepStatus(models.TextChoices):
    OK = "ok", "Answered"
    ERROR = "error", "Failed"
    SKIPPED = "skipped", "Skipped (the person did not answer in time)"


class ParseStatus(models.TextChoices):
    OK = "ok", "Parsed"
    PARTIAL = "partial", "Partly parsed"
    FAILED = "failed", "Nothing usable"
    NONE = "none", "No output"


COST_FIELD = {"max_digits": 16, "decimal_places": 10}
"""A cost in USD, to 1e-10 (``debates.providers.pricing.COST_PLACES``)."""


class Usage(models.Model):
    """Fields shared by every stored model call: usage, cost, latency, the provider's id.

    ``prompt_tokens`` counts all input; ``cached_input_tokens`` of it was served from the
    provider's prompt cache and ``cache_write_tokens`` written to it, as the provider
    reported. ``completion_tokens`` counts every output token billed, and
    ``reasoning_tokens`` those of them the model spent reasoning. ``cost_usd`` is what
    the call cost under the price table at the time. ``tokens_estimated``: the tokens
    are the simulated model's estimate (four characters a token), not a provider's
    count. An answer from the model-call cache bills none of these; ``answer_tokens``
    and ``answer_cost_usd`` keep what the answer took when a model was called for it, so
    what a decision took reads the same on a re-run.
    """

    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(default=0, **COST_FIELD)
    latency_ms = models.PositiveIntegerField(default=0)
    request_id = models.CharField(max_length=120, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    cached = models.BooleanField(
        default=False, help_text="Answered from the model-call cache: no call, no tokens."
    )
    answer_tokens = models.PositiveIntegerField(
        default=0,
        help_text="Prompt plus completion tokens the answer took when its model was called: "
        "this call's, or for an answer from the model-call cache, the call it repeats'.",
    )
    answer_cost_usd = models.DecimalField(
        default=0,
        help_text="What the answer cost when its model was called (as answer_tokens).",
        **COST_FIELD,
    )
    tokens_estimated = models.BooleanField(
        default=False,
        help_text="The simulated model's estimate of its tokens, not a provider's count.",
    )

    debate_call = True
    """A call the debate made for itself; a backtest's baseline answer, kept with its
    step's debate for the spend of its owner and its backtest, is not one."""

    class Meta:
        abstract = True


class Message(Usage):
    """One turn: what a participant said in a round, raw and parsed per coin."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="messages")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="messages")
    round = models.PositiveSmallIntegerField()
    message_type = models.CharField(max_length=10, choices=MessageType.choices)
    status = models.CharField(max_length=7, choices=StepStatus.choices, default=StepStatus.OK)
    content = models.TextField(blank=True)
    reasoning = models.TextField(blank=True)
    decisions = models.JSONField(default=list, blank=True)
    parse_status = models.CharField(
        max_length=7, choices=ParseStatus.choices, default=ParseStatus.NONE
    )
    dropped = models.JSONField(default=list, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "round", "participant__speak_order"]
        constraints = [
            models.UniqueConstraint(
                fields=["debate", "round", "participant"], name="message_one_per_round_participant"
            ),
            models.CheckConstraint(
                condition=Q(round__gte=1, round__lte=5), name="message_round_1_5"
            ),
        ]

    def __str__(self) -> str:
        return f"round {self.round} / {self.participant_id}"


class Ballot(Usage):
    """One voter's vote call: the raw answer, and whether it was usable."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="ballots")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="ballots")
    status = models.CharField(max_length=7, choices=StepStatus.choices, default=StepStatus.OK)
    content = models.TextField(blank=True)
    parse_status = models.CharField(
        max_length=7, choices=ParseStatus.choices, default=ParseStatus.NONE
    )
    dropped = models.JSONField(default=list, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "participant__speak_order"]
        constraints = [
            models.UniqueConstraint(
                fields=["debate", "participant"], name="ballot_one_per_participant"
            ),
        ]

    def __str__(self) -> str:
        return f"ballot of {self.participant_id} ({self.status})"


class DropReason(models.TextChoices):
    STOPPED = "stopped", "The debate had left the call's step"
    DUPLICATE = "duplicate", "Another copy of the step stored its answer first"


class DroppedCall(Usage):
    """A model call whose answer was not used, kept for what it used and cost.

    The provider answered the call, and billed it, but by then its debate had left the
    call's step (cancelled, failed, past its budget: ``debate_status`` says where it
    was) or another copy of the step had stored its answer first. Its usage and cost
    count in the debate's and its owner's spend as a stored turn's do, and the spend
    counts it among its ``dropped_calls``. ``kind`` is the request's (``turn``,
    ``vote``, ``judge_summary``, ``judge_scores``); a judge's call has no participant.
    """

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="dropped_calls")
    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    kind = models.CharField(max_length=13)
    round = models.PositiveSmallIntegerField(null=True, blank=True)
    reason = models.CharField(max_length=9, choices=DropReason.choices)
    debate_status = models.CharField(max_length=10, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} of debate {self.debate_id} dropped ({self.reason})"


class JudgeCallKind(models.TextChoices):
    ROUND_SUMMARY = "round_summary", "Round summary"
    SCORES = "scores", "Scores"


class JudgeCall(Usage):
    """One call of a debate's judge: the prompt, the answer, and what was read from it.

    ``round`` is the round summarised, or for ``scores`` the debate's last round;
    ``judge`` tells three scoring judges apart (0, 1, 2). ``result`` is the parsed
    answer (``RoundSummary.to_dict()`` or ``ScoreSheet.to_dict()``); a failed call has
    ``status`` error and its ``error``.
    """

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="judge_calls")
    kind = models.CharField(max_length=13, choices=JudgeCallKind.choices)
    round = models.PositiveSmallIntegerField()
    judge = models.PositiveSmallIntegerField(default=0)
    temperature = models.FloatField()
    system = models.TextField(blank=True)
    user = models.TextField(blank=True)
    status = models.CharField(max_length=7, choices=StepStatus.choices, default=StepStatus.OK)
    content = models.TextField(blank=True)
    parse_status = models.CharField(
        max_length=7, choices=ParseStatus.choices, default=ParseStatus.NONE
    )
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "round", "kind", "judge"]
        constraints = [
            models.UniqueConstraint(
                fields=["debate", "kind", "round", "judge"], name="judgecall_one_per_step"
            ),
            models.CheckConstraint(condition=Q(judge__lte=2), name="judgecall_judge_0_2"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} round {self.round} judge {self.judge} ({self.status})"


class JudgeScore(models.Model):
    """A participant's final judge score: per rubric item the judges' median and a
    sentence, the mean over 10 (0..1), the judges' agreement; or missing and why."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="judge_scores")
    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="judge_scores"
    )
    items = models.JSONField(default=dict, blank=True)
    score = models.FloatField(null=True, blank=True)
    agreement = models.FloatField(null=True, blank=True)
    judges = models.PositiveSmallIntegerField(default=0)
    missing = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "participant__speak_order"]
        constraints = [
            models.UniqueConstraint(
                fields=["debate", "participant"], name="judgescore_one_per_participant"
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1),
                name="judgescore_score_0_1",
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=False) | ~Q(missing=""),
                name="judgescore_missing_has_reason",
            ),
        ]

    def __str__(self) -> str:
        shown = "missing" if self.score is None else f"{self.score:.2f}"
        return f"judge score of {self.participant_id}: {shown}"


class Action(models.TextChoices):
    OPEN_LONG = "open_long", "Open long"
    OPEN_SHORT = "open_short", "Open short"
    CLOSE_LONG = "close_long", "Close long"
    CLOSE_SHORT = "close_short", "Close short"
    HOLD = "hold", "Hold"
    WAIT = "wait", "Wait"


def _trade_checks(prefix: str) -> list[models.CheckConstraint]:
    return [
        models.CheckConstraint(
            condition=Q(confidence__isnull=True) | Q(confidence__gte=0, confidence__lte=100),
            name=f"{prefix}_confidence_0_100",
        ),
        models.CheckConstraint(
            condition=Q(leverage__isnull=True) | Q(leverage__gte=1, leverage__lte=125),
            name=f"{prefix}_leverage_range",
        ),
        models.CheckConstraint(
            condition=Q(position_pct__isnull=True) | Q(position_pct__gte=0, position_pct__lte=1),
            name=f"{prefix}_position_pct_0_1",
        ),
    ]


class Vote(models.Model):
    """A voter's final position on one coin; an abstention has no action."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="votes")
    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="votes")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="votes")
    symbol = models.CharField(max_length=20)
    action = models.CharField(max_length=12, choices=Action.choices, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    leverage = models.PositiveSmallIntegerField(null=True, blank=True)
    position_pct = models.FloatField(null=True, blank=True)
    stop_loss = models.FloatField(null=True, blank=True)
    take_profit = models.FloatField(null=True, blank=True)
    reasoning = models.TextField(blank=True)
    abstained = models.BooleanField(default=False)
    abstain_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "participant__speak_order", "symbol"]
        constraints = [
            models.UniqueConstraint(
                fields=["debate", "participant", "symbol"], name="vote_one_per_voter_coin"
            ),
            models.CheckConstraint(
                condition=Q(abstained=True) | ~Q(action=""), name="vote_action_unless_abstained"
            ),
            *_trade_checks("vote"),
        ]

    def __str__(self) -> str:
        return f"{self.symbol}: {self.action or 'abstained'}"


class Decision(models.Model):
    """The consensus on one coin of a debate, with its score breakdown and clamps."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="decisions")
    symbol = models.CharField(max_length=20)
    action = models.CharField(max_length=12, choices=Action.choices)
    confidence = models.FloatField()
    leverage = models.PositiveSmallIntegerField(null=True, blank=True)
    position_pct = models.FloatField(null=True, blank=True)
    stop_loss = models.FloatField(null=True, blank=True)
    take_profit = models.FloatField(null=True, blank=True)
    scores = models.JSONField(default=dict)
    clamps = models.JSONField(default=list, blank=True)
    defaults = models.JSONField(
        default=list, blank=True, help_text="Fields set by default, not by any voter."
    )
    reason = models.CharField(max_length=300, blank=True)
    supporters = models.PositiveSmallIntegerField(default=0)
    voters = models.PositiveSmallIntegerField(default=0)
    is_primary = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "-is_primary", "symbol"]
        constraints = [
            models.UniqueConstraint(fields=["debate", "symbol"], name="decision_one_per_coin"),
            models.UniqueConstraint(
                fields=["debate"], condition=Q(is_primary=True), name="decision_one_primary"
            ),
            *_trade_checks("decision"),
            models.CheckConstraint(
                condition=Q(leverage__isnull=True) | Q(leverage__lte=20),
                name="decision_leverage_max_20",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.symbol}: {self.action} ({self.confidence:.0f})"


class Schedule(Seating, models.Model):
    """A recurring debate: a template fired by Celery beat every ``interval_minutes``."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    name = models.CharField(max_length=200)
    strategy = models.ForeignKey(
        "strategies.Strategy", on_delete=models.SET_NULL, null=True, related_name="schedules"
    )
    symbol = models.CharField(max_length=20, blank=True)
    participants = models.JSONField(
        default=list, help_text='Seats of each debate: [{"ai_model": id, "personality": id}].'
    )
    max_rounds = models.PositiveSmallIntegerField(default=3)
    prompt_variant = models.CharField(
        max_length=12, choices=PromptVariant.choices, default=PromptVariant.BALANCED
    )
    auto_execute = models.BooleanField(default=False)
    trader = models.ForeignKey(
        "traders.Trader",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="schedules",
    )
    interval_minutes = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    replay_as_of = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Dataset replay: the as_of of the next firing, advanced by each firing.",
    )
    cache = models.CharField(max_length=7, choices=CacheMode.choices, default=CacheMode.OFF)
    daily_token_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens a UTC day past which a debate runs lighter."
    )
    daily_token_cap = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens a UTC day past which no model call starts."
    )
    weighting = models.CharField(
        max_length=12, choices=Weighting.choices, default=Weighting.CONFIDENCE
    )
    level = level_field(
        DebateLevel.AUTO,
        "The level each firing's debate asks for: auto (default: gated after the "
        "openings), L1 or L2.",
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    last_fired_at = models.DateTimeField(null=True, blank=True)
    last_debate = models.ForeignKey(
        Debate, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    run_count = models.PositiveIntegerField(default=0)
    skip_count = models.PositiveIntegerField(default=0)
    skips_by_reason = models.JSONField(
        default=dict, blank=True, help_text="How many firings were skipped, by the skip's code."
    )
    last_skip_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(interval_minutes__gte=1), name="schedule_interval_positive"
            ),
            models.CheckConstraint(
                condition=Q(max_rounds__gte=2, max_rounds__lte=5), name="schedule_max_rounds_2_5"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class TokenBudget(models.Model):
    """A user's daily token budget and hard caps: on tokens (prompt plus completion) and
    in USD, per UTC day."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="token_budget"
    )
    daily_token_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens a UTC day past which a debate runs lighter."
    )
    daily_token_cap = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens a UTC day past which no model call starts."
    )
    daily_usd_cap = models.DecimalField(
        "daily USD cap",
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="USD a UTC day past which no model call starts.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(daily_usd_cap__isnull=True) | Q(daily_usd_cap__gte=0),
                name="tokenbudget_usd_cap_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"budget of {self.owner_id}"


class TokenScope(models.TextChoices):
    USER = "user", "User"
    SCHEDULE = "schedule", "Schedule"


class TokenLedger(models.Model):
    """Tokens and USD reserved and used on one UTC day by a user's or a schedule's model
    calls.

    A call reserves its most tokens and cost (``debates.services.budgets``) by one
    conditional update that succeeds only under the caps, and settles to what it used
    and cost once answered.
    """

    scope = models.CharField(max_length=8, choices=TokenScope.choices)
    scope_id = models.PositiveBigIntegerField()
    day = models.DateField()
    used_tokens = models.BigIntegerField(default=0)
    used_usd = models.DecimalField(default=0, **COST_FIELD)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "scope_id", "day"], name="ledger_one_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.scope_id} on {self.day}: {self.used_tokens}"


class DeletedSpend(models.Model):
    """What the model calls of deleted debates used and cost: per owner, schedule and UTC day.

    A debate's turns, ballots, judge calls and dropped calls go with it, and with them
    the usage and cost stored on each; the providers were paid for those calls all the
    same. So before debates are deleted (``debates_delete``) their calls' sums are added
    here, where the spend (``spend_of``, ``spend_by_day``) and the daily token budgets
    still count them; so is a call answered after its debate was deleted.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    schedule = models.ForeignKey(
        Schedule, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    day = models.DateField(help_text="The UTC day the calls were made.")
    calls = models.PositiveIntegerField(default=0)
    cached_calls = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cached_input_tokens = models.PositiveBigIntegerField(default=0)
    estimated_tokens = models.PositiveBigIntegerField(
        default=0, help_text="Tokens the simulated model estimated rather than a provider counted."
    )
    cost_usd = models.DecimalField(default=0, **COST_FIELD)
    dropped_calls = models.PositiveIntegerField(
        default=0, help_text="Calls answered after their debate had left their step."
    )
    dropped_cost_usd = models.DecimalField(default=0, **COST_FIELD)
    deleted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-day", "-id"]

    def __str__(self) -> str:
        return f"deleted debates of {self.owner_id} on {self.day}: {self.cost_usd} USD"


class DebateStart(models.Model):
    """One start of a debate counted in its owner's quotas: a start, or a retry that
    took a failed debate back to running or voting.

    The starts-per-hour quota (``debates.quotas``) counts these rows, not the debates:
    a row names no debate, so deleting debates gives no start back. Rows older than a
    day (``debates.quotas.STARTS_KEPT``) are deleted as their owner's next start is
    logged.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    started_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["owner", "started_at"], name="debate_start_owner_at")]

    def __str__(self) -> str:
        return f"a start of {self.owner_id} at {self.started_at:%Y-%m-%d %H:%M:%S}"


PRICE_FIELD = {"max_digits": 12, "decimal_places": 4}


class ModelPrice(models.Model):
    """The list price of one provider's model, in USD per million tokens.

    A row with an empty ``model_name`` prices every model of its provider that has no
    row of its own. Without any row a call is recorded at no cost. ``cache_write``
    empty means writing to the prompt cache costs the input price.
    """

    provider = models.CharField(max_length=20, choices=Provider.choices)
    model_name = models.CharField(
        max_length=100, blank=True, help_text="Empty: any model of the provider without a row."
    )
    input_usd_per_mtok = models.DecimalField("input", **PRICE_FIELD)
    cached_input_usd_per_mtok = models.DecimalField(
        "cached input", help_text="Input served from the provider's prompt cache.", **PRICE_FIELD
    )
    output_usd_per_mtok = models.DecimalField("output", **PRICE_FIELD)
    cache_write_usd_per_mtok = models.DecimalField(
        "cache write", null=True, blank=True, **PRICE_FIELD
    )
    updated_at = models.DateTimeField(auto_now=True)

    PRICE_COLUMNS = (
        "input_usd_per_mtok",
        "cached_input_usd_per_mtok",
        "output_usd_per_mtok",
        "cache_write_usd_per_mtok",
    )
    """The prices, in the order of ``debates.providers.pricing.Price``."""

    class Meta:
        ordering = ["provider", "model_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model_name"], name="modelprice_one_per_model"
            ),
            models.CheckConstraint(
                condition=Q(
                    input_usd_per_mtok__gte=0,
                    cached_input_usd_per_mtok__gte=0,
                    output_usd_per_mtok__gte=0,
                )
                & (Q(cache_write_usd_per_mtok__isnull=True) | Q(cache_write_usd_per_mtok__gte=0)),
                name="modelprice_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_name or '*'}"


class ModelAnswer(models.Model):
    """A model's answer to one call, kept for the calls made again (the durable cache).

    ``fingerprint`` is the SHA-256 of everything that decides the answer: provider, base
    URL, model name, temperature, maximum output tokens, and the system and user text
    (``debates.services.answers``). Two calls differing in any of these, by one
    character, never share an answer. The tokens and cost are those the original call
    billed.
    """

    fingerprint = models.CharField(max_length=64, unique=True)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    model_name = models.CharField(max_length=100)
    text = models.TextField()
    request_id = models.CharField(max_length=120, blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(
        default=0, help_text="What the original call cost.", **COST_FIELD
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_name} {self.fingerprint[:12]}"
