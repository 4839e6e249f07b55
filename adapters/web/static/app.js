// Switchboard web chat. User data only ever reaches the page through
// textContent and text nodes (the bot's Markdown is built from elements and
// text nodes, markdown below), never innerHTML.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const ui = {
    join: $("join"), room: $("room"), name: $("name"), status: $("status"),
    scroller: $("scroller"), list: $("messages"), empty: $("empty"),
    error: $("error"), composer: $("composer"), text: $("text"), send: $("send"),
  };
  const ROOM_RE = /^[A-Za-z0-9_.-]{1,64}$/;
  const PAGE = 1000;      // messages per history request (the API maximum)
  const MAX_SHOWN = 2000; // older messages leave the page beyond this
  const NAME_KEY = "switchboard.name";

  let room = "";
  let last = 0;          // highest seq shown: the cursor for history and events
  let seen = new Set();  // seqs shown, so a message never appears twice
  let events = null;     // the open EventSource
  let generation = 0;    // bumped on every join; stale callbacks check it
  let retryTimer = 0;
  let pending = null;    // {room, text, sender, id}: a retry of the same post reuses its id
  // Live replies: the draft shown for each turn, and the ids of the bot
  // messages shown. A draft carries the id its final message will have; that
  // message takes the draft's place, and a draft of a shown message is stale.
  let drafts = new Map(); // turn -> {id, li}
  let shownIds = new Set();

  // ---- helpers -------------------------------------------------------

  function el(tag, className, text) {
    const n = document.createElement(tag);
    if (className) n.className = className;
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function roomURL(r, tail) {
    return "/api/rooms/" + encodeURIComponent(r) + tail;
  }

  async function readJSON(res) {
    try {
      return await res.json();
    } catch {
      return { error: "HTTP " + res.status + " " + res.statusText };
    }
  }

  function showError(msg) {
    ui.error.textContent = msg;
    ui.error.hidden = false;
  }

  function clearError() {
    ui.error.hidden = true;
    ui.error.textContent = "";
  }

  function setStatus(text, state) {
    ui.status.textContent = text;
    ui.status.dataset.state = state || "";
  }

  // senderOf turns a display name into the API's sender: A-Z a-z 0-9 _ . -
  function senderOf(name) {
    const s = name.trim().replace(/[^A-Za-z0-9_.-]+/g, "_").slice(0, 64);
    return /[A-Za-z0-9]/.test(s) ? s : "";
  }

  function randomId() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  function hue(s) {
    let h = 0;
    for (const c of s) h = (h * 31 + c.codePointAt(0)) % 360;
    return h;
  }

  function formatTime(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return "";
    const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    if (d.toDateString() === new Date().toDateString()) return time;
    return d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time;
  }

  function nearBottom() {
    const s = ui.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 80;
  }

  // ---- Markdown ------------------------------------------------------

  // The bot's messages are Markdown (what agents write, and the gateway's
  // own: approval requests). markdown renders one as DOM nodes: fenced code
  // blocks, inline code, bold, italic, strikethrough and http(s) links;
  // everything else (lists, quotes, tables) stays the text it is, its lines
  // kept by the stylesheet. It only ever creates elements and text nodes,
  // so no part of the text is parsed as HTML.
  const FENCE_RE = /^ {0,3}(`{3,}|~{3,})[^`]*$/;
  const INLINE_RE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|~~(?=\S)([\s\S]*?\S)~~|\*(?=[^\s*])([^*]*?[^\s*])\*|(?<![A-Za-z0-9_])_(?=[^\s_])([^_]*?[^\s_])_(?![A-Za-z0-9_])|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g;

  function markdown(src) {
    const out = document.createDocumentFragment();
    const lines = src.split("\n");
    let text = [];
    const flush = (nl) => {
      if (text.length) out.append(inline(text.join("\n") + (nl ? "\n" : "")));
      text = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const open = FENCE_RE.exec(lines[i]);
      if (!open) {
        text.push(lines[i]);
        continue;
      }
      flush(false);
      const fence = open[1];
      const code = [];
      for (i++; i < lines.length; i++) {
        const t = lines[i].trim();
        if (t.length >= fence.length && t === fence[0].repeat(t.length)) break;
        code.push(lines[i]);
      }
      const pre = el("pre", "code");
      pre.append(el("code", "", code.join("\n")));
      out.append(pre);
    }
    flush(false);
    return out;
  }

  // inline renders one run of text's spans.
  function inline(s) {
    const out = document.createDocumentFragment();
    let at = 0;
    for (const m of s.matchAll(INLINE_RE)) {
      if (m.index > at) out.append(s.slice(at, m.index));
      at = m.index + m[0].length;
      let n;
      if (m[1] !== undefined) {
        const code = m[2].length > 2 && m[2].startsWith(" ") && m[2].endsWith(" ") ? m[2].slice(1, -1) : m[2];
        n = el("code", "", code);
      } else if (m[3] !== undefined || m[4] !== undefined) {
        n = el("strong");
        n.append(inline(m[3] !== undefined ? m[3] : m[4]));
      } else if (m[5] !== undefined) {
        n = el("s");
        n.append(inline(m[5]));
      } else if (m[6] !== undefined || m[7] !== undefined) {
        n = el("em");
        n.append(inline(m[6] !== undefined ? m[6] : m[7]));
      } else {
        n = el("a", "", m[8]);
        n.href = m[9];
        n.rel = "noopener noreferrer nofollow";
        n.target = "_blank";
      }
      out.append(n);
    }
    if (at < s.length) out.append(s.slice(at));
    return out;
  }

  // showText puts a message's text into its .text node: the bot's as
  // Markdown, people's as they typed it.
  function showText(node, text, fromBot) {
    if (fromBot) node.replaceChildren(markdown(text));
    else node.textContent = text;
  }

  // ---- messages ------------------------------------------------------

  function render(m) {
    const mine = !m.from_bot && m.sender === senderOf(ui.name.value);
    const li = el("li", "msg" + (m.from_bot ? " bot" : "") + (mine ? " mine" : ""));
    li.dataset.seq = String(m.seq);

    const who = m.name || m.sender || "?";
    const avatar = el("span", "avatar", m.from_bot ? "◆" : Array.from(who)[0].toUpperCase());
    avatar.setAttribute("aria-hidden", "true");
    avatar.style.setProperty("--hue", String(hue(m.sender || who)));

    const meta = el("div", "meta");
    meta.append(el("span", "who", who));
    if (m.from_bot) meta.append(el("span", "badge", "bot"));
    if (m.topic) meta.append(el("span", "topic", "# " + m.topic));
    const when = el("time", "when", formatTime(m.time));
    when.dateTime = m.time || "";
    if (m.time) when.title = new Date(m.time).toLocaleString();
    meta.append(when);

    const body = el("div", "body");
    const text = el("div", "text");
    showText(text, m.text || "", m.from_bot);
    body.append(meta, text);
    if (m.id) li.dataset.id = m.id;
    const buttons = buttonsOf(m);
    if (buttons) body.append(buttons);
    li.append(avatar, body);
    return li;
  }

  // ---- buttons -------------------------------------------------------

  // buttonsOf is the row of buttons under a bot message (null: none).
  function buttonsOf(m) {
    if (!m.from_bot || !Array.isArray(m.buttons) || m.buttons.length === 0) return null;
    const row = el("div", "buttons");
    for (const b of m.buttons) {
      if (!b || typeof b.label !== "string" || typeof b.data !== "string") continue;
      const btn = el("button", "btn" + (b.style === "primary" || b.style === "danger" ? " " + b.style : ""), b.label);
      btn.type = "button";
      btn.addEventListener("click", () => press(m, b, row));
      row.append(btn);
    }
    return row;
  }

  // press sends a button press; the answer shows under the message, to
  // this page only (the server sent it to the presser alone).
  async function press(m, b, row) {
    const name = ui.name.value.trim();
    const sender = senderOf(name);
    if (!sender) {
      showError("Enter your name (letters or digits) before pressing a button.");
      ui.name.focus();
      return;
    }
    const li = row.closest(".msg");
    for (const btn of row.querySelectorAll("button")) btn.disabled = true;
    let answer;
    try {
      const res = await fetch(roomURL(room, "/press"), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ data: b.data, sender, name, message: m.id || "", topic: m.topic || "" }),
      });
      const body = await readJSON(res);
      answer = body.answer || body.error || (res.ok ? "" : "HTTP " + res.status);
    } catch (e) {
      answer = "Not sent: " + e.message;
    } finally {
      for (const btn of row.querySelectorAll("button")) btn.disabled = false;
    }
    if (!li || !answer) return;
    let note = li.querySelector(".answer");
    if (!note) {
      note = el("div", "answer");
      note.setAttribute("role", "status");
      li.querySelector(".body").append(note);
    }
    note.textContent = answer;
  }

  // showEdit applies EditButtons to a shown message: new text, new buttons.
  function showEdit(d) {
    if (typeof d.id !== "string" || typeof d.text !== "string") return;
    for (const li of ui.list.querySelectorAll(".msg[data-id]")) {
      if (li.dataset.id !== d.id) continue;
      showText(li.querySelector(".text"), d.text, true);
      const old = li.querySelector(".buttons");
      if (old) old.remove();
      const topic = li.querySelector(".topic");
      const buttons = buttonsOf({ from_bot: true, id: d.id, buttons: d.buttons, topic: topic ? topic.textContent.slice(2) : "" });
      if (buttons) li.querySelector(".text").after(buttons);
    }
  }

  // showDelete takes a message the bot deleted off the page.
  function showDelete(d) {
    if (typeof d.id !== "string") return;
    for (const li of ui.list.querySelectorAll(".msg[data-id]")) {
      if (li.dataset.id === d.id) li.remove();
    }
    ui.empty.hidden = ui.list.childElementCount > 0;
  }

  function add(m) {
    if (!m || typeof m.seq !== "number" || seen.has(m.seq)) return;
    seen.add(m.seq);
    if (m.seq > last) last = m.seq;
    if (m.deleted) return; // moves the cursor, shows nothing
    if (m.id) shownIds.add(m.id);
    const stick = nearBottom();
    const draft = m.from_bot && m.id ? draftOf(m.id) : null;
    if (draft) {
      // The final message of a live reply replaces its draft, in place.
      drafts.delete(draft.turn);
      draft.li.replaceWith(render(m));
      if (stick) ui.scroller.scrollTop = ui.scroller.scrollHeight;
      return;
    }
    // Keep seq order; a message almost always goes last, above the drafts.
    let before = null;
    for (let n = ui.list.lastElementChild; n && (n.dataset.draft || Number(n.dataset.seq) > m.seq); n = n.previousElementSibling) {
      before = n;
    }
    ui.list.insertBefore(render(m), before);
    while (ui.list.childElementCount > MAX_SHOWN) ui.list.firstElementChild.remove();
    ui.empty.hidden = true;
    if (stick) ui.scroller.scrollTop = ui.scroller.scrollHeight;
  }

  function draftOf(id) {
    for (const [turn, d] of drafts) if (d.id === id) return { turn, li: d.li };
    return null;
  }

  // showDraft shows a live reply's text so far, in place of its last one.
  function showDraft(d) {
    if (typeof d.turn !== "string" || typeof d.text !== "string" || shownIds.has(d.id)) return;
    const stick = nearBottom();
    const cur = drafts.get(d.turn);
    if (cur) {
      showText(cur.li.querySelector(".text"), d.text, true);
    } else {
      const li = render({ from_bot: true, name: d.name, sender: d.name, text: d.text, topic: d.topic });
      li.classList.add("draft");
      li.dataset.draft = d.turn;
      delete li.dataset.seq;
      li.querySelector(".badge").textContent = "writing…";
      ui.list.append(li);
      drafts.set(d.turn, { id: d.id, li });
      ui.empty.hidden = true;
    }
    // The draft's buttons (the turn's Stop button), drawn once and gone
    // with the draft that has none (its last): a press names the draft's
    // id, the final message's, as the message.
    const li = drafts.get(d.turn).li;
    const row = li.querySelector(".buttons");
    const buttons = row ? null : buttonsOf({ from_bot: true, id: d.id, buttons: d.buttons, topic: d.topic });
    if (buttons) li.querySelector(".text").after(buttons);
    else if (row && !(Array.isArray(d.buttons) && d.buttons.length)) row.remove();
    if (stick) ui.scroller.scrollTop = ui.scroller.scrollHeight;
  }

  // endDraft removes a draft that no message replaces (an aborted reply).
  function endDraft(d) {
    const cur = drafts.get(d.turn);
    if (cur) cur.li.remove();
    drafts.delete(d.turn);
  }

  function clearDrafts() {
    for (const d of drafts.values()) d.li.remove();
    drafts = new Map();
  }

  function onEvent(data) {
    if (data && data.type === "draft") showDraft(data);
    else if (data && data.type === "draft_end") endDraft(data);
    else if (data && data.type === "edit") showEdit(data);
    else if (data && data.type === "delete") showDelete(data);
    else add(data);
  }

  // loadHistory reads every message after the cursor with plain requests.
  async function loadHistory(gen) {
    for (;;) {
      const res = await fetch(roomURL(room, "/messages?after=" + last + "&limit=" + PAGE));
      const body = await readJSON(res);
      if (gen !== generation) return;
      if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
      body.messages.forEach(add);
      if (body.messages.length < PAGE) return;
    }
  }

  // connect opens the live stream from the cursor. A reconnecting
  // EventSource sends Last-Event-ID, so the server resumes where it left.
  function connect(gen) {
    if (gen !== generation) return;
    const src = new EventSource(roomURL(room, "/events?after=" + last));
    events = src;
    src.onopen = () => {
      if (events !== src) return;
      setStatus("live", "live");
      // The server sends the drafts showing now: the old ones may be over.
      clearDrafts();
    };
    src.onmessage = (ev) => {
      try { onEvent(JSON.parse(ev.data)); } catch (e) { console.error("bad event", e); }
    };
    src.onerror = () => {
      if (events !== src) return;
      if (src.readyState === EventSource.CLOSED) {
        events = null;
        setStatus("offline, retrying…", "off");
        retryTimer = setTimeout(() => connect(gen), 3000);
      } else {
        setStatus("reconnecting…", "off");
      }
    };
  }

  async function join(r) {
    const gen = ++generation;
    if (events) events.close();
    events = null;
    clearTimeout(retryTimer);
    room = r;
    last = 0;
    seen = new Set();
    shownIds = new Set();
    drafts = new Map();
    ui.list.replaceChildren();
    ui.empty.hidden = false;
    ui.room.value = r;
    document.title = "#" + r + " · Switchboard";
    ui.text.placeholder = "Message #" + r;
    history.replaceState(null, "", "?room=" + encodeURIComponent(r));
    setStatus("loading…", "off");
    clearError();
    try {
      await loadHistory(gen);
    } catch (e) {
      if (gen === generation) showError("Could not load messages: " + e.message);
    }
    connect(gen);
  }

  // ---- sending -------------------------------------------------------

  async function send() {
    const text = ui.text.value;
    if (!text.trim()) return;
    const name = ui.name.value.trim();
    const sender = senderOf(name);
    if (!sender) {
      showError("Enter your name (letters or digits) before sending.");
      ui.name.focus();
      return;
    }
    // A retry of the same post keeps its id (stored once); another post
    // (text, room or sender changed) gets a new one: the server refuses an
    // id it stored with other content (409).
    if (!pending || pending.text !== text || pending.room !== room || pending.sender !== sender) {
      pending = { room, text, sender, id: randomId() };
    }
    ui.send.disabled = true;
    try {
      const res = await fetch(roomURL(room, "/messages"), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: pending.id, sender, name, text }),
      });
      const body = await readJSON(res);
      if (res.status === 409) pending = null; // the id is taken: the next try gets a new one
      if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
      pending = null;
      ui.text.value = "";
      autosize();
      clearError();
      // Without a live stream the message would not show up: fetch it.
      if (!events || events.readyState !== EventSource.OPEN) await loadHistory(generation);
    } catch (e) {
      showError("Not sent: " + e.message);
    } finally {
      ui.send.disabled = false;
      ui.text.focus();
    }
  }

  function autosize() {
    ui.text.style.height = "auto";
    ui.text.style.height = Math.min(ui.text.scrollHeight, 200) + "px";
  }

  // ---- wiring --------------------------------------------------------

  function initialRoom() {
    let fromHash = "";
    try {
      fromHash = decodeURIComponent(location.hash.slice(1));
    } catch {
      // not valid percent-encoding ("#%E0"): no room named there
    }
    if (ROOM_RE.test(fromHash)) return fromHash;
    const fromQuery = new URLSearchParams(location.search).get("room");
    if (fromQuery && ROOM_RE.test(fromQuery)) return fromQuery;
    return "lobby";
  }

  ui.join.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const r = ui.room.value.trim();
    if (!ROOM_RE.test(r)) {
      showError("Room names are 1-64 letters, digits, _ . or -");
      ui.room.focus();
      return;
    }
    if (r !== room) join(r);
    ui.text.focus();
  });

  ui.name.value = localStorage.getItem(NAME_KEY) || "";
  ui.name.addEventListener("change", () => {
    localStorage.setItem(NAME_KEY, ui.name.value.trim());
  });

  ui.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    send();
  });
  ui.text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  ui.text.addEventListener("input", autosize);
  ui.error.addEventListener("click", clearError);
  window.addEventListener("hashchange", () => {
    const r = initialRoom();
    if (r !== room) join(r);
  });

  join(initialRoom());
  (ui.name.value ? ui.text : ui.name).focus();
})();
