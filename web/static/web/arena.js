/* The arena page.
 *
 * Data and actions: the REST API under /api/, with the session cookie and the CSRF token.
 * Live updates: the open debate's Server-Sent-Events stream (/api/debates/{id}/stream).
 * The `initial` event carries the whole debate; every later event is applied once, in id
 * order: an event whose id is not after the last one applied is dropped, and messages,
 * votes and executions are stored by their own ids, so a replay never duplicates them.
 * After a dropped connection the browser reconnects by itself with Last-Event-ID; when it
 * gives up (an error answer, a restarted server), the page reconnects with ?lastEventId=.
 */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("arena-config").textContent);
  const csrfToken = document.querySelector("[name=csrfmiddlewaretoken]").value;
  const $ = (selector, root) => (root || document).querySelector(selector);

  const EVENT_TYPES = ["initial", "status", "round_start", "round_end", "message", "vote",
    "consensus", "execution", "error"];
  const EXECUTABLE = ["open_long", "open_short", "close_long", "close_short"];
  const ACTION_LABELS = {
    open_long: "LONG", open_short: "SHORT", close_long: "CLOSE LONG",
    close_short: "CLOSE SHORT", hold: "HOLD", wait: "WAIT",
  };
  const ACTION_BUTTONS = { start: "Start", cancel: "Cancel", retry: "Retry", delete: "Delete" };
  const DEFAULT_SEATS = ["bull", "bear", "analyst"];

  const state = {
    debates: [],          // the sidebar: the list representation, newest first
    debate: null,         // the open debate: its detail representation
    messages: new Map(),  // id -> message of the open debate
    votes: new Map(),     // id -> vote of the open debate
    notices: [],          // `error` events of the open debate
    personalities: {},    // id -> {name, emoji, color, description}
    traders: [],
    lastSeq: -1,          // number of the last stream event applied
    lastEventId: "",
  };
  let stream = null;      // {source, debateId, retryTimer}

  // --- Small helpers ----------------------------------------------------------------------

  /** Build an element: h("p", {class: "x", text: "hi"}, child, [children], null). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") el.textContent = value;
      else if (key === "style") el.style.cssText = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) {
        el.append(child instanceof Node ? child : String(child));
      }
    }
    return el;
  }

  const pct = (fraction) => (fraction === null || fraction === undefined ? "–"
    : `${(Number(fraction) * 100).toFixed(1).replace(/\.0$/, "")}%`);
  const num = (value) => (value === null || value === undefined ? "–" : String(Number(value)));
  const conf = (value) => (value === null || value === undefined ? "–" : `${Math.round(value)}%`);

  function badge(action) {
    if (!action) return h("span", { class: "badge badge-none", text: "ABSTAIN" });
    const kind = action.replace(/^(open|close)_/, "$1-");
    return h("span", { class: `badge badge-${kind}`, text: ACTION_LABELS[action] || action });
  }

  function avatar(participant, extraClass) {
    return h("span", {
      class: `avatar ${extraClass || ""}`,
      style: `--color: ${participant.color}`,
      title: participantName(participant),
      text: participant.emoji,
    });
  }

  function participantName(participant) {
    const personality = state.personalities[participant.personality];
    const role = personality ? personality.name : participant.personality;
    return `${role} · ${participant.ai_model_name}`;
  }

  function participantById(id) {
    return (state.debate.participants || []).find((p) => p.id === id) ||
      { id, personality: "?", emoji: "?", color: "#9CA3AF", ai_model_name: "unknown", speak_order: 99 };
  }

  // --- The REST API -----------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `The server answered ${status}.`);
      this.status = status;
      this.code = body && body.code;
      this.fields = (body && body.fields) || {};
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") headers["X-CSRFToken"] = csrfToken;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`/api/${path}`, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401) {
      window.location.assign(`/login/?next=${encodeURIComponent(window.location.pathname)}`);
      throw new ApiError(401, null);
    }
    const data = response.status === 204 ? null : await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  /** Return every item of a paginated list (a few pages at most here). */
  async function apiList(path) {
    let page = await api("GET", path);
    const items = [...page.results];
    while (page.next) {
      page = await api("GET", page.next.slice(page.next.indexOf("/api/") + 5));
      items.push(...page.results);
    }
    return items;
  }

  // --- Views: welcome, create, debate -----------------------------------------------------

  function show(name) {
    for (const id of ["welcome", "create", "debate"]) $(`#${id}`).hidden = id !== name;
    closeSidebar();
  }

  function closeSidebar() {
    document.body.classList.remove("sidebar-open");
    $("#menu-toggle").setAttribute("aria-expanded", "false");
    $("#backdrop").hidden = true;
  }

  function toggleSidebar() {
    const open = document.body.classList.toggle("sidebar-open");
    $("#menu-toggle").setAttribute("aria-expanded", String(open));
    $("#backdrop").hidden = !open;
  }

  function navigate(debateId) {
    const path = debateId ? `/debates/${debateId}/` : "/";
    if (window.location.pathname !== path) window.history.pushState({ debateId }, "", path);
    if (debateId) openDebate(debateId);
    else { closeStream(); state.debate = null; renderSidebar(); show("welcome"); }
  }

  // --- The sidebar ------------------------------------------------------------------------

  async function loadDebates() {
    state.debates = (await api("GET", "debates")).results;
    renderSidebar();
  }

  function renderSidebar() {
    const list = $("#debate-list");
    const openId = state.debate && state.debate.id;
    list.replaceChildren(...state.debates.map((debate) => h("li", {},
      h("a", {
        class: `debate-link${debate.id === openId ? " active" : ""}`,
        href: `/debates/${debate.id}/`,
        "data-debate-id": debate.id,
        onclick: (event) => { event.preventDefault(); navigate(debate.id); },
      },
      h("span", { class: `status-dot status-${debate.status}`, title: debate.status }),
      h("span", { class: "debate-link-name", text: debate.name }),
      h("span", { class: "debate-link-meta muted", text: `${debate.symbol || "auto"} · ${debate.status}` })))));
    $("#debate-list-empty").hidden = state.debates.length > 0;
  }

  function updateSidebarItem(debate) {
    const item = state.debates.find((d) => d.id === debate.id);
    if (item) Object.assign(item, { status: debate.status, name: debate.name, symbol: debate.symbol });
    else state.debates.unshift(debate);
    renderSidebar();
  }

  // --- The open debate --------------------------------------------------------------------

  async function openDebate(debateId) {
    closeStream();
    let detail;
    try {
      detail = await api("GET", `debates/${debateId}`);
    } catch (error) {
      state.debate = null;
      show("welcome");
      $("#welcome").replaceChildren(h("h1", { text: "Debate not found" }),
        h("p", { class: "muted", text: error.message }));
      return;
    }
    setDebate(detail);
    show("debate");
    loadTraders();
    // No lastEventId: the stream's `initial` event is taken after its id, so nothing
    // published while this page loaded can fall between the detail and the events.
    openStream(debateId, "");
  }

  function setDebate(detail) {
    state.debate = detail;
    state.messages = new Map(detail.messages.map((m) => [m.id, m]));
    state.votes = new Map(detail.votes.map((v) => [v.id, v]));
    state.notices = [];
    $("#transcript").replaceChildren();
    renderAll();
  }

  function renderAll() {
    renderHeader();
    for (const message of state.messages.values()) renderMessage(message);
    renderRounds();
    renderVotes();
    renderConsensus();
    updateSidebarItem(state.debate);
  }

  function renderHeader() {
    const debate = state.debate;
    $("#debate-name").textContent = debate.name;
    const status = $("#debate-status");
    status.className = `status-badge status-${debate.status}`;
    status.textContent = debate.status;
    const round = debate.current_round ? `round ${debate.current_round}/${debate.max_rounds}` : `${debate.max_rounds} rounds`;
    const strategy = debate.strategy ? debate.strategy.name : "no strategy";
    $("#debate-meta").textContent = `${strategy} · ${debate.phase} · ${round} · ${debate.prompt_variant}`;
    $("#debate-coins").replaceChildren(...(debate.symbols.length ? debate.symbols : [debate.symbol || "coins chosen at start"])
      .map((symbol) => h("span", { class: `coin${symbol === debate.symbol ? " is-primary" : ""}`, text: symbol })));
    $("#debate-participants").replaceChildren(...debate.participants.map((p) => h("span", { class: "participant" },
      avatar(p, p.id === debate.current_speaker ? "speaking" : ""),
      h("span", { class: "participant-name", text: participantName(p) }))));
    $("#debate-actions").replaceChildren(...debate.available_actions
      .filter((action) => ACTION_BUTTONS[action])
      .map((action) => h("button", {
        type: "button",
        class: action === "start" || action === "retry" ? "primary" : "secondary",
        "data-action": action,
        text: ACTION_BUTTONS[action],
        onclick: () => runAction(action),
      })));
    const error = $("#debate-error");
    error.hidden = !debate.error;
    error.textContent = debate.error || "";
  }

  async function runAction(action) {
    const debate = state.debate;
    if (action === "delete" && !window.confirm(`Delete "${debate.name}"?`)) return;
    try {
      if (action === "delete") {
        await api("DELETE", `debates/${debate.id}`);
        state.debates = state.debates.filter((d) => d.id !== debate.id);
        navigate(null);
        return;
      }
      const detail = await api("POST", `debates/${debate.id}/${action}`);
      if (state.debate && state.debate.id === detail.id) {
        applyState(detail);
      }
    } catch (error) {
      const box = $("#debate-error");
      box.hidden = false;
      box.textContent = error.message;
    }
  }

  /** Apply the state fields of a `status` event (or of an action's answer). */
  function applyState(fields) {
    const debate = state.debate;
    for (const key of ["status", "phase", "current_round", "current_speaker", "available_actions",
      "symbol", "symbols", "started_at", "finished_at"]) {
      if (key in fields) debate[key] = fields[key];
    }
    debate.error = fields.error || "";
    renderHeader();
    renderRounds();
    renderConsensus();
    updateSidebarItem(debate);
  }

  // --- The transcript ---------------------------------------------------------------------

  function roundSection(round) {
    let section = $(`#transcript [data-round="${round}"]`);
    if (section) return section;
    section = h("section", { class: "round", "data-round": round },
      h("h2", { class: "round-title" }), h("div", { class: "round-messages" }));
    const later = [...$("#transcript").querySelectorAll(".round")]
      .find((other) => Number(other.dataset.round) > round);
    $("#transcript").insertBefore(section, later || $("#transcript .notices"));
    return section;
  }

  function renderRounds() {
    const debate = state.debate;
    for (let round = 1; round <= Math.max(debate.current_round || 0, 0); round++) roundSection(round);
    for (const section of $("#transcript").querySelectorAll(".round")) {
      const round = Number(section.dataset.round);
      const live = round === debate.current_round && debate.status === "running";
      section.classList.toggle("live", live);
      $(".round-title", section).textContent =
        `Round ${round} of ${debate.max_rounds}${round === 1 ? " · opening analyses" : " · rebuttals"}${live ? " · in progress" : ""}`;
    }
    if (!$("#transcript").children.length) {
      $("#transcript").append(h("p", { class: "muted empty-transcript",
        text: debate.status === "pending" ? "Start the debate to hear the first analyses." : "No messages yet." }));
    } else if (state.messages.size || $("#transcript .round")) {
      const empty = $("#transcript .empty-transcript");
      if (empty) empty.remove();
    }
  }

  function renderMessage(message) {
    const participant = participantById(message.participant);
    const decisions = message.decisions || [];
    const failed = message.status === "error";
    const old = $(`#transcript [data-message-id="${message.id}"]`);
    const details = h("details", { open: old ? $("details", old).open : false },
      h("summary", {},
        avatar(participant),
        h("span", { class: "who" },
          h("strong", { text: participantName(participant) }),
          h("span", { class: "muted", text: ` · ${message.message_type}` })),
        h("span", { class: "positions" }, failed
          ? h("span", { class: "badge badge-failed", text: "FAILED" })
          : decisions.map((d) => h("span", { class: "position" },
            h("span", { class: "position-symbol", text: d.symbol }), badge(d.action),
            h("span", { class: "muted", text: conf(d.confidence) }))))),
      h("div", { class: "message-body" },
        failed ? h("p", { class: "alert", text: message.error || "The turn failed." }) : null,
        h("p", { class: "reasoning", text: message.reasoning || message.content || "" }),
        decisions.length ? positionsTable(decisions) : null,
        h("p", { class: "muted small", text: `${message.usage.prompt_tokens} + ${message.usage.completion_tokens} tokens · ${message.latency_ms} ms · parse ${message.parse_status}` })));
    const el = h("article", {
      class: `message${failed ? " failed" : ""}`,
      "data-message-id": message.id,
      "data-speak-order": participant.speak_order,
      style: `--color: ${participant.color}`,
    }, details);
    if (old) { old.replaceWith(el); return; }
    const list = $(".round-messages", roundSection(message.round));
    const after = [...list.children].find((other) => Number(other.dataset.speakOrder) > participant.speak_order);
    list.insertBefore(el, after || null);
  }

  function positionsTable(decisions) {
    return h("table", { class: "positions-table" },
      h("thead", {}, h("tr", {}, ["Coin", "Action", "Conf.", "Lev.", "Size", "SL", "TP", "Why"]
        .map((title) => h("th", { text: title })))),
      h("tbody", {}, decisions.map((d) => h("tr", {},
        h("td", { text: d.symbol }), h("td", {}, badge(d.action)), h("td", { text: conf(d.confidence) }),
        h("td", { text: d.leverage ? `${d.leverage}×` : "–" }), h("td", { text: pct(d.position_pct) }),
        h("td", { text: pct(d.stop_loss) }), h("td", { text: pct(d.take_profit) }),
        h("td", { class: "why", text: d.reasoning || "" })))));
  }

  function renderNotice(notice) {
    let box = $("#transcript .notices");
    if (!box) { box = h("div", { class: "notices" }); $("#transcript").append(box); }
    const who = notice.participant ? `${participantName(participantById(notice.participant))}: ` : "";
    box.append(h("p", { class: "alert", text: `${notice.step} failed · ${who}${notice.message} (${notice.code})` }));
  }

  // --- Votes and consensus ----------------------------------------------------------------

  function renderVotes() {
    const byParticipant = new Map();
    for (const vote of state.votes.values()) {
      if (!byParticipant.has(vote.participant)) byParticipant.set(vote.participant, []);
      byParticipant.get(vote.participant).push(vote);
    }
    const box = $("#votes");
    if (!byParticipant.size) {
      box.replaceChildren(h("p", { class: "muted", text: state.debate.status === "voting"
        ? "The participants are voting…" : "Votes appear after the last round." }));
      return;
    }
    const voters = [...byParticipant.keys()].map(participantById)
      .sort((a, b) => a.speak_order - b.speak_order);
    box.replaceChildren(...voters.map((participant) => h("div", { class: "voter", "data-participant": participant.id },
      h("div", { class: "voter-head" }, avatar(participant), h("strong", { text: participantName(participant) })),
      h("ul", { class: "vote-list" }, byParticipant.get(participant.id)
        .sort((a, b) => a.symbol.localeCompare(b.symbol))
        .map((vote) => h("li", { class: "vote", "data-vote-id": vote.id, title: vote.reasoning || vote.abstain_reason || "" },
          h("span", { class: "position-symbol", text: vote.symbol }),
          vote.abstained ? h("span", { class: "badge badge-none", text: "ABSTAIN" }) : badge(vote.action),
          h("span", { class: "muted", text: vote.abstained ? vote.abstain_reason || "" : conf(vote.confidence) })))))));
  }

  function renderConsensus() {
    const debate = state.debate;
    const decisions = [...(debate.decisions || [])].sort((a, b) => (b.is_primary - a.is_primary) || a.symbol.localeCompare(b.symbol));
    $("#consensus").hidden = decisions.length === 0;
    $("#decisions").replaceChildren(...decisions.map((d) => h("div", {
      class: `decision${d.is_primary ? " is-primary" : ""}`, "data-symbol": d.symbol,
    },
    h("div", { class: "decision-head" },
      h("strong", { text: d.symbol }), d.is_primary ? h("span", { class: "muted", text: " ★ primary" }) : null),
    h("div", {}, badge(d.action), h("span", { class: "decision-confidence", text: ` ${conf(d.confidence)}` })),
    EXECUTABLE.includes(d.action)
      ? h("p", { class: "muted small", text: `${d.leverage}× · size ${pct(d.position_pct)} · SL ${pct(d.stop_loss)} · TP ${pct(d.take_profit)}` })
      : null,
    d.reason ? h("p", { class: "muted small", text: d.reason }) : null,
    d.execution ? executionLine(d.execution) : null)));

    const open = decisions.filter((d) => EXECUTABLE.includes(d.action) && !d.execution);
    const form = $("#execute-form");
    form.hidden = !(debate.available_actions.includes("execute") && open.length);
    const select = $("#x-symbol");
    const chosen = select.value;
    select.replaceChildren(...open.map((d) => h("option", { value: d.symbol, text: `${d.symbol} · ${ACTION_LABELS[d.action]}` })));
    if (open.some((d) => d.symbol === chosen)) select.value = chosen;
  }

  function executionLine(execution) {
    const trader = state.traders.find((t) => t.id === execution.trader);
    let text = `Execution #${execution.id} on ${trader ? trader.name : `trader ${execution.trader}`}: ${execution.status}`;
    if (execution.status === "filled") {
      text += ` · ${num(execution.filled_quantity)} @ ${num(execution.average_price)}`;
      if (execution.stop_loss_price) text += ` · SL ${num(execution.stop_loss_price)}`;
      if (execution.take_profit_price) text += ` · TP ${num(execution.take_profit_price)}`;
    }
    if (execution.error) text += ` · ${execution.error}`;
    return h("p", { class: `execution execution-${execution.status}`, "data-execution-id": execution.id, text });
  }

  function applyExecution(execution) {
    const decision = (state.debate.decisions || []).find((d) => d.id === execution.decision);
    if (!decision) return;
    decision.execution = execution;
    renderConsensus();
  }

  async function loadTraders() {
    try {
      state.traders = await apiList("traders");
    } catch (error) {
      state.traders = [];
    }
    const running = state.traders.filter((t) => t.status === "running");
    for (const select of [$("#x-trader"), $("#f-trader")]) {
      const chosen = select.value;
      select.replaceChildren(...running.map((t) => h("option", { value: t.id, text: `${t.name} (${t.exchange})` })));
      if (running.some((t) => String(t.id) === chosen)) select.value = chosen;
    }
    if (state.debate) renderConsensus();
  }

  async function submitExecute(event) {
    event.preventDefault();
    const form = $("#execute-form");
    clearErrors(form);
    const payload = { trader: Number($("#x-trader").value) || null, symbol: $("#x-symbol").value };
    if (!payload.symbol) delete payload.symbol;
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

  /** Follow a debate's stream: from the start (`initial`), or after ``lastEventId``. */
  function openStream(debateId, lastEventId, failures) {
    closeStream();
    state.lastEventId = lastEventId;
    state.lastSeq = lastEventId ? eventNumber(lastEventId) : -1;
    const query = lastEventId ? `?lastEventId=${encodeURIComponent(lastEventId)}` : "";
    const source = new EventSource(`/api/debates/${debateId}/stream${query}`);
    const current = { source, debateId, retryTimer: null, failures: failures || 0 };
    stream = current;
    setStreamState("connecting");
    source.addEventListener("open", () => { current.failures = 0; setStreamState("live"); });
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, (event) => {
        // `error` is also the name of the EventSource's own connection error (no data).
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
    // up (an error answer); try again after a pause, resuming after the last event.
    if (current.source.readyState !== EventSource.CLOSED) return;
    const delay = Math.min(1000 * 2 ** current.failures, 15000);
    current.retryTimer = setTimeout(() => {
      if (stream === current) openStream(current.debateId, state.lastEventId, current.failures + 1);
    }, delay);
  }

  function setStreamState(name) {
    const el = $("#stream-state");
    el.dataset.state = name;
    el.textContent = { idle: "", connecting: "connecting…", live: "● live", reconnecting: "reconnecting…" }[name];
  }

  function eventNumber(id) {
    const match = /:(\d+)$/.exec(id || "");
    return match ? Number(match[1]) : null;
  }

  function onEvent(current, type, event) {
    if (stream !== current || !state.debate || state.debate.id !== current.debateId) return;
    const number = eventNumber(event.lastEventId);
    if (type !== "initial" && number !== null && number <= state.lastSeq) return;  // seen
    if (number !== null) {
      state.lastSeq = number;
      state.lastEventId = event.lastEventId;
    }
    const data = JSON.parse(event.data);
    HANDLERS[type](data);
  }

  const HANDLERS = {
    initial: (detail) => setDebate(detail),
    status: (fields) => applyState(fields),
    round_start: ({ round }) => { roundSection(round); renderRounds(); },
    round_end: () => renderRounds(),
    message: (message) => {
      state.messages.set(message.id, message);
      renderMessage(message);
      renderRounds();
    },
    vote: (vote) => { state.votes.set(vote.id, vote); renderVotes(); },
    consensus: ({ decisions }) => {
      const executions = new Map((state.debate.decisions || []).filter((d) => d.execution)
        .map((d) => [d.id, d.execution]));
      state.debate.decisions = decisions.map((d) => ({ ...d, execution: d.execution || executions.get(d.id) || null }));
      renderConsensus();
    },
    execution: (execution) => applyExecution(execution),
    error: (notice) => { state.notices.push(notice); renderNotice(notice); },
  };

  // --- The create form --------------------------------------------------------------------

  const reference = { strategies: [], models: [] };

  async function openCreate() {
    show("create");
    const form = $("#create-form");
    clearErrors(form);
    const [strategies, models] = await Promise.all([apiList("strategies"), apiList("ai-models"), loadTraders()]);
    reference.strategies = strategies;
    reference.models = models;
    fillSelect($("#f-strategy"), strategies.map((s) => [s.id, s.name]));
    updateSymbolSuggestions();
    const rows = $("#participant-rows");
    if (!rows.children.length) {
      const usable = models.filter((m) => m.enabled);
      DEFAULT_SEATS.forEach((personality, index) => addParticipantRow(usable[index % usable.length], personality));
    } else {
      for (const row of rows.children) fillModelSelect($("[data-name=ai_model]", row));
    }
    $("#f-name").focus();
  }

  function fillSelect(select, options) {
    const chosen = select.value;
    select.replaceChildren(...options.map(([value, label]) => h("option", { value, text: label })));
    if (options.some(([value]) => String(value) === chosen)) select.value = chosen;
  }

  function fillModelSelect(select) {
    fillSelect(select, reference.models.map((m) => [m.id,
      `${m.name} (${m.simulated ? "simulated" : m.provider_name || m.provider})${m.enabled ? "" : " · disabled"}`]));
  }

  function updateSymbolSuggestions() {
    const strategy = reference.strategies.find((s) => String(s.id) === $("#f-strategy").value);
    const coins = strategy ? strategy.static_coins || [] : [];
    $("#symbol-suggestions").replaceChildren(...coins.map((coin) => h("option", { value: coin })));
  }

  function addParticipantRow(model, personality) {
    const rows = $("#participant-rows");
    const row = $("#participant-row").content.firstElementChild.cloneNode(true);
    fillModelSelect($("[data-name=ai_model]", row));
    fillSelect($("[data-name=personality]", row), Object.entries(state.personalities)
      .map(([id, p]) => [id, `${p.emoji} ${p.name}`]));
    if (model) $("[data-name=ai_model]", row).value = model.id;
    $("[data-name=personality]", row).value = personality ||
      Object.keys(state.personalities)[rows.children.length % 5];
    $(".remove-participant", row).addEventListener("click", () => { row.remove(); indexParticipantRows(); });
    rows.append(row);
    indexParticipantRows();
  }

  /** Point each row's error slots at its index: participants[1].ai_model, ... */
  function indexParticipantRows() {
    const rows = [...$("#participant-rows").children];
    rows.forEach((row, index) => {
      row.dataset.index = index;
      for (const slot of row.querySelectorAll("[data-error-slot]")) {
        const name = slot.dataset.errorSlot;
        slot.dataset.errorFor = name ? `participants[${index}].${name}` : `participants[${index}]`;
      }
      for (const label of row.querySelectorAll("label")) {
        const select = label.nextElementSibling;
        select.id = `f-participant-${index}-${select.dataset.name}`;
        label.htmlFor = select.id;
      }
    });
    $("#add-participant").disabled = rows.length >= 6;
  }

  /** Return the typed value of a number input: a number, or the text as typed (the API says why). */
  function numberValue(input) {
    const text = input.value.trim();
    if (text === "") return undefined;
    return /^-?\d+$/.test(text) ? Number(text) : text;
  }

  function createPayload() {
    const payload = {
      name: $("#f-name").value,
      strategy: Number($("#f-strategy").value) || null,
      symbol: $("#f-symbol").value.trim(),
      max_rounds: numberValue($("#f-rounds")),
      prompt_variant: $("#f-variant").value,
      auto_execute: $("#f-auto").checked,
      participants: [...$("#participant-rows").children].map((row) => ({
        ai_model: Number($("[data-name=ai_model]", row).value) || null,
        personality: $("[data-name=personality]", row).value,
      })),
    };
    if (payload.max_rounds === undefined) delete payload.max_rounds;
    if (payload.auto_execute) payload.trader = Number($("#f-trader").value) || null;
    return payload;
  }

  async function submitCreate(event) {
    event.preventDefault();
    const form = $("#create-form");
    clearErrors(form);
    $("#create-submit").disabled = true;
    try {
      const detail = await api("POST", "debates", createPayload());
      form.reset();
      $("#participant-rows").replaceChildren();
      $("#f-trader").disabled = true;
      state.debates.unshift(detail);
      navigate(detail.id);
    } catch (error) {
      showErrors(form, error, $("#create-errors"));
    } finally {
      $("#create-submit").disabled = false;
    }
  }

  function clearErrors(form) {
    for (const slot of form.querySelectorAll("[data-error-for]")) slot.textContent = "";
    for (const field of form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
    const summary = form.querySelector(".form-errors");
    if (summary) { summary.hidden = true; summary.replaceChildren(); }
    const executeError = $("#execute-error");
    if (form.contains(executeError)) executeError.textContent = "";
  }

  /** Show each of the API's field errors next to its field; the rest in ``summary``. */
  function showErrors(form, error, summary) {
    const unplaced = [];
    for (const [name, messages] of Object.entries(error.fields || {})) {
      const slot = [...form.querySelectorAll("[data-error-for]")].find((s) => s.dataset.errorFor === name);
      if (!slot) { unplaced.push(`${name}: ${messages.join(" ")}`); continue; }
      slot.textContent = messages.join(" ");
      const field = slot.parentElement.querySelector("input, select");
      if (field) field.setAttribute("aria-invalid", "true");
    }
    const lines = [error.message, ...unplaced];
    if (summary.classList.contains("form-errors")) {
      summary.replaceChildren(...lines.map((line) => h("p", { text: line })));
      summary.hidden = false;
    } else {
      summary.textContent = lines.join(" ");
    }
  }

  // --- Start ------------------------------------------------------------------------------

  async function start() {
    $("#menu-toggle").addEventListener("click", toggleSidebar);
    $("#backdrop").addEventListener("click", closeSidebar);
    $("#new-debate").addEventListener("click", () => {
      if (window.location.pathname !== "/") window.history.pushState({}, "", "/");
      closeStream();
      state.debate = null;
      renderSidebar();
      openCreate();
    });
    $("#create-cancel").addEventListener("click", () => navigate(null));
    $("#create-form").addEventListener("submit", submitCreate);
    $("#f-strategy").addEventListener("change", updateSymbolSuggestions);
    $("#f-auto").addEventListener("change", () => { $("#f-trader").disabled = !$("#f-auto").checked; });
    $("#add-participant").addEventListener("click", () => addParticipantRow(reference.models.find((m) => m.enabled), null));
    $("#execute-form").addEventListener("submit", submitExecute);
    window.addEventListener("popstate", () => {
      const match = /^\/debates\/(\d+)\/$/.exec(window.location.pathname);
      navigate(match ? Number(match[1]) : null);
    });

    const personalities = await api("GET", "debates/personalities");
    state.personalities = Object.fromEntries(personalities.map((p) => [p.id, p]));
    await loadDebates();
    if (config.debateId) openDebate(config.debateId);
  }

  start();
})();
