/* The arena page's sidebar: the user's own debates (origin "manual"), newest first, a
 * page at a time; then the schedules, each folding out the debates it fired, a page at a
 * time when it is opened. A backtest's debates are not listed here: they open from the
 * backtest's page. Loaded after common.js and before arena.js, it defines
 * window.arenaSidebar and nothing else.
 */
(function () {
  "use strict";

  const { $, h, apiList, debateGroup } = window.arenaWeb;  // common.js

  /** Return a schedule's line under its name: how often it fires, or that it is paused,
   * and how many debates it has fired. */
  function scheduleMeta(schedule) {
    const pace = schedule.enabled ? `every ${schedule.interval_minutes} min` : "paused";
    return `${schedule.symbol || "auto"} · ${pace} · ${schedule.run_count} fired`;
  }

  /** Wire the sidebar: ``open`` opens a debate by id. Return what the page asks of it. */
  function arenaSidebar({ open }) {
    const manual = debateGroup({
      path: "debates?origin=manual",
      list: $("#debate-list"),
      more: $("#more-debates"),
      empty: $("#debate-list-empty"),
      open,
    });
    const schedules = new Map();  // schedule id -> its debates' group
    let openId = null;

    function scheduleItem(schedule) {
      const list = h("ul", { class: "debate-list" });
      const empty = h("p", { class: "muted small", text: "No debates fired yet.", hidden: true });
      const more = h("button", {
        type: "button", class: "secondary more-debates", text: "More debates", hidden: true,
      });
      const group = debateGroup({
        path: `debates?schedule=${schedule.id}`, list, more, empty, open,
      });
      group.openId = openId;
      schedules.set(schedule.id, group);
      const details = h("details", { class: "schedule-group" },
        h("summary", {},
          h("span", { class: "schedule-name", text: schedule.name }),
          h("span", { class: "debate-link-meta", text: scheduleMeta(schedule) })),
        list, empty, more);
      details.addEventListener("toggle", () => {
        if (details.open && !group.loaded) group.loadMore();
      });
      return h("li", { "data-schedule-id": schedule.id }, details);
    }

    async function loadSchedules() {
      const found = await apiList("schedules");
      $("#schedule-list").replaceChildren(...found.map(scheduleItem));
      $("#schedules").hidden = found.length === 0;
    }

    /** Mark the open debate (``debate``, or none) in every list. */
    function setOpen(debate) {
      openId = debate ? debate.id : null;
      for (const group of [manual, ...schedules.values()]) {
        group.openId = openId;
        group.render();
      }
    }

    /** Show a debate's new state in the list of where it came from (a manual debate not
     * listed yet is listed first); a backtest's debate is listed nowhere. */
    function update(debate) {
      if (debate.origin === "manual") manual.upsert(debate);
      const group = debate.origin === "schedule" && schedules.get(debate.schedule);
      if (group && group.loaded) group.upsert(debate);
    }

    function remove(debateId) {
      for (const group of [manual, ...schedules.values()]) group.remove(debateId);
    }

    return {
      load: () => Promise.all([manual.loadMore(), loadSchedules()]),
      setOpen,
      update,
      remove,
    };
  }

  window.arenaSidebar = arenaSidebar;
})();
