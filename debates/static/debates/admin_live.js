/* The live stream of the admin's debate page (templates/admin/debates/debate): state,
 * round, speaker, and each message, vote and decision as it arrives. A static file, so the
 * page runs under the Content-Security-Policy with no inline script. */
(function () {
  "use strict";
  const panel = document.getElementById("live-debate");
  const part = (name) => panel.querySelector(`[data-live="${name}"]`);
  const log = part("log");
  const names = {};
  const shown = new Set();  // messages and votes already listed (initial may overlap events)

  function line(text, kind) {
    const item = document.createElement("li");
    item.textContent = text;
    if (kind) item.className = kind;
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.append(item);
    if (atBottom) log.scrollTop = log.scrollHeight;
  }
  const who = (id) => names[id] || `participant ${id}`;
  const problem = (error) =>
    !error ? "" : typeof error === "object" ? `${error.code || ""} ${error.message || ""}`.trim() : String(error);

  function showState(state) {
    part("status").textContent = state.status;
    part("phase").textContent = state.phase;
    part("round").textContent = state.current_round;
    part("speaker").textContent = state.current_speaker ? who(state.current_speaker) : "–";
  }
  function showMessage(message) {
    if (shown.has(`m${message.id}`)) return;
    shown.add(`m${message.id}`);
    const failed = message.status === "error";
    const text = failed ? `failed: ${problem(message.error)}` : message.reasoning || message.content;
    line(`R${message.round} ${who(message.participant)}: ${text}`, failed ? "failed" : "");
  }
  function showVote(vote) {
    if (shown.has(`v${vote.id}`)) return;
    shown.add(`v${vote.id}`);
    const choice = vote.abstained
      ? `abstains (${vote.abstain_reason || "no vote"})`
      : `${vote.action} ${vote.confidence}% x${vote.leverage}`;
    line(`vote ${who(vote.participant)} ${vote.symbol}: ${choice}`);
  }
  function showConsensus(consensus) {
    for (const decision of consensus.decisions) {
      const primary = decision.is_primary ? " (primary)" : "";
      line(`consensus ${decision.symbol}: ${decision.action} ${decision.confidence}%${primary}`, "consensus");
    }
  }

  function showExecution(execution) {
    const error = problem(execution.error);
    line(`execution ${execution.symbol} ${execution.action}: ${execution.status}${error ? " " + error : ""}`);
  }

  const source = new EventSource(panel.dataset.streamUrl);
  // The stream's `error` event shares its name with the EventSource's own connection
  // errors, which carry no data: only events with data are the stream's.
  const on = (type, handle) =>
    source.addEventListener(type, (event) => {
      if (typeof event.data === "string") handle(JSON.parse(event.data));
    });
  source.onopen = () => { part("connection").textContent = "(live)"; };
  source.onerror = () => {
    part("connection").textContent =
      source.readyState === EventSource.CLOSED ? "(closed: reload the page)" : "(reconnecting…)";
  };
  on("initial", (debate) => {
    log.replaceChildren();
    shown.clear();
    for (const seat of debate.participants) {
      names[seat.id] = `${seat.emoji} ${seat.ai_model_name} (${seat.personality})`;
    }
    showState(debate);
    debate.messages.forEach(showMessage);
    debate.votes.forEach(showVote);
    if (debate.decisions.length) showConsensus({ decisions: debate.decisions });
    for (const decision of debate.decisions) {
      if (decision.execution) showExecution(decision.execution);
    }
  });
  on("status", (state) => {
    showState(state);
    const error = problem(state.error);
    line(`status ${state.status} (${state.phase})${error ? ": " + error : ""}`, error ? "failed" : "");
  });
  on("round_start", (data) => line(`Round ${data.round}`, "round"));
  on("round_end", (data) => line(`round ${data.round} complete`));
  on("message", showMessage);
  on("vote", showVote);
  on("consensus", showConsensus);
  on("execution", showExecution);
  on("error", (data) => {
    const seat = data.participant ? ` ${who(data.participant)}` : "";
    line(`error in ${data.step}${seat}: ${data.code} ${data.message}`, "failed");
  });
})();
