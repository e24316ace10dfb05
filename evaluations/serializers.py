"""Representations of the ledger and the calibration (read-only, for the schema)."""

from __future__ import annotations

from rest_framework import serializers


class ParticipantAccuracySerializer(serializers.Serializer):
    ai_model = serializers.IntegerField()
    ai_model_name = serializers.CharField()
    personality = serializers.CharField()
    votes = serializers.IntegerField()
    right = serializers.IntegerField()
    wrong = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)


class ComparisonSerializer(serializers.Serializer):
    against = serializers.CharField(help_text="round1_majority or budget_matched")
    steps = serializers.IntegerField(help_text="Reviewed steps pairing the debate with it.")
    hit_rate = serializers.ListField(
        child=serializers.FloatField(allow_null=True), help_text="[debate, other]"
    )
    hit_difference = serializers.FloatField(allow_null=True, help_text="debate - other")
    hit_interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="[low, high]"
    )
    return_pct = serializers.ListField(
        child=serializers.FloatField(), help_text="Mean return of the calls a step, percent."
    )
    return_difference = serializers.FloatField(help_text="debate - other, percent a step")
    return_interval = serializers.ListField(child=serializers.FloatField())
    ahead = serializers.FloatField(help_text="Share of resamples the debate returned more.")
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    level = serializers.FloatField()


class ComparisonsSerializer(serializers.Serializer):
    round1_majority = ComparisonSerializer(allow_null=True)
    budget_matched = ComparisonSerializer(allow_null=True)


class VerdictSerializer(serializers.Serializer):
    against = serializers.CharField(allow_null=True, help_text="The rule the sentence reads.")
    sentence = serializers.CharField(help_text="Whether the debate earned its tokens.")
    comparisons = ComparisonsSerializer()


class LedgerSerializer(serializers.Serializer):
    decisions = serializers.IntegerField(help_text="Reviewed coin decisions.")
    flips = serializers.IntegerField(help_text="Decisions whose action differs from round 1's.")
    flips_right = serializers.IntegerField()
    flips_wrong = serializers.IntegerField()
    useful_flips = serializers.IntegerField(help_text="Right flips of a round 1 not right.")
    harmful_flips = serializers.IntegerField(help_text="Flips away from a right round 1.")
    flip_rate = serializers.FloatField(allow_null=True)
    flip_accuracy = serializers.FloatField(allow_null=True)
    round1_accuracy = serializers.FloatField(allow_null=True)
    final_accuracy = serializers.FloatField(allow_null=True)
    round_tokens = serializers.IntegerField(help_text="Tokens of rounds 2..N.")
    tokens_per_useful_flip = serializers.FloatField(allow_null=True)
    participants = serializers.DictField(child=ParticipantAccuracySerializer())
    verdict = VerdictSerializer(help_text="Did the debate earn its tokens? (paired bootstrap)")


class BinSerializer(serializers.Serializer):
    low = serializers.IntegerField()
    high = serializers.IntegerField()
    count = serializers.IntegerField()
    mean_confidence = serializers.FloatField(allow_null=True)
    share_right = serializers.FloatField(allow_null=True)


class VoterCalibrationSerializer(serializers.Serializer):
    voter = serializers.CharField(help_text="<AI model id>:<personality>")
    ai_model = serializers.IntegerField()
    ai_model_name = serializers.CharField()
    personality = serializers.CharField()
    samples = serializers.IntegerField(help_text="Votes judged right or wrong.")
    right = serializers.IntegerField()
    hit_rate = serializers.FloatField(allow_null=True)
    base_rate = serializers.FloatField(
        allow_null=True, help_text="The best constant call's hit rate on the same samples."
    )
    skill = serializers.FloatField(allow_null=True, help_text="hit_rate - base_rate")
    brier = serializers.FloatField(allow_null=True)
    reliability = BinSerializer(many=True)


class CalibrationSerializer(serializers.Serializer):
    voters = VoterCalibrationSerializer(many=True)


class MixSerializer(serializers.Serializer):
    open_long = serializers.FloatField(allow_null=True)
    open_short = serializers.FloatField(allow_null=True)
    close = serializers.FloatField(allow_null=True)
    hold = serializers.FloatField(allow_null=True)
    wait = serializers.FloatField(allow_null=True)


class MonitorSerializer(serializers.Serializer):
    decisions = serializers.IntegerField(help_text="Decisions in the window (at most 20).")
    mix = MixSerializer(help_text="Share of each kind among the usable decisions.")
    parse_failure_share = serializers.FloatField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())


class VoterMonitorSerializer(MonitorSerializer):
    voter = serializers.CharField()
    ai_model = serializers.IntegerField()
    ai_model_name = serializers.CharField()
    personality = serializers.CharField()


class MonitorsSerializer(serializers.Serializer):
    debates = serializers.IntegerField()
    consensus = MonitorSerializer()
    voters = VoterMonitorSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())
