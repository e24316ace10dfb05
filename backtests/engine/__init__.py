"""The pure part of backtests: price tapes, the simulated account, the rules, the metrics.

No Django here: it is given plain values (what the debates stored, the dataset's
candles) and returns plain values.
"""
