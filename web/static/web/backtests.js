/* The backtests page.
 *
 * Data and actions: the REST API under /api/ (session cookie and CSRF token). The open
 * backtest follows its Server-Sent-Events stream (/api/backtests/{id}/stream): `initial`
 * carries the detail, `progress` the debates done of the total, `status` each state
 * change, `report` the report once every step has ended. Events are applied once, in id
 * order. The equity chart is SVG drawn by the server (/backtests/{id}/equity.svg).
 */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("backtests-config").textContent);
  const {  // common.js
    $, $$, missing, h, redraw, ApiError, api, apiList, sidebarMenu, debateGroup,
  } = window.arenaWeb;
  const EVENT_TYPES = ["initial", "status", "progress", "report"];
  const DEFAULT_SEATS = ["bull", "bear", "analyst"];
  const STREAM_STATES = { idle: "", connecting: "connecting…", live: "● live" };
  const ACTION_BUTTONS = { cancel: "Cancel", delete: "Delete" };
  const METRICS = [
    ["final_equity", "Final equity", (v) => money(v)],
    ["total_return", "Return", (v) => signedPct(v)],
    ["max_drawdown", "Max drawdown", (v) => pct(v)],
    ["sharpe", "Sharpe", (v) => fixed(v)],
    ["sortino", "Sortino", (v) => fixed(v)],
    ["win_rate", "Win rate", (v) => pct(v)],
    // No profit factor (no losing trade): "∞" when a trade won, "–" with none.
    ["profit_factor", "Profit factor", (v, m) => (missing(v) && m.win_rate > 0 ? "∞" : fixed(v))],
    ["trades", "Trades", (v) => String(v)],
    ["exposure", "Exposure", (v) => pct(v)],
    ["fees", "Fees", (v) => money(v)],
    ["funding", "Funding", (v) => money(v)],
    ["hit_rate", "Hit rate", (v) => pct(v)],
  ];

  const RULE_NAMES = { round1_majority: "Round-1 majority", budget_matched: "Budget-matched baseline" };
  const count = (n) => (missing(n) ? "–" : String(n));

  const state = { backtests: [], backtest: null, lastNumber: -1, models: [], personalities: [] };
  let stream = null;
  let opening = 0;

  /** A formatter of figures; a figure that rounds to zero shows no sign ("0.00", not "-0.00"). */
  const figures = (options) => {
    const format = new Intl.NumberFormat("en-US", { signDisplay: "negative", ...options });
    return (v) => (missing(v) ? "–" : format.format(Number(v)));
  };
  const digits = (n) => ({ minimumFractionDigits: n, maximumFractionDigits: n });
  const money = figures(digits(2));
  const tenths = figures(digits(1));
  const pct = figures({ style: "percent", ...digits(1) });
  const signedPct = figures({ style: "percent", ...digits(2), signDisplay: "exceptZero" });
  const fixed = figures({ ...digits(2), useGrouping: false });
  /** Return a price rounded to its coin's own precision (the detail's price_decimals). */
  const price = (symbol, v) => {
    const decimals = (state.backtest.price_decimals || {})[symbol];
    return Number.isInteger(decimals) && !missing(v) ? Number(v).toFixed(decimals) : money(v);
  };
  const when = (iso) => (iso ? iso.replace("T", " ").slice(0, 16) : "–");

  // --- The list ---------------------------------------------------------------------------

  async function loadList() {
    state.backtests = await apiList("backtests");
    renderList();
  }

  function renderList() {
    const list = $("#backtest-list");
    redraw(list, state.backtests.map((b) => h("li", {},
      h("a", {
        href: `/backtests/${b.id}/`,
        class: `debate-link${state.backtest && state.backtest.id === b.id ? " active" : ""}`,
        "data-backtest-id": b.id,
        onclick: (event) => { event.preventDefault(); openBacktest(b.id, true); },
      },
      h("span", { class: `status-dot status-${b.status}`, title: b.status }),
      h("span", { class: "debate-link-name", text: b.name }),
      h("span", { class: "muted small", text: `${b.progress.done}/${b.progress.total}` })))));
    $("#backtest-list-empty").hidden = state.backtests.length > 0;
  }

  function updateListed(detail) {
    const listed = state.backtests.find((b) => b.id === detail.id);
    if (listed) Object.assign(listed, detail);
    else state.backtests.unshift(detail);
    renderList();
  }

  // --- The form ---------------------------------------------------------------------------

  const toggleSidebar = sidebarMenu();

  function show(section) {
    for (const id of ["create", "welcome", "backtest"]) $(`#${id}`).hidden = id !== section;
    $("#welcome-error").hidden = true;
    toggleSidebar(false);
  }

  async function openForm() {
    closeStream();
    state.backtest = null;
    renderList();
    show("create");
    history.pushState(null, "", "/backtests/");
    const [strategies, models, personalities] = await Promise.all([
      apiList("strategies"), apiList("ai-models"), api("GET", "debates/personalities"),
    ]);
    state.models = models.filter((m) => m.enabled);
    state.personalities = personalities;
    const dataset = strategies.filter((s) => s.market_source === "dataset");
    $("#b-strategy").replaceChildren(...dataset.map((s) => h("option", { value: s.id, text: s.name })));
    $("#seats").replaceChildren(...DEFAULT_SEATS.map((p, i) => seatRow(p, i)));
  }

  function seatRow(personality, index) {
    const models = h("select", { name: `participants[${index}].ai_model`, "aria-label": `Seat ${index + 1} model` },
      ...state.models.map((m) => h("option", { value: m.id, text: `${m.name} (${m.provider})` })));
    const people = h("select", { name: `participants[${index}].personality`, "aria-label": `Seat ${index + 1} personality` },
      ...state.personalities.map((p) => h("option", { value: p.id, text: `${p.emoji} ${p.name}`,
        selected: p.id === personality })));
    return h("div", { class: "seat-row" }, models, people,
      h("p", { class: "field-error", "data-error-for": `participants[${index}]` }));
  }

  function utc(local) {
    return local ? `${local.length === 16 ? `${local}:00` : local}Z` : null;
  }

  function formBody() {
    const form = $("#create-form");
    const value = (name) => form.elements[name].value.trim();
    const seats = $$(".seat-row", form).map((row) => ({
      ai_model: Number($("select", row).value),
      personality: $$("select", row)[1].value,
    }));
    return {
      name: value("name"),
      strategy: Number(value("strategy")) || null,
      symbol: value("symbol"),
      participants: seats,
      max_rounds: Number(value("max_rounds")),
      start: utc(value("start")),
      end: utc(value("end")),
      interval_minutes: Number(value("interval_minutes")),
      starting_balance: value("starting_balance"),
      slippage_bps: value("slippage_bps"),
      book: value("book"),
      baseline: value("baseline"),
      cache: value("cache"),
    };
  }

  function showFieldErrors(fields) {
    const form = $("#create-form");
    for (const el of $$("[data-error-for]", form)) el.textContent = "";
    for (const el of $$("[aria-invalid]", form)) el.removeAttribute("aria-invalid");
    const unplaced = [];
    for (const [name, messages] of Object.entries(fields)) {
      const seat = name.match(/^participants\[(\d+)\]/);
      const target = $(`[data-error-for="${seat ? `participants[${seat[1]}]` : name}"]`, form);
      if (!target) { unplaced.push(`${name}: ${messages.join(" ")}`); continue; }
      target.textContent = [target.textContent, messages.join(" ")].filter(Boolean).join(" ");
      const input = form.elements[name];
      if (input && input.setAttribute) input.setAttribute("aria-invalid", "true");
    }
    return unplaced;
  }

  async function submitForm(event) {
    event.preventDefault();
    const errors = $("#create-errors");
    errors.hidden = true;
    $("#create-submit").disabled = true;
    try {
      const detail = await api("POST", "backtests", formBody());
      showFieldErrors({});
      updateListed(detail);
      await openBacktest(detail.id, true);
    } catch (error) {
      const unplaced = error instanceof ApiError ? showFieldErrors(error.fields) : [];
      errors.textContent = [error.message, ...unplaced].join(" ");
      errors.hidden = false;
    } finally {
      $("#create-submit").disabled = false;
    }
  }

  // --- One backtest -----------------------------------------------------------------------

  async function openBacktest(id, push) {
    const mine = ++opening;
    closeStream();
    let detail;
    try {
      detail = await api("GET", `backtests/${id}`);
    } catch (error) {
      if (mine !== opening) return;
      state.backtest = null;
      renderList();
      show("welcome");
      $("#welcome-error").textContent = error.message;
      $("#welcome-error").hidden = false;
      return;
    }
    if (mine !== opening) return;
    if (push) history.pushState(null, "", `/backtests/${id}/`);
    state.backtest = detail;
    state.lastNumber = -1;
    show("backtest");
    render();
    renderList();
    listStepDebates(detail);
    openStream(detail);
  }

  /** List the backtest's debates (newest first, a page at a time) under its progress,
   * each opening on the arena page: they are not in the arena's sidebar. */
  function listStepDebates(backtest) {
    const list = h("ul", { class: "debate-list" });
    const empty = h("p", { class: "muted small", text: "No debate yet.", hidden: true });
    const more = h("button", {
      type: "button", class: "secondary more-debates", text: "More debates", hidden: true,
    });
    $("#step-debate-group").replaceChildren(list, empty, more);
    const group = debateGroup({
      path: `debates?backtest=${backtest.id}`, list, more, empty,
      open: (debateId) => window.location.assign(`/debates/${debateId}/`),
    });
    group.loadMore();
  }

  function render() {
    const b = state.backtest;
    $("#backtest-name").textContent = b.name;
    $("#backtest-settings").textContent = [
      `${b.symbol || "primary from the strategy"}`,
      `${when(b.start)} → ${when(b.end)} UTC`,
      `every ${b.interval_minutes} min`,
      `${b.participants.length} participants × ${b.max_rounds} rounds`,
      `balance ${money(b.starting_balance)} USDT`,
      `fee ${(Number(b.fee_rate) * 100).toFixed(3)}%`,
      `slippage ${Number(b.slippage_bps)} bp`,
      `book ${b.book}`,
      `baseline ${b.baseline}`,
      `cache ${b.cache}`,
    ].join(" · ");
    renderStatus();
    renderProgress();
    renderReport();
  }

  /** How much of a run's tokens the simulated model estimated: all, some or none. */
  function estimatedPart(usage) {
    const part = usage.estimated_tokens || 0;
    if (!part) return "";
    const tokens = usage.prompt_tokens + usage.completion_tokens;
    return part === tokens ? " (estimated)" : ` (${part.toLocaleString("en-US")} estimated)`;
  }

  function renderStatus() {
    const b = state.backtest;
    const badge = $("#backtest-status");
    badge.textContent = b.status;
    badge.className = `status-badge status-${b.status}`;
    redraw($("#backtest-actions"), b.available_actions.map((action) => h("button", {
      type: "button", class: action === "delete" ? "secondary" : "primary",
      "data-action": action, text: ACTION_BUTTONS[action] || action,
      onclick: () => act(action),
    })));
    const error = $("#backtest-error");
    error.hidden = !b.error;
    error.textContent = b.error ? `${b.error.code}: ${b.error.message}` : "";
  }

  function renderProgress() {
    const { done, total } = state.backtest.progress;
    $("#progress").setAttribute("aria-valuemax", total);
    $("#progress").setAttribute("aria-valuenow", done);
    $("#progress-bar").style.width = `${total ? (100 * done) / total : 0}%`;
    $("#progress-text").textContent = `${done} / ${total} debates`;
  }

  /** Why a rule's trades closed, in words: "decision 3, stop 1" ("–": none closed). */
  function closedBy(counts) {
    return Object.entries(counts).filter(([, n]) => n).map(([reason, n]) => `${reason} ${n}`).join(", ") || "–";
  }

  function renderReport() {
    const b = state.backtest;
    const report = b.report;
    $("#report").hidden = !report;
    if (!report) return;
    $("#equity-chart").src = `/backtests/${b.id}/equity.svg?at=${encodeURIComponent(b.finished_at || "")}`;
    $("#stretches").textContent = "Candles: " + report.stretches.map((s) =>
      `${s.timeframe} from ${when(s.from)}`).join(", then ") + ` UTC. ${report.completed_steps} of ${report.steps} debates completed.`;
    const head = h("tr", {}, h("th", { text: "Rule" }), ...METRICS.map(([, label]) => h("th", { text: label })));
    const rows = report.rules.map((rule) => h("tr", { class: rule.key === "debate" ? "is-debate" : null, "data-rule": rule.key },
      h("td", { text: rule.label }),
      ...METRICS.map(([key, , format]) => {
        const value = rule.metrics[key];
        const tone = key === "total_return" && !missing(value) ? (value > 0 ? "gain" : value < 0 ? "loss" : null) : null;
        return h("td", { class: tone, text: format(value, rule.metrics) });
      })));
    $("#metrics").replaceChildren(h("thead", {}, head), h("tbody", {}, rows));
    renderSpend(report);
    const u = report.usage;
    $("#usage").textContent = `${u.model_calls} model calls, ${u.cached_calls} answered from the cache, `
      + `${(u.prompt_tokens + u.completion_tokens).toLocaleString("en-US")} tokens${estimatedPart(u)}, `
      + `${u.seconds.toFixed(1)} s.`
      + budgetMatch(report.budget_match);
    const picker = $("#trade-rule");
    const chosen = picker.value || "debate";
    picker.replaceChildren(...report.rules.map((rule) => h("option", { value: rule.key, text: rule.label,
      selected: rule.key === chosen })));
    renderTrades();
    renderEvaluation();
  }

  /** Each rule that reads model answers: its tokens and USD, in all and per unit of edge
   * ("no edge" per point when it did not beat buy-and-hold). */
  function renderSpend(report) {
    const tokens = figures(digits(0));
    const dollars = figures({ maximumSignificantDigits: 4 });
    const usd = (v) => (missing(v) ? "–" : `$${dollars(v)}`);
    const per = (s, unit) => `${tokens(s[`tokens_per_${unit}`])} / ${usd(s[`usd_per_${unit}`])}`;
    table("#spend", ["Rule", "Tokens", "USD", "Per trade", "Per point over buy-and-hold", "Per correct decision"],
      report.rules.filter((rule) => rule.spend).map((rule) => [rule.label, tokens(rule.spend.tokens),
        usd(rule.spend.cost_usd), per(rule.spend, "trade"),
        missing(rule.spend.tokens_per_point) ? "no edge" : per(rule.spend, "point"),
        per(rule.spend, "correct")]));
  }

  /** How the budget-matched baseline's tokens matched the debate's, in a sentence. */
  function budgetMatch(match) {
    if (!match) return "";
    const answers = match.steps.reduce((sum, step) => sum + step.answers, 0);
    const short = match.steps.filter((step) => step.note).length;
    return ` Budget-matched baseline: ${answers} answers over ${match.steps.length} steps, `
      + `${match.tokens.toLocaleString("en-US")} tokens against the debate's ${match.target.toLocaleString("en-US")}; `
      + `${match.within_one_answer ? "every" : "not every"} step within one answer's tokens`
      + (short ? `, ${short} stopped short.` : ".");
  }

  function table(selector, headings, rows) {
    const head = h("tr", {}, ...headings.map((text) => h("th", { text })));
    const body = rows.map((cells) => h("tr", {}, ...cells.map((text) => h("td", { text }))));
    $(selector).replaceChildren(h("thead", {}, head), h("tbody", {}, body));
  }

  // The outcome reviews of the backtest's decisions: the debate-effect ledger, each
  // voter's accuracy and calibration, the monitors' warnings and the leakage flag.
  function renderEvaluation() {
    const b = state.backtest;
    const report = b.report;
    const ledger = report.ledger;
    $("#evaluation").hidden = !ledger;
    if (!ledger) return;
    const leakage = report.leakage || { contaminated: false, models: [] };
    $("#leakage").hidden = !leakage.contaminated;
    $("#leakage").textContent = leakage.contaminated
      ? "Contaminated: the window starts before the training cutoff of "
        + leakage.models.map((m) => `${m.name} (${m.training_cutoff})`).join(", ")
        + ". Its results may reflect the model's memory of that period."
      : "";
    const warnings = (report.monitors && report.monitors.warnings) || [];
    $("#monitor-warnings").hidden = !warnings.length;
    $("#monitor-warnings").replaceChildren(...warnings.map((text) => h("li", { text })));
    table("#ledger", ["Reviewed decisions", "Flips", "Flip rate", "Flip accuracy", "Useful / harmful flips",
      "Round-1 majority accuracy", "Final consensus accuracy", "Tokens of rounds 2..N per useful flip"], [[
      count(ledger.decisions), count(ledger.flips), pct(ledger.flip_rate), pct(ledger.flip_accuracy),
      `${ledger.useful_flips} / ${ledger.harmful_flips}`, pct(ledger.round1_accuracy),
      pct(ledger.final_accuracy),
      missing(ledger.tokens_per_useful_flip) ? "–" : Math.round(ledger.tokens_per_useful_flip).toLocaleString("en-US"),
    ]]);
    renderVerdict(ledger.verdict);
    table("#voter-accuracy", ["Voter", "Votes", "Right", "Wrong", "Accuracy alone"],
      Object.values(ledger.participants).map((p) => [`${p.ai_model_name} as ${p.personality}`,
        count(p.votes), count(p.right), count(p.wrong), pct(p.accuracy)]));
    table("#calibration", ["Voter", "Judged votes", "Hit rate", "Base rate", "Skill", "Brier"],
      (report.calibration || []).map((v) => [`${v.ai_model_name} as ${v.personality}`, count(v.samples),
        pct(v.hit_rate), pct(v.base_rate), missing(v.skill) ? "–" : `${tenths(v.skill * 100)} pts`,
        missing(v.brier) ? "–" : Number(v.brier).toFixed(3)]));
    $("#reliability-chart").src = `/backtests/${b.id}/reliability.svg?at=${encodeURIComponent(b.finished_at || "")}`;
  }

  /** Whether the debate earned its tokens: the sentence, the debate against each rule
   * with the paired bootstrap's intervals, then the same on the backtest's strategy (its
   * backtests and live debates) when that holds more steps. */
  function renderVerdict(verdict) {
    const b = state.backtest;
    const points = figures({ ...digits(1), signDisplay: "exceptZero" });
    const percent = figures({ ...digits(2), signDisplay: "exceptZero" });
    const span = (interval, format, scale) => (interval
      ? `${format(interval[0] * scale)} to ${format(interval[1] * scale)}` : "–");
    const compared = verdict ? Object.keys(RULE_NAMES).map((key) => verdict.comparisons[key]).filter(Boolean) : [];
    $("#verdict").textContent = verdict ? verdict.sentence : "";
    table("#verdict-table", ["Debate against", "Steps", "Hit rate (debate / other)", "Difference, points",
      "95 % interval", "Return a step, % (debate / other)", "Difference, %", "95 % interval", "Ahead in"],
      compared.map((c) => [RULE_NAMES[c.against], count(c.steps),
        c.hit_rate.map((v) => pct(v)).join(" / "),
        missing(c.hit_difference) ? "–" : points(c.hit_difference * 100),
        span(c.hit_interval, points, 100), c.return_pct.map((v) => fixed(v)).join(" / "),
        percent(c.return_difference), span(c.return_interval, percent, 1), pct(c.ahead)]));
    const wider = $("#strategy-verdict");
    wider.hidden = true;
    if (!b.strategy) return;
    const most = (v) => Math.max(0, ...Object.values(v.comparisons).filter(Boolean).map((c) => c.steps));
    api("GET", `strategies/${b.strategy}/ledger`).then((ledger) => {
      if (state.backtest !== b || !verdict || most(ledger.verdict) <= most(verdict)) return;
      wider.textContent = ledger.verdict.sentence;
      wider.hidden = false;
    }).catch(() => {});
  }

  function renderTrades() {
    const report = state.backtest && state.backtest.report;
    if (!report) return;
    const rule = report.rules.find((r) => r.key === $("#trade-rule").value) || report.rules[0];
    const head = h("tr", {}, ...["Coin", "Side", "Entry", "Entry price", "Exit", "Exit price",
      "Size", "Lev.", "PnL", "Why closed"].map((text) => h("th", { text })));
    const rows = rule.trades.map((t) => h("tr", {},
      h("td", { text: t.symbol }), h("td", { text: t.side }),
      h("td", { text: when(t.entry_at) }), h("td", { text: price(t.symbol, t.entry_price) }),
      h("td", { text: when(t.exit_at) }), h("td", { text: price(t.symbol, t.exit_price) }),
      h("td", { text: String(t.quantity) }), h("td", { text: `${t.leverage}x` }),
      h("td", { class: t.pnl > 0 ? "gain" : t.pnl < 0 ? "loss" : null, text: money(t.pnl) }),
      h("td", { text: t.reason })));
    const empty = rows.length ? [] : [h("tr", {}, h("td", { colspan: 10, class: "muted", text: "No trades." }))];
    $("#trades").replaceChildren(h("thead", {}, head), h("tbody", {}, rows, empty));
    const trips = rule.guard_trips || [];
    $("#closed-by").textContent = `Closed by: ${closedBy(rule.closed_by || {})}. Guard trips: `
      + (trips.length ? trips.map((t) => `${when(t.at)} UTC, ${t.reason}`).join("; ") : "none") + ".";
  }

  async function act(action) {
    const b = state.backtest;
    try {
      if (action === "delete") {
        if (!window.confirm(`Delete "${b.name}"?`)) return;
        await api("DELETE", `backtests/${b.id}`);
        state.backtests = state.backtests.filter((item) => item.id !== b.id);
        state.backtest = null;
        closeStream();
        renderList();
        show("welcome");
        history.pushState(null, "", "/backtests/");
        return;
      }
      state.backtest = await api("POST", `backtests/${b.id}/${action}`);
      render();
      updateListed(state.backtest);
    } catch (error) {
      $("#backtest-error").textContent = error.message;
      $("#backtest-error").hidden = false;
    }
  }

  // --- The stream -------------------------------------------------------------------------

  function eventNumber(id) {
    const number = Number(String(id || "").split(":").pop());
    return Number.isFinite(number) ? number : -1;
  }

  function setStreamState(name) {
    const el = $("#stream-state");
    el.dataset.state = name;
    el.textContent = STREAM_STATES[name] || "";
  }

  function closeStream() {
    if (stream) stream.close();
    stream = null;
    setStreamState("idle");
  }

  function openStream(detail) {
    if (!["pending", "running"].includes(detail.status)) return;
    const after = detail.event_id ? `?lastEventId=${encodeURIComponent(detail.event_id)}` : "";
    state.lastNumber = eventNumber(detail.event_id);
    const source = new EventSource(`/api/backtests/${detail.id}/stream${after}`);
    stream = source;
    setStreamState("connecting");
    source.onopen = () => setStreamState("live");
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, (event) => {
        if (stream !== source || !state.backtest || state.backtest.id !== detail.id) return;
        const number = eventNumber(event.lastEventId);
        if (type !== "initial" && number <= state.lastNumber) return;
        state.lastNumber = Math.max(state.lastNumber, number);
        apply(type, JSON.parse(event.data));
      });
    }
  }

  function apply(type, data) {
    const b = state.backtest;
    if (type === "initial") {
      state.backtest = data;
      render();
    } else if (type === "progress") {
      b.progress = data;
      renderProgress();
    } else if (type === "status") {
      b.status = data.status;
      b.available_actions = data.available_actions;
      b.error = data.error || null;
      renderStatus();
      if (!["pending", "running"].includes(data.status)) {
        closeStream();
        openBacktest(b.id, false);
      }
    } else if (type === "report") {
      b.report = data;
    }
    updateListed(state.backtest);
  }

  // --- Start ------------------------------------------------------------------------------

  $("#new-backtest").addEventListener("click", openForm);
  $("#create-cancel").addEventListener("click", () => { show("welcome"); });
  $("#create-form").addEventListener("submit", submitForm);
  $("#trade-rule").addEventListener("change", renderTrades);
  window.addEventListener("popstate", () => {
    const found = window.location.pathname.match(/^\/backtests\/(\d+)\//);
    if (found) openBacktest(Number(found[1]), false);
    else show("welcome");
  });
  loadList().then(() => {
    if (config.backtestId) openBacktest(config.backtestId, false);
  });
})();
