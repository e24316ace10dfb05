/* What the arena and backtests pages share: building and redrawing elements, calling
 * the REST API under /api/ with the session cookie and the page's CSRF token, and lists
 * of debates read a page at a time. Loaded before each page's own script, it defines
 * window.arenaWeb and nothing else.
 */
(function () {
  "use strict";

  const $ = (selector, root) => (root || document).querySelector(selector);
  const $$ = (selector, root) => [...(root || document).querySelectorAll(selector)];
  const missing = (value) => value === null || value === undefined;

  /** Build an element: h("p", {class: "x", text: "hi"}, child, [children], null).
   * ``style`` takes an object of properties ({"--color": "#16a34a"}), set through the
   * element's style object: the pages' Content-Security-Policy refuses a style attribute
   * (no 'unsafe-inline' for styles), but not styles set that way. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") el.textContent = value;
      else if (key === "style") {
        for (const [name, setting] of Object.entries(value)) el.style.setProperty(name, setting);
      }
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) el.append(child);
    }
    return el;
  }

  /** Make ``container``'s children look like ``nodes``, touching only what differs: a
   * child equal to its new node (``isEqualNode``: the same tags, attributes and text) is
   * kept; one of the same tag and attributes is kept and its own children redrawn so;
   * any other is replaced. A live event redraws what it touches, and a node replaced
   * between the press and the release of a button or link swallows the click: so the
   * row of a backtest whose progress moves keeps its link, and only the count in it
   * changes. Kept nodes keep their own listeners, so a listener of nodes drawn here must
   * read only what its node's attributes show (an id, an action): then the kept one
   * does what the new one would. */
  function redraw(container, nodes) {
    const current = [...container.childNodes];
    if (nodes.length !== current.length) {
      container.replaceChildren(...nodes);
      return;
    }
    nodes.forEach((node, index) => {
      const old = current[index];
      if (node.isEqualNode(old)) return;
      if (sameElement(node, old)) redraw(old, [...node.childNodes]);
      else old.replaceWith(node);
    });
  }

  /** Whether ``a`` and ``b`` are elements of the same tag with the same attributes. */
  function sameElement(a, b) {
    return a.nodeType === Node.ELEMENT_NODE && b.nodeType === Node.ELEMENT_NODE
      && a.tagName === b.tagName && a.attributes.length === b.attributes.length
      && [...a.attributes].every((attr) => b.getAttribute(attr.name) === attr.value);
  }

  /** An error answer of the API: its message, HTTP status and per-field errors. */
  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `The server answered ${status}.`);
      this.status = status;
      this.fields = (body && body.fields) || {};
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") {
      headers["X-CSRFToken"] = document.querySelector("[name=csrfmiddlewaretoken]").value;
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`/api/${path}`, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401) {
      window.location.assign(`/login/?next=${encodeURIComponent(window.location.pathname)}`);
    }
    const data = response.status === 204 ? null : await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  /** Wire the phones' menu: the ☰ button (#menu-toggle) slides the sidebar in over the
   * page, a click on the backdrop (#backdrop) folds it away. Return the function that
   * opens it (true), folds it (false) or turns it over (no argument). */
  function sidebarMenu() {
    const toggle = (open) => {
      const opened = document.body.classList.toggle("sidebar-open", open);
      $("#menu-toggle").setAttribute("aria-expanded", String(opened));
      $("#backdrop").hidden = !opened;
    };
    $("#menu-toggle").addEventListener("click", () => toggle());
    $("#backdrop").addEventListener("click", () => toggle(false));
    return toggle;
  }

  /** Return the path (for ``api``) of the page after a paginated list's ``page``, or null. */
  function nextPage(page) {
    return page.next ? page.next.slice(page.next.indexOf("/api/") + "/api/".length) : null;
  }

  /** Return every item of a paginated list. */
  async function apiList(path) {
    const items = [];
    for (let next = path; next;) {
      const page = await api("GET", next);
      items.push(...page.results);
      next = nextPage(page);
    }
    return items;
  }

  /** A list of debates read from the API a page at a time: ``path`` the list's first
   * page, ``list`` the <ul> it is drawn in, ``more`` the button that reads the next page,
   * ``empty`` what shows while it holds none. ``open`` is called with a debate's id when
   * its link is followed. */
  function debateGroup({ path, list, more, empty, open }) {
    const group = { debates: [], next: path, loaded: false, openId: null };

    group.render = () => {
      redraw(list, group.debates.map((debate) => h("li", {}, h("a", {
        class: `debate-link${debate.id === group.openId ? " active" : ""}`,
        href: `/debates/${debate.id}/`,
        "data-debate-id": debate.id,
        onclick: (event) => {
          event.preventDefault();
          open(debate.id);
        },
      },
      h("span", { class: `status-dot status-${debate.status}`, title: debate.status }),
      h("span", { class: "debate-link-name", text: debate.name }),
      h("span", { class: "debate-link-meta", text: `${debate.symbol || "auto"} · ${debate.status}` }),
      ))));
      empty.hidden = !group.loaded || group.debates.length > 0;
      more.hidden = !group.next || !group.loaded;
    };

    /** Add the next page; a debate already listed (created since the first page was read,
     * pushing the rest down) is kept once. */
    group.loadMore = async () => {
      if (!group.next) return;
      more.disabled = true;
      try {
        const page = await api("GET", group.next);
        const listed = new Set(group.debates.map((d) => d.id));
        group.debates.push(...page.results.filter((d) => !listed.has(d.id)));
        group.next = nextPage(page);
        group.loaded = true;
      } finally {
        more.disabled = false;
      }
      group.render();
    };

    /** Show ``debate``'s new state, or list it first when it is new to the group. */
    group.upsert = (debate) => {
      const item = group.debates.find((d) => d.id === debate.id);
      if (item) Object.assign(item, { status: debate.status, symbol: debate.symbol });
      else group.debates.unshift(debate);
      group.render();
    };

    group.remove = (debateId) => {
      group.debates = group.debates.filter((d) => d.id !== debateId);
      group.render();
    };

    more.addEventListener("click", group.loadMore);
    return group;
  }

  window.arenaWeb = Object.freeze({
    $, $$, missing, h, redraw, ApiError, api, apiList, nextPage, sidebarMenu, debateGroup,
  });
})();
