"""The human seat's endpoints: the owner's turn and vote in their own debate.

The body is the output contract's JSON form, ``{reasoning, decisions: [...]}``, the
shape a model's answer takes. Its types and bounds are checked here; the rules that
need the debate (the candidate coins, a coin decided once, whether the debate waits for
this answer) are the service's, which checks the whole answer by the contract again.
"""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from arena.apis import JsonApi, error_responses
from arena.inputs import (
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    validate,
)
from debates.engine.contract import COIN_REASONING_MAX_CHARS
from debates.engine.human import HUMAN_REASONING_MAX_CHARS
from debates.engine.types import Action
from debates.selectors import debate_representation
from debates.serializers import DebateDetailSerializer, MessageSerializer, VoteSerializer
from debates.services.human import human_step_skip, human_turn_record, human_vote_record
from strategies.market.coins import MAX_CANDIDATES

TAGS = ["debates"]


class HumanDecisionSerializer(StrictSerializer):
    symbol = StrictCharField(max_length=40, help_text="One of the debate's candidate coins.")
    action = StrictChoiceField(choices=[action.value for action in Action])
    confidence = StrictIntegerField(min_value=0, max_value=100)
    leverage = StrictIntegerField(required=False, min_value=1, max_value=20)
    position_pct = StrictFloatField(
        required=False, min_value=0.1, max_value=1.0, help_text="Fraction of the balance."
    )
    stop_loss = StrictFloatField(
        required=False, min_value=0, max_value=1, help_text="Distance from entry, a fraction."
    )
    take_profit = StrictFloatField(
        required=False, min_value=0, max_value=1, help_text="Distance from entry, a fraction."
    )
    reasoning = StrictCharField(
        required=False, allow_blank=True, max_length=COIN_REASONING_MAX_CHARS
    )


def _answer_serializer(component: str, *, reasoning_required: bool) -> type[StrictSerializer]:
    @extend_schema_serializer(component_name=component)
    class AnswerSerializer(StrictSerializer):
        reasoning = StrictCharField(
            allow_blank=not reasoning_required,
            max_length=HUMAN_REASONING_MAX_CHARS,
            trim_whitespace=False,
            help_text="What the others read and answer." if reasoning_required else "",
        )
        decisions = serializers.ListField(
            child=HumanDecisionSerializer(),
            min_length=1,
            max_length=MAX_CANDIDATES,
            help_text="One decision per coin you decide; each candidate coin at most once.",
        )

    return AnswerSerializer


# A turn or a vote on a debate of BTC and ETH.
ANSWER_EXAMPLE = OpenApiExample(
    "BTC long and ETH wait",
    value={
        "reasoning": "BTC holds above its hourly EMA20 while funding stays flat.",
        "decisions": [
            {"symbol": "BTCUSDT", "action": "open_long", "confidence": 70, "leverage": 3},
            {"symbol": "ETHUSDT", "action": "wait", "confidence": 40},
        ],
    },
    request_only=True,
)


class HumanTurnSubmitApi(JsonApi):
    """Write your turn in the human seat of your debate, for the round it waits for.

    201 with the stored turn; 200 with it when the same turn was stored before. Rules the
    schema cannot state (400 naming the field): each decision's symbol is one of the
    debate's candidate coins, each coin decided once.
    """

    InputSerializer = _answer_serializer("HumanTurnInput", reasoning_required=True)

    @extend_schema(
        operation_id="debates_turns_create",
        tags=TAGS,
        request=InputSerializer,
        examples=[ANSWER_EXAMPLE],
        responses={
            201: MessageSerializer,
            200: OpenApiResponse(MessageSerializer, description="The same turn, stored before."),
            **error_responses(400, 404, 409),
        },
    )
    def post(self, request: Request, debate_id: int) -> Response:
        answer = validate(self.InputSerializer, request.data)
        recorded = human_turn_record(debate_id=debate_id, owner=request.user, answer=answer)
        code = status.HTTP_201_CREATED if recorded.created else status.HTTP_200_OK
        return Response(MessageSerializer(recorded.message).data, status=code)


class HumanVoteSubmitApi(JsonApi):
    """Cast your vote in the human seat of your debate, while it votes.

    201 with your votes, one per candidate coin (an abstention on a coin you left out);
    200 with them when the same vote was stored before. Rules the schema cannot state
    (400 naming the field): each decision's symbol is one of the debate's candidate coins,
    each coin decided once.
    """

    InputSerializer = _answer_serializer("HumanVoteInput", reasoning_required=False)

    @extend_schema(
        operation_id="debates_votes_create",
        tags=TAGS,
        request=InputSerializer,
        examples=[ANSWER_EXAMPLE],
        responses={
            201: VoteSerializer(many=True),
            200: OpenApiResponse(
                VoteSerializer(many=True), description="The same vote, stored before."
            ),
            **error_responses(400, 404, 409),
        },
    )
    def post(self, request: Request, debate_id: int) -> Response:
        answer = validate(self.InputSerializer, request.data)
        recorded = human_vote_record(debate_id=debate_id, owner=request.user, answer=answer)
        code = status.HTTP_201_CREATED if recorded.created else status.HTTP_200_OK
        votes = recorded.ballot.votes.order_by("symbol")
        return Response(VoteSerializer(votes, many=True).data, status=code)


class HumanStepSkipApi(JsonApi):
    """Skip the turn or the vote your debate waits for from you; the debate goes on."""

    @extend_schema(
        operation_id="debates_skip_turn",
        tags=TAGS,
        request=None,
        responses={200: DebateDetailSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        human_step_skip(debate_id=debate_id, owner=request.user)
        return Response(debate_representation(debate_id=debate_id, owner=request.user))
