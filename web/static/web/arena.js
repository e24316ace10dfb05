/* The arena page.
 *
 * Data and actions: the REST API under /api/, with the session cookie and the CSRF token.
 * Live updates: the open debate's Server-Sent-Events stream (/api/debates/{id}/stream).
 * The `initial` event carries the whole debate; every later event is applied once, in id
 * order: an event whose number is not above the last one applied is dropped, and messages,
 * votes and executions are kept by their own ids, so a replay never duplicates them.
 * After a dropped connection the browser reconnects by itself with Last-Event-ID; when it
 * gives up (an error answer), the page reconnects with ?lastEventId= after a pause.
 */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("arena-config").textContent);
  const {  // common.js
    $, $$, missing, h, redraw, ApiError, api, apiList, sidebarMenu,
  } = window.arenaWeb;

  const EVENT_TYPES = ["initial", "status", "round_start", "round_end", "message", "vote",
    "consensus", "execution", "error", "judge_call", "judge_scores"];
  const RUBRIC = { market_data: "Market data", answers: "Answers", consistency: "Consistency" };
  const EXECUTABLE = ["open_long", "open_short", "close_long", "close_short"];
  const ACTION_LABELS = {
    open_long: "LONG", open_short: "SHORT", close_long: "CLOSE LONG",
    close_short: "CLOSE SHORT", hold: "HOLD", wait: "WAIT",
  };
  const ACTION_BUTTONS = {
    start: "Start", advance: "Continue", retry_step: "Retry step", cancel: "Cancel",
    retry: "Retry", delete: "Delete",
  };
  const PRIMARY_ACTIONS = new Set(["start", "advance", "retry"]);
  const STREAM_STATES = {
    idle: "", connecting: "connecting…", live: "● live", reconnecting: "reconnecting…",
  };
  const DEFAULT_SEATS = ["bull", "bear", "analyst"];
  const HUMAN_SEAT = "human";  // the seat select's value for the owner's own seat
  const MAX_SEATS = 6;
  const FINAL_STATUSES = new Set(["completed", "cancelled", "failed"]);

  const state = {
    debate: null,         // the open debate: its detail representation
    messages: new Map(),  // id -> message of the open debate
    votes: new Map(),     // id -> vote of the open debate
    detailReads: 0,       // reads of the open debate's detail asked (refreshFromDetail)
    personalities: {},    // id -> {name, emoji, color, description}
    traders: [],
    strategies: [],
    models: [],
    lastNumber: -1,       // number of the last stream event applied
    lastEventId: "",
    owed: "",             // the answer the person's form is built for: "turn:2", "vote"
    sent: "",             // the answer just sent, hidden until the state moves on
  };
  let stream = null;      // {source, debateId, failures, retryTimer}
  let opening = 0;        // the latest openDebate call; earlier answers are ignored
  const sidebar = window.arenaSidebar({ open: (debateId) => navigate(debateId) });  // sidebar.js

  // --- Small helpers ----------------------------------------------------------------------

  const pct = (fraction) => (missing(fraction) ? "–"
    : `${Number((Number(fraction) * 100).toFixed(1))}%`);
  const conf = (value) => (missing(value) ? "–" : `${Math.round(value)}%`);
  const num = (value) => (missing(value) ? "–" : String(Number(value)));

  function badge(action) {
    if (!action) return h("span", { class: "badge badge-none", text: "ABSTAIN" });
    const kind = action.replace("_", "-");
    return h("span", { class: `badge badge-${kind}`, text: ACTION_LABELS[action] || action });
  }

  function participantById(id) {
    const known = state.debate.participants.find((p) => p.id === id);
    return known || { id, personality: "?", emoji: "?", color: "#9CA3AF",
      ai_model_name: "unknown", speak_order: 99 };
  }

  function participantName(participant) {
    const personality = state.personalities[participant.personality];
    const who = participant.kind === HUMAN_SEAT ? "you" : participant.ai_model_name;
    return `${personality ? personality.name : participant.personality} · ${who}`;
  }

  /** How much of a debate's tokens the simulated model estimated: all, some or none. */
  function estimated(debate) {
    const part = debate.spend ? debate.spend.estimated_tokens : 0;
    if (!part) return "";
    return part === debate.tokens ? " (estimated)" : ` (${part.toLocaleString("en-US")} estimated)`;
  }

  /** The label every simulated model carries wherever it appears. */
  function simulatedBadge(participant) {
    return participant.simulated
      ? h("span", { class: "badge badge-simulated", title: "the built-in offline model",
        text: "simulated" })
      : null;
  }

  /** Return a price rounded to its coin's precision (from the debate's snapshot). */
  function price(symbol, value) {
    if (missing(value)) return "–";
    const snapshot = state.debate && state.debate.market_snapshot;
    const coin = snapshot && (snapshot.coins || []).find((c) => c.symbol === symbol);
    return coin && Number.isInteger(coin.price_decimals)
      ? Number(value).toFixed(coin.price_decimals) : num(value);
  }

  /** Return the market instant a debate reads: its snapshot's, or the one it asked for. */
  function marketInstant(debate) {
    const instant = (debate.market_snapshot && debate.market_snapshot.as_of) || debate.as_of;
    return instant ? `market at ${instant.replace("T", " ").slice(0, 16)} UTC` : "market at start";
  }

  function avatar(participant, extraClass) {
    return h("span", {
      class: `avatar ${extraClass || ""}`,
      style: { "--color": participant.color },
      title: participantName(participant),
      text: participant.emoji,
    });
  }

  function fillSelect(select, options) {
    const chosen = select.value;
    redraw(select, options.map(([value, text]) => h("option", { value, text })));
    if (options.some(([value]) => String(value) === chosen)) select.value = chosen;
  }

  // Fetched once as the page starts. The create form waits for it too: its button works
  // from the first paint, and a form opened before the list arrived had empty seat selects.
  let personalitiesLoaded = null;
  function loadPersonalities() {
    personalitiesLoaded ||= api("GET", "debates/personalities").then((personalities) => {
      state.personalities = Object.fromEntries(personalities.map((p) => [p.id, p]));
    }, (error) => {
      personalitiesLoaded = null;  // the next caller asks again
      throw error;
    });
    return personalitiesLoaded;
  }

  async function loadTraders() {
    state.traders = await apiList("traders").catch(() => []);
    const running = state.traders.filter((t) => t.status === "running");
    const options = running.map((t) => [t.id, `${t.name} (${t.exchange})`]);
    for (const select of [$("#x-trader"), $("#f-trader")]) {
      fillSelect(select, options);
      syncCheck(select);
    }
    if (state.debate) renderConsensus();
  }

  // --- Views and navigation ---------------------------------------------------------------

  function show(name) {
    for (const id of ["welcome", "create", "debate"]) $(`#${id}`).hidden = id !== name;
    $("#welcome-error").hidden = true;
    toggleSidebar(false);
  }

  const toggleSidebar = sidebarMenu();

  /** Show debate ``debateId`` (the welcome without one), ``notice`` under its header. */
  function navigate(debateId, notice) {
    const path = debateId ? `/debates/${debateId}/` : "/";
    if (window.location.pathname !== path) window.history.pushState({}, "", path);
    if (debateId) {
      openDebate(debateId, notice);
    } else {
      closeDebate();
      show("welcome");
    }
  }

  // --- The open debate --------------------------------------------------------------------

  async function openDebate(debateId, notice) {
    const ticket = ++opening;
    closeDebate();
    let detail;
    try {
      detail = await api("GET", `debates/${debateId}`);
    } catch (error) {
      if (ticket !== opening) return;
      show("welcome");
      $("#welcome-error").textContent = error.message;
      $("#welcome-error").hidden = false;
      return;
    }
    if (ticket !== opening) return;
    setDebate(detail);
    show("debate");
    if (notice) showDebateError(notice);
    loadTraders();
    // From the start, not after the detail's event_id: the stream's `initial` is read
    // after its id, so nothing published meanwhile can fall between the two.
    openStream(debateId, "");
  }

  function closeDebate() {
    closeStream();
    state.debate = null;
    sidebar.setOpen(null);
  }

  /** Show a whole debate (the REST detail, or the stream's `initial` event). */
  function setDebate(detail) {
    state.debate = detail;
    state.messages = new Map(detail.messages.map((m) => [m.id, m]));
    state.votes = new Map(detail.votes.map((v) => [v.id, v]));
    $("#rounds").replaceChildren();
    $("#notices").replaceChildren();
    renderHeader();
    for (const message of state.messages.values()) renderMessage(message);
    renderRounds();
    renderVotes();
    renderJudge();
    renderBook();
    renderConsensus();
    renderHumanTurn();
    sidebar.setOpen(detail);
    sidebar.update(detail);
  }

  /** Apply the state fields of a `status` event, or of an action's answer. */
  function applyState(fields) {
    const debate = state.debate;
    for (const key of ["status", "phase", "current_round", "current_speaker", "level_used",
      "available_actions", "symbol", "symbols"]) {
      if (key in fields) debate[key] = fields[key];
    }
    debate.error = fields.error || null;
    renderHeader();
    renderRounds();
    renderVotes();
    renderJudge();
    renderConsensus();
    renderHumanTurn();
    sidebar.update(debate);
  }

  function renderHeader() {
    const debate = state.debate;
    $("#debate-name").textContent = debate.name;
    const status = $("#debate-status");
    status.className = `status-badge status-${debate.status}`;
    status.textContent = debate.status;
    const rounds = debate.current_round
      ? `round ${debate.current_round}/${debate.max_rounds}` : `${debate.max_rounds} rounds`;
    const strategy = debate.strategy ? debate.strategy.name : "no strategy";
    const level = debate.level_used ? ` · ${debate.level_used}` : "";
    const spend = debate.tokens === undefined ? ""
      : ` · ${debate.tokens.toLocaleString("en-US")} tokens${estimated(debate)} · $${debate.cost_usd}`;
    $("#debate-meta").textContent = `${strategy} · ${debate.phase} · ${rounds} · `
      + `${debate.prompt_variant} · ${marketInstant(debate)}${level}${spend}`;
    const coins = debate.symbols.length ? debate.symbols : [debate.symbol || "coins at start"];
    $("#debate-coins").replaceChildren(...coins.map((symbol) => h("span", {
      class: `coin${symbol === debate.symbol ? " is-primary" : ""}`, text: symbol,
    })));
    $("#debate-participants").replaceChildren(...debate.participants.map((p) => h("span",
      { class: "participant" },
      avatar(p, p.id === debate.current_speaker ? "speaking" : ""),
      h("span", { class: "participant-name", text: participantName(p) }),
      simulatedBadge(p))));
    const actions = debate.available_actions.filter((action) => ACTION_BUTTONS[action]);
    redraw($("#debate-actions"), actions.map((action) => h("button", {
      type: "button",
      class: PRIMARY_ACTIONS.has(action) ? "primary" : "secondary",
      "data-action": action,
      text: ACTION_BUTTONS[action],
      onclick: () => runAction(action),
    })));
    showDebateError(debate.error && failureText(debate.error));
  }

  /** Return what a failed debate's ``error`` ({step, code, message}) says to a person. */
  function failureText(error) {
    const what = error.message || error.code;
    return error.step ? `Failed at ${error.step}: ${what}` : what;
  }

  function showDebateError(text) {
    $("#debate-error").hidden = !text;
    $("#debate-error").textContent = text || "";
  }

  /** Whether an action's answer (a detail) is for the open debate and no older than the
   * stream's events applied: the stream may have moved the debate on while the answer was
   * on its way (the manual pace's last Continue: the consensus and `completed` arrive
   * first), and an older answer would show the debate back where it was. Such an answer
   * is dropped; the stream carries the state. */
  function isCurrent(detail) {
    if (!state.debate || state.debate.id !== detail.id) return false;
    const number = eventNumber(detail.event_id);
    return number === null || number >= state.lastNumber;
  }

  async function runAction(action) {
    const debate = state.debate;
    try {
      if (action === "delete") {
        if (!window.confirm(`Delete "${debate.name}"?`)) return;
        await api("DELETE", `debates/${debate.id}`);
        sidebar.remove(debate.id);
        navigate(null);
        return;
      }
      const path = action.replace("_", "-");  // retry_step: POST .../retry-step
      const detail = await api("POST", `debates/${debate.id}/${path}`);
      if (isCurrent(detail)) applyState(detail);
    } catch (error) {
      showDebateError(error.message);
    }
  }

  // --- The transcript ---------------------------------------------------------------------

  function roundSection(round) {
    const found = $(`#rounds [data-round="${round}"]`);
    if (found) return found;
    const section = h("section", { class: "round", "data-round": round },
      h("h2", { class: "round-title" }), h("div", { class: "round-messages" }),
      h("div", { class: "round-summary" }));
    const later = $$("#rounds .round").find((other) => Number(other.dataset.round) > round);
    $("#rounds").insertBefore(section, later || null);
    return section;
  }

  function renderRounds() {
    const debate = state.debate;
    for (let round = 1; round <= (debate.current_round || 0); round++) roundSection(round);
    for (const section of $$("#rounds .round")) {
      const round = Number(section.dataset.round);
      const live = round === debate.current_round && debate.status === "running";
      section.classList.toggle("live", live);
      $(".round-title", section).textContent = `Round ${round} of ${debate.max_rounds}`
        + (round === 1 ? " · opening analyses" : " · rebuttals")
        + (live ? " · in progress" : "");
    }
    const empty = $("#transcript-empty");
    empty.hidden = $("#rounds").children.length > 0;
    empty.textContent = debate.status === "pending"
      ? "Start the debate to hear the opening analyses." : "No messages.";
  }

  /** Show a message in its round, in speaking order; an update replaces it in place. */
  function renderMessage(message) {
    const participant = participantById(message.participant);
    const decisions = message.decisions || [];
    const failed = message.status === "error";
    const skipped = message.status === "skipped";
    const human = participant.kind === HUMAN_SEAT;
    const old = $(`#rounds [data-message-id="${message.id}"]`);
    let positions = decisions.map((d) => h("span", { class: "position" },
      h("span", { class: "position-symbol", text: d.symbol }),
      badge(d.action),
      h("span", { class: "muted", text: conf(d.confidence) })));
    if (failed) positions = h("span", { class: "badge badge-failed", text: "FAILED" });
    if (skipped) positions = h("span", { class: "badge badge-skipped", text: "SKIPPED" });
    let usage = `${message.usage.prompt_tokens} + ${message.usage.completion_tokens} tokens`
      + (message.usage.estimated ? " (estimated)" : "")
      + ` · $${message.usage.cost_usd}`
      + ` · ${message.latency_ms} ms · parse ${message.parse_status}`;
    if (human) usage = skipped ? "Not written in time: skipped." : "Written by you.";
    const kinds = ["message", failed && "failed", skipped && "skipped", human && "human"];
    const el = h("article", {
      class: kinds.filter(Boolean).join(" "),
      "data-message-id": message.id,
      "data-speak-order": participant.speak_order,
      style: { "--color": participant.color },
    },
    h("details", { open: Boolean(old && $("details", old).open) },
      h("summary", {},
        avatar(participant),
        h("span", { class: "who" },
          h("strong", { text: participantName(participant) }),
          simulatedBadge(participant),
          h("span", { class: "muted", text: ` · ${message.message_type}` })),
        h("span", { class: "positions" }, positions)),
      h("div", { class: "message-body" },
        failed ? h("p", { class: "alert", text: message.error || "The turn failed." }) : null,
        skipped ? null : h("p", { class: "reasoning", text: message.reasoning || message.content }),
        decisions.length ? positionsTable(decisions) : null,
        h("p", { class: "muted small", text: usage }))));
    if (old) {
      old.replaceWith(el);
      return;
    }
    const list = $(".round-messages", roundSection(message.round));
    const after = [...list.children]
      .find((other) => Number(other.dataset.speakOrder) > participant.speak_order);
    list.insertBefore(el, after || null);
  }

  function positionsTable(decisions) {
    const titles = ["Coin", "Action", "Conf.", "Lev.", "Size", "SL", "TP"];
    // In a box of its own, which scrolls sideways if the table is still too wide (long
    // action badges on a narrow phone): the page never does.
    return h("div", { class: "positions-scroll" }, h("table", { class: "positions-table" },
      h("thead", {}, h("tr", {}, titles.map((text) => h("th", { text })),
        h("th", { class: "why", text: "Why" }))),
      h("tbody", {}, decisions.map((d) => h("tr", {},
        h("td", { text: d.symbol }),
        h("td", {}, badge(d.action)),
        h("td", { text: conf(d.confidence) }),
        h("td", { text: d.leverage ? `${d.leverage}×` : "–" }),
        h("td", { text: pct(d.position_pct) }),
        h("td", { text: pct(d.stop_loss) }),
        h("td", { text: pct(d.take_profit) }),
        h("td", { class: "why", text: d.reasoning || "" }))))));
  }

  function renderNotice(notice) {
    const who = notice.participant
      ? `${participantName(participantById(notice.participant))}: ` : "";
    $("#notices").append(h("p", {
      class: "alert", text: `${notice.step} failed · ${who}${notice.message} (${notice.code})`,
    }));
  }

  // --- The judge: a summary under each round but the last, the scores after the votes ---

  function renderJudge() {
    const judge = state.debate.judge;
    $("#judge").hidden = !judge;
    if (!judge) return;
    for (const summary of judge.summaries) renderSummary(summary);
    const count = judge.count === 3 ? "three scoring calls, median per item" : "one scoring call";
    $("#judge-meta").textContent = `${judge.ai_model_name}${judge.simulated ? " [simulated]" : ""}`
      + ` · ${count} · never votes`;
    if (!judge.scores.length) {
      const text = state.debate.status === "voting"
        ? "The judge scores the participants after the votes…"
        : "The judge scores the participants after the votes.";
      $("#judge-scores").replaceChildren(h("p", { class: "muted", text }));
      return;
    }
    const scores = [...judge.scores].sort((a, b) =>
      participantById(a.participant).speak_order - participantById(b.participant).speak_order);
    $("#judge-scores").replaceChildren(...scores.map(renderScore));
  }

  function renderSummary(summary) {
    const box = $(".round-summary", roundSection(summary.round));
    box.replaceChildren(h("div", {
      class: `judge-summary${summary.text ? "" : " missing"}`, "data-summary-round": summary.round,
    },
    h("strong", { text: `Judge's summary of round ${summary.round}` }),
    h("p", {
      class: "reasoning",
      text: summary.text || `No summary (${summary.missing}): the next round got every message.`,
    })));
  }

  function renderScore(score) {
    const participant = participantById(score.participant);
    const value = score.score === null ? "missing" : `${(score.score * 10).toFixed(1)}/10`;
    const agreement = score.agreement === null ? "" : ` · judges agree ${pct(score.agreement)}`;
    return h("div", { class: "judge-score", "data-score-participant": score.participant },
      h("div", { class: "voter-head" },
        avatar(participant),
        h("strong", { text: participantName(participant) }),
        h("span", { class: "judge-total", text: value }),
        h("span", { class: "muted small", text: agreement })),
      score.score === null
        ? h("p", { class: "muted small", text: score.missing })
        : h("ul", { class: "vote-list" }, Object.entries(RUBRIC)
          .filter(([name]) => name in score.items)
          .map(([name, label]) => h("li", { class: "vote", title: score.items[name].reason },
            h("span", { class: "position-symbol", text: label }),
            h("span", { text: `${score.items[name].value}` }),
            h("span", { class: "muted small", text: score.items[name].reason })))));
  }

  // --- The person's turn and vote --------------------------------------------------------

  function humanSeat() {
    return state.debate.participants.find((p) => p.kind === HUMAN_SEAT) || null;
  }

  /** Return what the debate waits for from the person: "turn:N", "vote", or "". */
  function owedAnswer() {
    const debate = state.debate;
    if (!humanSeat() || !debate.available_actions.includes("submit_turn")) return "";
    return debate.status === "voting" ? "vote" : `turn:${debate.current_round}`;
  }

  /** Show the form when the debate waits for the person; keep what they typed so far. */
  function renderHumanTurn() {
    const form = $("#human-turn");
    const owed = owedAnswer();
    form.hidden = !owed || owed === state.sent;
    if (!owed) state.sent = "";
    if (form.hidden || owed === state.owed) return;
    const debate = state.debate;
    if (!debate.symbols.length) {
      // The coins are chosen by the prepare step; status events do not carry them.
      refreshFromDetail();
      return;
    }
    state.owed = owed;
    const voting = owed === "vote";
    clearErrors(form);
    form.reset();
    $("#human-turn-title").textContent = voting
      ? "Your vote" : `Your turn · round ${debate.current_round} of ${debate.max_rounds}`;
    $("#human-turn-note").textContent = voting
      ? "Your final position on each coin; it weighs in the consensus like every other vote."
      : debate.current_round === 1
        ? "Write your opening analysis; the models write theirs at the same time."
        : "The others read your turn and answer it in the rounds that follow.";
    $("#h-reasoning").placeholder = voting ? "Why (optional)."
      : "What you read in the market, and your answer to the others.";
    $("#human-turn-submit").textContent = voting ? "Submit vote" : "Submit turn";
    $("#human-turn-skip").hidden = !debate.available_actions.includes("skip_turn");
    $("#human-turn-coins").replaceChildren(...debate.symbols.map(humanCoinRow));
  }

  function humanCoinRow(symbol, index) {
    const where = `decisions[${index}]`;
    const actions = Object.entries(ACTION_LABELS).map(([value, text]) => h("option", {
      value, text, selected: value === "wait",
    }));
    return h("div", { class: "human-coin", "data-symbol": symbol },
      h("label", { for: `h-action-${index}`, class: "position-symbol", text: symbol }),
      h("select", { id: `h-action-${index}`, "data-name": "action", "aria-label": `${symbol} action` },
        actions),
      h("input", {
        id: `h-confidence-${index}`, "data-name": "confidence", type: "number", min: 0, max: 100,
        value: 50, "aria-label": `${symbol} confidence`, title: "Confidence, 0 to 100",
      }),
      h("p", { class: "field-error", "data-error-for": `${where}.symbol` }),
      h("p", { class: "field-error", "data-error-for": `${where}.action` }),
      h("p", { class: "field-error", "data-error-for": `${where}.confidence` }));
  }

  function humanPayload() {
    return {
      reasoning: $("#h-reasoning").value,
      decisions: $$("#human-turn-coins .human-coin").map((row) => ({
        symbol: row.dataset.symbol,
        action: $("[data-name=action]", row).value,
        confidence: numberValue($("[data-name=confidence]", row)),
      })),
    };
  }

  async function submitHumanTurn(event) {
    event.preventDefault();
    const form = $("#human-turn");
    const debate = state.debate;
    const owed = state.owed;
    clearErrors(form);
    $("#human-turn-submit").disabled = true;
    try {
      const path = owed === "vote" ? "votes" : "turns";
      const answer = await api("POST", `debates/${debate.id}/${path}`, humanPayload());
      if (state.debate !== debate) return;
      if (owed === "vote") {
        for (const vote of answer) state.votes.set(vote.id, vote);
        renderVotes();
      } else {
        state.messages.set(answer.id, answer);
        renderMessage(answer);
      }
      state.sent = owed;
      renderHumanTurn();
    } catch (error) {
      showErrors(form, error, $("#human-turn-errors"));
    } finally {
      $("#human-turn-submit").disabled = false;
    }
  }

  async function skipHumanTurn() {
    const debate = state.debate;
    try {
      const detail = await api("POST", `debates/${debate.id}/skip-turn`);
      if (isCurrent(detail)) setDebate(detail);
    } catch (error) {
      showErrors($("#human-turn"), error, $("#human-turn-errors"));
    }
  }

  // --- Votes and consensus ----------------------------------------------------------------

  function renderVotes() {
    const byVoter = new Map();
    for (const vote of state.votes.values()) {
      if (!byVoter.has(vote.participant)) byVoter.set(vote.participant, []);
      byVoter.get(vote.participant).push(vote);
    }
    if (!byVoter.size) {
      const text = state.debate.status === "voting"
        ? "The participants are voting…" : "Votes appear after the last round.";
      $("#votes").replaceChildren(h("p", { class: "muted", text }));
      return;
    }
    const voters = [...byVoter.keys()].map(participantById)
      .sort((a, b) => a.speak_order - b.speak_order);
    $("#votes").replaceChildren(...voters.map((voter) => h("div", { class: "voter" },
      h("div", { class: "voter-head" },
        avatar(voter), h("strong", { text: participantName(voter) })),
      h("ul", { class: "vote-list" }, byVoter.get(voter.id)
        .sort((a, b) => a.symbol.localeCompare(b.symbol))
        .map(renderVote)))));
  }

  function renderVote(vote) {
    return h("li", {
      class: "vote", "data-vote-id": vote.id, title: vote.reasoning || vote.abstain_reason || "",
    },
    h("span", { class: "position-symbol", text: vote.symbol }),
    badge(vote.abstained ? null : vote.action),
    h("span", {
      class: "muted", text: vote.abstained ? vote.abstain_reason : conf(vote.confidence),
    }));
  }

  // The trader's account as the debate's votes saw it: null for a debate without a
  // trader, or before its prepare step read it.
  function renderBook() {
    const book = state.debate.book;
    $("#book").hidden = !book;
    if (!book) return;
    const usdt = (value) => (missing(value) ? "unknown" : `${Number(value).toFixed(2)} USDT`);
    $("#book-paused").hidden = !book.paused;
    $("#book-paused").textContent = book.paused
      ? `Paused ${book.paused_until ? `until ${book.paused_until}` : "until you resume it"}: ` +
        `${book.paused}. No new position opens; closes still do.`
      : "";
    $("#book-account").textContent = `As of ${book.as_of}: equity ${usdt(book.equity)}, ` +
      `available ${usdt(book.available)}, margin in use ${usdt(book.margin_in_use)}, ` +
      `realised today ${usdt(book.realized_pnl_today)}`;
    $("#book-positions").replaceChildren(...(book.positions.length
      ? book.positions.map((p) => h("li", { class: "book-position", text: positionText(p) }))
      : [h("li", { class: "muted", text: "Nothing held." })]));
    const left = book.positions_left === null ? "unknown" : book.positions_left;
    $("#book-headroom").textContent = `${left} more position(s) may open; the largest ` +
      `allowed is ${usdt(book.max_position_value)}.`;
    $("#book-closed").replaceChildren(...book.closed.map((t) => h("li", {
      text: `Closed ${t.side} ${t.symbol} ${num(t.entry_price)} → ${num(t.exit_price)}: ` +
        `${Number(t.pnl).toFixed(2)} USDT (${t.reason})`,
    })));
  }

  function positionText(p) {
    let text = `${p.side} ${p.symbol} ${num(p.quantity)} @ ${num(p.entry_price)}, mark ` +
      `${num(p.mark_price)}, unrealised ${Number(p.unrealized_pnl).toFixed(2)} USDT`;
    if (p.stop_loss) text += ` · SL ${num(p.stop_loss)}`;
    if (p.take_profit) text += ` · TP ${num(p.take_profit)}`;
    if (p.opened_by_debate) text += ` · opened by debate #${p.opened_by_debate}`;
    return text;
  }

  function renderConsensus() {
    const debate = state.debate;
    const decisions = [...(debate.decisions || [])]
      .sort((a, b) => (b.is_primary - a.is_primary) || a.symbol.localeCompare(b.symbol));
    $("#consensus").hidden = decisions.length === 0;
    $("#decisions").replaceChildren(...decisions.map(renderDecision));

    const open = decisions.filter((d) => EXECUTABLE.includes(d.action) && !d.execution);
    $("#execute-form").hidden = !(debate.available_actions.includes("execute") && open.length);
    const coins = open.map((d) => [d.symbol, `${d.symbol} · ${ACTION_LABELS[d.action]}`]);
    fillSelect($("#x-symbol"), coins);
  }

  function renderDecision(d) {
    const sizing = `${d.leverage}× · size ${pct(d.position_pct)}`
      + ` · SL ${pct(d.stop_loss)} · TP ${pct(d.take_profit)}`;
    const primary = d.is_primary ? " is-primary" : "";
    return h("div", { class: `decision${primary}`, "data-symbol": d.symbol },
      h("div", { class: "decision-head" },
        h("strong", { text: d.symbol }),
        d.is_primary ? h("span", { class: "muted", text: " ★ primary" }) : null),
      h("div", {},
        badge(d.action),
        h("span", { class: "decision-confidence", text: ` ${conf(d.confidence)}` })),
      EXECUTABLE.includes(d.action) ? h("p", { class: "muted small", text: sizing }) : null,
      d.reason ? h("p", { class: "muted small", text: d.reason }) : null,
      d.execution ? renderExecution(d.execution) : null,
      d.is_primary && !d.execution ? renderAutoRefusal() : null);
  }

  // The reason a refused automatic execution gave, from the plan's execution step (the
  // stream's `error` event says it once; the step keeps it for a reload).
  function renderAutoRefusal() {
    const step = (state.debate.steps || []).find((s) => s.kind === "execution");
    if (!step || step.status !== "failed" || !step.outcome || !step.outcome.message) return null;
    const text = `Automatic execution refused: ${step.outcome.message}`;
    return h("p", { class: "execution execution-failed", text });
  }

  function renderExecution(execution) {
    const trader = state.traders.find((t) => t.id === execution.trader);
    const where = trader ? trader.name : `trader ${execution.trader}`;
    let text = `Execution #${execution.id} on ${where}: ${execution.status}`;
    if (execution.status === "filled") {
      const at = (value) => price(execution.symbol, value);
      text += ` · ${num(execution.filled_quantity)} @ ${at(execution.average_price)}`;
      if (execution.stop_loss_price) text += ` · SL ${at(execution.stop_loss_price)}`;
      if (execution.take_profit_price) text += ` · TP ${at(execution.take_profit_price)}`;
    }
    if (execution.note) text += ` · ${execution.note}`;
    if (execution.error) text += ` · ${execution.error}`;
    if (execution.status === "awaiting_approval") {
      text += ` until ${execution.approval_deadline}`;
      return h("div", { class: "execution execution-awaiting_approval" },
        h("p", { text }),
        approvalButton(execution, "approve", "Approve", "primary"),
        approvalButton(execution, "reject", "Reject", "secondary"));
    }
    return h("p", { class: `execution execution-${execution.status}`, text });
  }

  // Approve or reject an automatic execution that waits for the owner (a real-money
  // trader's); the answer, or the refusal of a lapsed one, replaces it.
  function approvalButton(execution, verb, label, kind) {
    const button = h("button", { type: "button", class: `${kind} execution-${verb}`, text: label });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        applyExecution(await api("POST", `executions/${execution.id}/${verb}`));
      } catch (error) {
        showDebateError(error.message);
        button.disabled = false;
      }
    });
    return button;
  }

  function applyExecution(execution) {
    const decision = (state.debate.decisions || []).find((d) => d.id === execution.decision);
    if (!decision) return;
    decision.execution = execution;
    renderConsensus();
  }

  async function submitExecute(event) {
    event.preventDefault();
    const form = $("#execute-form");
    clearErrors(form);
    const payload = { trader: Number($("#x-trader").value) || null };
    if ($("#x-symbol").value) payload.symbol = $("#x-symbol").value;
    $("#execute-submit").disabled = true;
    try {
      applyExecution(await api("POST", `debates/${state.debate.id}/execute`, payload));
    } catch (error) {
      showErrors(form, error, $("#execute-error"));
    } finally {
      $("#execute-submit").disabled = false;
    }
  }

  // --- The live stream --------------------------------------------------------------------

  /** Follow a debate's stream: from its start (`initial`), or after ``lastEventId``. */
  function openStream(debateId, lastEventId, failures) {
    closeStream();
    state.lastEventId = lastEventId;
    state.lastNumber = lastEventId ? eventNumber(lastEventId) : -1;
    const query = lastEventId ? `?lastEventId=${encodeURIComponent(lastEventId)}` : "";
    const current = {
      source: new EventSource(`/api/debates/${debateId}/stream${query}`),
      debateId,
      failures: failures || 0,
      retryTimer: null,
    };
    stream = current;
    setStreamState("connecting");
    current.source.addEventListener("open", () => {
      current.failures = 0;
      setStreamState("live");
    });
    for (const type of EVENT_TYPES) {
      current.source.addEventListener(type, (event) => {
        // `error` is also the EventSource's own connection error, which has no data.
        if (type === "error" && event.data === undefined) onConnectionError(current);
        else onEvent(current, type, event);
      });
    }
  }

  function closeStream() {
    if (!stream) return;
    clearTimeout(stream.retryTimer);
    stream.source.close();
    stream = null;
    setStreamState("idle");
  }

  function onConnectionError(current) {
    if (stream !== current) return;
    setStreamState("reconnecting");
    // CONNECTING: the browser retries by itself, sending Last-Event-ID. CLOSED: it gave
    // up (an error answer); try again after a growing pause, after the last event seen.
    if (current.source.readyState !== EventSource.CLOSED) return;
    const delay = Math.min(1000 * 2 ** current.failures, 15000);
    current.retryTimer = setTimeout(() => {
      if (stream === current) openStream(current.debateId, state.lastEventId, current.failures + 1);
    }, delay);
  }

  function setStreamState(name) {
    $("#stream-state").dataset.state = name;
    $("#stream-state").textContent = STREAM_STATES[name];
  }

  /** Return the number of an event id such as ``debate-7:12``. */
  function eventNumber(id) {
    const match = /:(\d+)$/.exec(id || "");
    return match ? Number(match[1]) : null;
  }

  /** Read again from the debate's detail what its events do not carry: the coins the
   * prepare step chose, and the tokens and cost so far (read as each round ends and
   * when the debate stops). Only the answer to the latest read is applied. */
  async function refreshFromDetail() {
    const debate = state.debate;
    const read = ++state.detailReads;
    const detail = await api("GET", `debates/${debate.id}`).catch(() => null);
    if (!detail || state.debate !== debate || read !== state.detailReads) return;
    for (const key of ["symbol", "symbols", "market_snapshot", "book", "tokens", "cost_usd", "spend"]) {
      debate[key] = detail[key];
    }
    renderHeader();
    renderBook();
    if (debate.symbols.length) renderHumanTurn();
  }

  function onEvent(current, type, event) {
    if (stream !== current || !state.debate || state.debate.id !== current.debateId) return;
    const number = eventNumber(event.lastEventId);
    if (type !== "initial" && number !== null && number <= state.lastNumber) return;
    if (number !== null) {
      state.lastNumber = number;
      state.lastEventId = event.lastEventId;
    }
    HANDLERS[type](JSON.parse(event.data));
  }

  const HANDLERS = {
    initial: setDebate,
    status: (fields) => {
      applyState(fields);
      // Status events carry neither the coins the prepare step chose nor the spend: read
      // the coins until they are known, and the spend once the debate stops.
      const coinsUnread = !state.debate.symbols.length && fields.status !== "pending";
      if (coinsUnread || FINAL_STATUSES.has(fields.status)) refreshFromDetail();
    },
    round_start: ({ round }) => {
      roundSection(round);
      renderRounds();
    },
    round_end: () => {
      renderRounds();
      refreshFromDetail();
    },
    message: (message) => {
      state.messages.set(message.id, message);
      renderMessage(message);
      renderRounds();
    },
    vote: (vote) => {
      state.votes.set(vote.id, vote);
      renderVotes();
    },
    consensus: ({ decisions }) => {
      const executions = new Map((state.debate.decisions || []).map((d) => [d.id, d.execution]));
      state.debate.decisions = decisions
        .map((d) => ({ ...d, execution: d.execution || executions.get(d.id) || null }));
      renderConsensus();
    },
    execution: applyExecution,
    error: renderNotice,
    judge_call: ({ summary }) => {
      const judge = state.debate.judge;
      if (!summary || !judge) return;
      judge.summaries = [...judge.summaries.filter((s) => s.round !== summary.round), summary];
      renderSummary(summary);
    },
    judge_scores: ({ scores }) => {
      if (!state.debate.judge) return;
      state.debate.judge.scores = scores;
      renderJudge();
    },
  };

  // --- The create form --------------------------------------------------------------------

  async function openCreate() {
    const form = $("#create-form");
    closeDebate();
    show("create");
    clearErrors(form);
    // Focused now, not once the lists below have loaded: a person may be typing by then,
    // and moving the focus would send their next keys to the name.
    $("#f-name").focus();
    [state.strategies, state.models] = await Promise.all([
      apiList("strategies"), apiList("ai-models"), loadTraders(), loadPersonalities(),
    ]);
    fillSelect($("#f-strategy"), state.strategies.map((s) => [s.id, s.name]));
    updateSymbolSuggestions();
    const rows = $$("#participant-rows .participant-row");
    for (const row of rows) {
      const select = $("[data-name=ai_model]", row);
      fillModelSelect(select);
      syncCheck(select);
    }
    if (!rows.length) {
      const usable = state.models.filter((m) => m.enabled);
      DEFAULT_SEATS.forEach((personality, index) => {
        addParticipantRow(usable[index % usable.length], personality);
      });
    }
  }

  function fillModelSelect(select) {
    fillSelect(select, [...state.models.map((m) => {
      const provider = m.simulated ? "simulated" : m.provider_name || m.provider;
      return [m.id, `${m.name} (${provider})${m.enabled ? "" : " · disabled"}`];
    }), [HUMAN_SEAT, "🧑 You (a human seat)"]]);
  }

  function updateSymbolSuggestions() {
    const strategy = state.strategies.find((s) => String(s.id) === $("#f-strategy").value);
    const coins = (strategy && strategy.static_coins) || [];
    $("#symbol-suggestions").replaceChildren(...coins.map((value) => h("option", { value })));
  }

  function addParticipantRow(model, personality) {
    const rows = $("#participant-rows");
    const row = $("#participant-row").content.firstElementChild.cloneNode(true);
    const modelSelect = $("[data-name=ai_model]", row);
    const personalitySelect = $("[data-name=personality]", row);
    const personalities = Object.values(state.personalities);
    fillModelSelect(modelSelect);
    fillSelect(personalitySelect, personalities.map((p) => [p.id, `${p.emoji} ${p.name}`]));
    if (model) modelSelect.value = model.id;
    wireCheck(modelSelect);
    personalitySelect.value = personality
      || personalities[rows.children.length % personalities.length].id;
    $(".remove-participant", row).addEventListener("click", () => {
      row.remove();
      indexParticipantRows();
    });
    rows.append(row);
    indexParticipantRows();
  }

  /** Point each row's labels and error slots at its index: participants[1].ai_model, ... */
  function indexParticipantRows() {
    const rows = $$("#participant-rows .participant-row");
    rows.forEach((row, index) => {
      for (const slot of $$("[data-error-slot]", row)) {
        const name = slot.dataset.errorSlot;
        slot.dataset.errorFor = `participants[${index}]${name ? "." + name : ""}`;
      }
      for (const select of $$("select", row)) {
        select.id = `f-participant-${index}-${select.dataset.name}`;
        $("label", select.closest(".field")).htmlFor = select.id;
      }
    });
    $("#add-participant").disabled = rows.length >= MAX_SEATS;
  }

  /** Return a number input's value: a number, or the text as typed (the API says why). */
  function numberValue(input) {
    const text = input.value.trim();
    if (text === "") return undefined;
    return /^-?\d+$/.test(text) ? Number(text) : text;
  }

  /** Return the name of a debate left unnamed: its coin (else its strategy's name), its
   * rounds and its market instant (else now), in UTC: "BTC, 3 rounds, 2024-09-05 00:00 UTC". */
  function defaultName(payload) {
    const strategy = state.strategies.find((s) => s.id === payload.strategy);
    const coin = payload.symbol.toUpperCase() || (strategy ? strategy.name : "Debate");
    const rounds = payload.max_rounds === undefined ? 3 : payload.max_rounds;
    const instant = (payload.as_of || new Date().toISOString()).replace("T", " ").slice(0, 16);
    return `${coin}, ${rounds} rounds, ${instant} UTC`;
  }

  function createPayload() {
    const payload = {
      name: $("#f-name").value.trim(),
      strategy: Number($("#f-strategy").value) || null,
      symbol: $("#f-symbol").value.trim(),
      max_rounds: numberValue($("#f-rounds")),
      prompt_variant: $("#f-variant").value,
      pace: $("#f-pace").value,
      auto_execute: $("#f-auto").checked,
      participants: $$("#participant-rows .participant-row").map((row) => {
        const seat = $("[data-name=ai_model]", row).value;
        const personality = $("[data-name=personality]", row).value;
        if (seat === HUMAN_SEAT) return { kind: HUMAN_SEAT, personality };
        return { ai_model: Number(seat) || null, personality };
      }),
    };
    if (payload.max_rounds === undefined) delete payload.max_rounds;
    // The form's instant is UTC, as the API's (datetime-local gives "2024-08-05T12:00").
    const asOf = $("#f-as-of").value;
    if (asOf) payload.as_of = `${asOf}Z`;
    if (payload.auto_execute) payload.trader = Number($("#f-trader").value) || null;
    if (!payload.name) payload.name = defaultName(payload);
    return payload;
  }

  /** Create the debate; with "Create and start", start it too, and show it (a refused
   * start under its header: the debate is made, pending). */
  async function submitCreate(event) {
    event.preventDefault();
    const form = $("#create-form");
    const buttons = [$("#create-start"), $("#create-submit")];
    const andStart = event.submitter === $("#create-start");
    clearErrors(form);
    for (const button of buttons) button.disabled = true;
    try {
      const detail = await api("POST", "debates", createPayload());
      form.reset();
      $("#participant-rows").replaceChildren();
      $("#f-trader").disabled = true;
      sidebar.update(detail);
      const refusal = andStart
        ? await api("POST", `debates/${detail.id}/start`).then(() => null, (error) => error.message)
        : null;
      navigate(detail.id, refusal);
    } catch (error) {
      showErrors(form, error, $("#create-errors"));
    } finally {
      for (const button of buttons) button.disabled = false;
    }
  }

  function clearErrors(form) {
    for (const slot of $$("[data-error-for]", form)) slot.textContent = "";
    for (const field of $$("[aria-invalid]", form)) field.removeAttribute("aria-invalid");
    const summary = $(".form-errors", form);
    if (summary) summary.hidden = true;
  }

  /** Show each of the API's field errors next to its field, the rest in ``summary``. */
  function showErrors(form, error, summary) {
    const lines = [error.message];
    for (const [name, messages] of Object.entries(error.fields)) {
      const slot = $$("[data-error-for]", form).find((s) => s.dataset.errorFor === name);
      if (!slot) {
        lines.push(`${name}: ${messages.join(" ")}`);
        continue;
      }
      slot.textContent = messages.join(" ");
      const named = slot.dataset.errorFor.split(".").pop();
      const field = $(`[data-name="${named}"]`, slot.parentElement)
        || $("input, select, textarea", slot.parentElement);
      if (field) field.setAttribute("aria-invalid", "true");
    }
    summary.replaceChildren(...lines.map((text) => h("p", { text })));
    summary.hidden = false;
  }

  // --- Connection checks ------------------------------------------------------------------

  /** Return the Check button beside ``select`` and the line under them for its answer. */
  function checkParts(select) {
    const box = select.closest(".with-check");
    return { button: $(".check-button", box), result: box.nextElementSibling };
  }

  /** Return the id ``select`` has chosen, or "" (nothing, or the human seat). */
  function chosenId(select) {
    return /^\d+$/.test(select.value) ? select.value : "";
  }

  /** Show ``text`` in a check's line: its ``outcome`` ("checking", "ok", "failed" or ""
   * for nothing) styles it, ``id`` names the choice it is about. */
  function showCheck(result, outcome, text, id) {
    result.dataset.outcome = outcome;
    result.dataset.for = id;
    result.textContent = text;
  }

  /** Enable the Check button when there is a choice to check and no check of it runs;
   * drop the line of an earlier choice. Called on each change of the choice, the
   * page's own (a list filled again) included. */
  function syncCheck(select) {
    const { button, result } = checkParts(select);
    const id = chosenId(select);
    if (result.dataset.for !== id) showCheck(result, "", "", id);
    button.disabled = !id || result.dataset.outcome === "checking";
  }

  /** Check the chosen AI model or trader (the button's ``data-check``: "ai-models" or
   * "traders") and show the answer's one line; a refused request shows its own. */
  async function runCheck(select) {
    const { button, result } = checkParts(select);
    const id = chosenId(select);
    showCheck(result, "checking", "Checking…", id);
    button.disabled = true;
    let answer;
    try {
      answer = await api("POST", `${button.dataset.check}/${id}/check`);
    } catch (error) {
      answer = { ok: false, message: error.message };
    }
    if (result.dataset.for !== id) return;  // another choice since: its line stays empty
    showCheck(result, answer.ok ? "ok" : "failed", answer.message, id);
    syncCheck(select);
  }

  /** Make the Check button beside ``select`` check its choice, as the choice changes. */
  function wireCheck(select) {
    select.addEventListener("change", () => syncCheck(select));
    checkParts(select).button.addEventListener("click", () => runCheck(select));
    syncCheck(select);
  }

  // --- Start ------------------------------------------------------------------------------

  async function start() {
    $("#new-debate").addEventListener("click", () => {
      if (window.location.pathname !== "/") window.history.pushState({}, "", "/");
      openCreate();
    });
    $("#create-cancel").addEventListener("click", () => navigate(null));
    $("#create-form").addEventListener("submit", submitCreate);
    $("#f-strategy").addEventListener("change", updateSymbolSuggestions);
    $("#f-auto").addEventListener("change", () => {
      $("#f-trader").disabled = !$("#f-auto").checked;
    });
    $("#add-participant").addEventListener("click", () => {
      addParticipantRow(state.models.find((m) => m.enabled), null);
    });
    $("#execute-form").addEventListener("submit", submitExecute);
    wireCheck($("#x-trader"));
    wireCheck($("#f-trader"));
    $("#human-turn").addEventListener("submit", submitHumanTurn);
    $("#human-turn-skip").addEventListener("click", skipHumanTurn);
    window.addEventListener("popstate", () => {
      const match = /^\/debates\/(\d+)\/$/.exec(window.location.pathname);
      navigate(match ? Number(match[1]) : null);
    });

    await loadPersonalities();
    await sidebar.load();
    if (config.debateId) openDebate(config.debateId);
    renderMonitorWarnings(await api("GET", "evaluations/monitors"));
  }

  // The monitors' warnings over the user's last debates: a model stuck on hold and
  // wait, one that never opens, or answers that do not parse.
  function renderMonitorWarnings(monitors) {
    const warnings = (monitors && monitors.warnings) || [];
    $("#monitor-warning-list").replaceChildren(...warnings.map((text) => h("li", { text })));
    $("#monitor-warnings").hidden = !warnings.length;
  }

  start();
})();
