"""The simulated account of a backtest: decisions executed in time order, as on paper.

A ``Portfolio`` is a paper account in memory. It executes a decision exactly as a live
execution on the paper exchange does (SPEC 10; ``traders.services.executions``), with
the same code: ``traders.risk`` plans the order (size from the available balance times
``position_pct``, the strategy's leverage cap, the 12 USD minimum, the maximum position
value, the maximum of open positions, no second position in the same coin and
direction, stop and target on the right side of the price), ``traders.exchanges.book``
fills it (margin and fee available, the fee paid, gains and losses on closing, resting
orders on their side of the price), ``traders.exchanges.fills`` checks stops and
targets on each candle's low and high, the stop first when a candle crosses both.

- An order placed at a step's instant fills at the open of the first candle opening at
  or after it (``Tape.fill_price``), moved against the trader by the slippage.
- A decision executes against the positions held on its coin as a live execution does
  (``debates.engine.book.book_orders``): ``close_long``/``close_short`` close the open
  position of that side at the next open; an opening opposite to an open position closes
  it first, or opens beside it with ``hedging``; an action that would do nothing (a
  close with none open, a second opening in the same direction) does nothing and is
  recorded with why.
- A stop that cannot rest (it would trigger at once) closes the position again, as a
  live execution does; a target that cannot rest leaves the position with its stop.
- The strategy's portfolio guards are measured at each step before its decisions
  (``backtests.engine.guards``): a tripped guard pauses the account's openings (its
  closes, stops and targets go on) and is recorded in ``trips``.
- Between steps, every candle that closed is walked, oldest first: funding is paid or
  received at each settlement while a position is open (before the candle opening at
  it), then the candle's low and high are checked against the stop and target.
- ``finish`` walks to the end and closes what is still open at the last candle's close,
  paying the funding settled before the end, not a settlement due at the end itself.

Everything refused is recorded with its reason; nothing is silently resized.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from backtests.engine.guards import GuardTrip, GuardWatch
from backtests.engine.tape import Tape
from debates.engine.book import book_orders
from traders.exchanges.book import (
    BUY,
    PAPER_MARKET,
    SELL,
    FillRefused,
    Opening,
    check_resting,
    closing,
    funding_payment,
    funds,
    opening,
    slipped,
)
from traders.exchanges.fills import STOP_LOSS, TAKE_PROFIT, crossing, realized_pnl
from traders.guards import GuardLimits, Trip
from traders.risk import (
    LONG,
    Funds,
    RiskLimits,
    RiskRefused,
    open_intent,
    plan_open,
    protective_prices,
    round_step,
)

OPENING_ACTIONS = ("open_long", "open_short")
CLOSING_ACTIONS = ("close_long", "close_short")
ZERO = Decimal("0")


@dataclass(frozen=True)
class Intent:
    """A decision to execute on one coin: its action and sizing, as a decision stores them."""

    symbol: str
    action: str
    position_pct: float | None = None
    leverage: int | None = None
    stop_loss: float | None = None
    take_profit: float | None = None


@dataclass
class Position:
    """An open position of the simulated account."""

    symbol: str
    side: str
    quantity: Decimal
    entry_price: Decimal
    entry_ms: int
    leverage: int
    margin: Decimal
    stop: Decimal | None
    target: Decimal | None
    fees: Decimal
    funding: Decimal = ZERO
    peak_pnl: Decimal | None = None  # the best unrealised P&L a closed bar reached
    funded: bool = True  # False for the buy-and-hold baseline's coin, held as spot
    cursor: int = 0  # the next bar of its tape to check
    funding_cursor: int = 0  # the next funding settlement of its tape

    @property
    def close_side(self) -> str:
        return SELL if self.side == LONG else BUY


@dataclass(frozen=True)
class Trade:
    """A closed position: entry and exit, and what it made after fees and funding.

    ``reason``: ``stop``, ``target``, ``decision`` (a close decision), ``end`` (still
    open at the window's end) or ``unwound`` (its stop could not rest).
    """

    symbol: str
    side: str
    entry_ms: int
    entry_price: Decimal
    exit_ms: int
    exit_price: Decimal
    quantity: Decimal
    leverage: int
    pnl: Decimal
    fees: Decimal
    funding: Decimal
    reason: str


@dataclass(frozen=True)
class Refusal:
    """A decision the account did not execute, and why."""

    at_ms: int
    symbol: str
    action: str
    reason: str


@dataclass
class Portfolio:
    """A paper account in memory, trading the coins of ``tapes``."""

    balance: Decimal
    fee_rate: Decimal
    tapes: Mapping[str, Tape]
    limits: RiskLimits = field(default_factory=RiskLimits)
    slippage_bps: Decimal = ZERO
    hedging: bool = False
    guards: GuardLimits = field(default_factory=GuardLimits)
    wallet: Decimal = field(init=False)
    positions: dict[tuple[str, str], Position] = field(init=False, default_factory=dict)
    trades: list[Trade] = field(init=False, default_factory=list)
    refusals: list[Refusal] = field(init=False, default_factory=list)
    fees: Decimal = field(init=False, default=ZERO)
    funding: Decimal = field(init=False, default=ZERO)
    watch: GuardWatch = field(init=False)

    def __post_init__(self) -> None:
        self.wallet = self.balance
        self.watch = GuardWatch(self.guards)

    @property
    def paused(self) -> Trip | None:
        """The guard that pauses the openings now, if any."""
        return self.watch.paused

    @property
    def trips(self) -> list[GuardTrip]:
        """Every guard trip, in time order."""
        return self.watch.trips

    # -- reads -----------------------------------------------------------------------

    def funds(self, at_ms: int) -> Funds:
        """Return the account's funds with every position marked at ``at_ms``'s price."""
        return funds(
            self.wallet, self.positions.values(), lambda s: self.tapes[s].fill_price(at_ms)
        )

    def equity(self, at_ms: int) -> Decimal:
        """Return the account's equity at ``at_ms``."""
        return self.funds(at_ms).equity or ZERO

    # -- time ------------------------------------------------------------------------

    def advance(self, to_ms: int, *, funding_by: int | None = None) -> None:
        """Walk every candle closed by ``to_ms``: funding (settled by ``funding_by``,
        ``to_ms`` unless given), then stops and targets."""
        funding_by = to_ms if funding_by is None else funding_by
        for key, position in list(self.positions.items()):
            tape = self.tapes[position.symbol]
            bars = tape.bars
            while position.cursor < len(bars) and bars[position.cursor].close_ms <= to_ms:
                bar = bars[position.cursor]
                self._settle_funding(position, tape, until_ms=bar.open_ms)
                best = bar.high if position.side == LONG else bar.low
                pnl = realized_pnl(position.side, position.entry_price, best, position.quantity)
                position.peak_pnl = (
                    pnl if position.peak_pnl is None else max(position.peak_pnl, pnl)
                )
                hit = crossing(position.side, position.stop, position.target, bar.low, bar.high)
                position.cursor += 1
                if hit is not None:
                    kind, price = hit
                    reason = "stop" if kind == STOP_LOSS else "target"
                    self._close(key, price, bar.open_ms, reason)
                    break
            else:
                self._settle_funding(position, tape, until_ms=funding_by)

    def finish(self, end_ms: int) -> None:
        """Walk to ``end_ms`` and close every open position at the last candle's close,
        by ``end_ms``: a settlement due at ``end_ms`` itself is not paid."""
        self.advance(end_ms, funding_by=end_ms - 1)
        for key, position in list(self.positions.items()):
            closed_ms, price = self.tapes[position.symbol].last_close(end_ms)
            self._close(key, price, closed_ms, "end")

    # -- decisions -------------------------------------------------------------------

    def execute(self, intents: Iterable[Intent], at_ms: int) -> None:
        """Execute ``intents`` (a step's decisions, in order) at ``at_ms``, against the
        positions held on each coin, the guards measured first."""
        self.measure(at_ms)
        paused = self.paused.reason if self.paused is not None else ""
        for intent in intents:
            if intent.action not in (*OPENING_ACTIONS, *CLOSING_ACTIONS):
                continue
            held = [side for symbol, side in self.positions if symbol == intent.symbol]
            orders = book_orders(intent.action, held, hedging=self.hedging, paused=paused)
            for side in orders.closes:
                tape = self.tapes[intent.symbol]
                self._close((intent.symbol, side), tape.fill_price(at_ms), at_ms, "decision")
            if orders.opens is not None:
                self._open(intent, at_ms)
            elif orders.note:
                self._refuse(at_ms, intent, orders.note)

    def measure(self, at_ms: int) -> None:
        """Measure the account against its guards at ``at_ms`` (``GuardWatch``), if it
        has any."""
        if self.watch.off:
            return
        self.watch.measure(
            at_ms, equity=self.equity(at_ms), exposure=self._exposure(at_ms), closed=self.trades
        )

    def _exposure(self, at_ms: int) -> Decimal:
        """Return the open positions' value at ``at_ms``'s prices."""
        return sum(
            (p.quantity * self.tapes[p.symbol].fill_price(at_ms) for p in self.positions.values()),
            ZERO,
        )

    def _open(self, intent: Intent, at_ms: int) -> None:
        tape = self.tapes[intent.symbol]
        quote = tape.fill_price(at_ms)
        account = self.funds(at_ms)
        wanted = open_intent(intent)
        try:
            plan = plan_open(
                wanted,
                price=quote,
                funds=account,
                market=PAPER_MARKET,
                limits=self.limits,
                open_positions=list(self.positions),
            )
            side_of_order = BUY if wanted.side == LONG else SELL
            price = slipped(quote, side_of_order, self.slippage_bps)
            fill = opening(
                price=price,
                quantity=plan.quantity,
                leverage=plan.leverage,
                fee_rate=self.fee_rate,
                available=account.available or ZERO,
            )
        except (RiskRefused, FillRefused) as exc:
            self._refuse(at_ms, intent, getattr(exc, "message", None) or str(exc))
            return
        key = (intent.symbol, wanted.side)
        position = self._enter(key, price, plan.quantity, plan.leverage, fill, at_ms)
        try:
            stop, target = protective_prices(
                wanted.side, price, wanted.stop_loss, wanted.take_profit, PAPER_MARKET.price_tick
            )
            check_resting(kind=STOP_LOSS, position_side=wanted.side, trigger=stop, price=quote)
        except (RiskRefused, FillRefused) as exc:
            self._refuse(at_ms, intent, f"the stop could not rest: {exc}; closed again")
            self._close(key, quote, position.entry_ms, "unwound")
            return
        position.stop = stop
        try:
            check_resting(kind=TAKE_PROFIT, position_side=wanted.side, trigger=target, price=quote)
        except FillRefused as exc:
            self._refuse(at_ms, intent, f"the target could not rest: {exc}")
            return
        position.target = target

    def buy_all(self, symbol: str, at_ms: int) -> None:
        """Buy ``symbol`` with the whole balance at 1x, with no stop or target (the
        buy-and-hold baseline): the largest quantity whose cost and fee the balance pays,
        held as the coin itself, so no funding is paid on it."""
        tape = self.tapes[symbol]
        price = slipped(tape.fill_price(at_ms), BUY, self.slippage_bps)
        available = self.funds(at_ms).available or ZERO
        quantity = round_step(available / (price * (1 + self.fee_rate)), PAPER_MARKET.amount_step)
        intent = Intent(symbol, "open_long", position_pct=1.0, leverage=1)
        try:
            fill = opening(
                price=price,
                quantity=quantity,
                leverage=1,
                fee_rate=self.fee_rate,
                available=available,
            )
        except FillRefused as exc:
            self._refuse(at_ms, intent, exc.reason)
            return
        self._enter((symbol, LONG), price, quantity, 1, fill, at_ms).funded = False

    def _enter(
        self,
        key: tuple[str, str],
        price: Decimal,
        quantity: Decimal,
        leverage: int,
        fill: Opening,
        at_ms: int,
    ) -> Position:
        """Hold the position ``key`` (coin, side) an opening fill at ``at_ms`` made."""
        symbol, side = key
        tape = self.tapes[symbol]
        index = tape.fill_index(at_ms)
        self.wallet -= fill.fee
        self.fees += fill.fee
        position = Position(
            symbol=symbol,
            side=side,
            quantity=quantity,
            entry_price=price,
            entry_ms=tape.bars[index].open_ms if index is not None else at_ms,
            leverage=leverage,
            margin=fill.margin,
            stop=None,
            target=None,
            fees=fill.fee,
            cursor=index if index is not None else len(tape.bars),
            funding_cursor=tape.funding_after(at_ms),
        )
        self.positions[key] = position
        return position

    def _close(self, key: tuple[str, str], price: Decimal, at_ms: int, reason: str) -> None:
        """Close a position at ``price`` (moved by the slippage) and record its trade."""
        position = self.positions.pop(key)
        price = slipped(price, position.close_side, self.slippage_bps)
        result = closing(
            side=position.side,
            entry=position.entry_price,
            price=price,
            quantity=position.quantity,
            fee_rate=self.fee_rate,
        )
        self.wallet += result.pnl - result.fee
        self.fees += result.fee
        fees = position.fees + result.fee
        self.trades.append(
            Trade(
                symbol=position.symbol,
                side=position.side,
                entry_ms=position.entry_ms,
                entry_price=position.entry_price,
                exit_ms=at_ms,
                exit_price=price,
                quantity=position.quantity,
                leverage=position.leverage,
                pnl=result.pnl - fees + position.funding,
                fees=fees,
                funding=position.funding,
                reason=reason,
            )
        )

    def _settle_funding(self, position: Position, tape: Tape, *, until_ms: int) -> None:
        """Pay or receive the funding settled after the entry and by ``until_ms``."""
        while position.funded and position.funding_cursor < len(tape.funding):
            at_ms, rate = tape.funding[position.funding_cursor]
            if at_ms > until_ms:
                return
            position.funding_cursor += 1
            if at_ms <= position.entry_ms:
                continue
            amount = funding_payment(
                side=position.side,
                quantity=position.quantity,
                mark=tape.fill_price(at_ms),
                rate=rate,
            )
            position.funding += amount
            self.wallet += amount
            self.funding += amount

    def _refuse(self, at_ms: int, intent: Intent, reason: str) -> None:
        self.refusals.append(Refusal(at_ms, intent.symbol, intent.action, reason))
