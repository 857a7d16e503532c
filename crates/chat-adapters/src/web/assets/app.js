// The Yetibot console page. It keeps no state of its own beyond what the server sends:
// a snapshot of the room from /api/state, then updates from /api/events. Every piece of
// text from the server is put into the page as text nodes; Markdown is turned into
// elements here, never into HTML strings, so an answer cannot inject markup or script.
"use strict";

(function () {
  const state = {
    room: "general",
    rooms: [],
    messages: new Map(), // id -> message JSON
    seq: 0,
    thread: null, // the open thread's root ID
    operator: null,
    source: null,
    epoch: null, // the bot process the page's state came from
    history: [],
    historyAt: 0,
    retry: null, // the pending reconnect attempt
    retryDelay: 1000,
    seenMain: 0, // how many messages of the room the reader has scrolled past
  };

  // ----- Recalled commands, per room, kept across reloads -----

  const MAX_RECALLED = 100;

  function recallKey(room) {
    return "yetibot.recall." + room;
  }

  function loadRecall(room) {
    try {
      const saved = JSON.parse(localStorage.getItem(recallKey(room)) || "[]");
      state.history = Array.isArray(saved) ? saved.filter((t) => typeof t === "string").slice(-MAX_RECALLED) : [];
    } catch (_) {
      state.history = [];
    }
    state.historyAt = state.history.length;
  }

  function remember(text) {
    if (state.history[state.history.length - 1] !== text) state.history.push(text);
    state.history = state.history.slice(-MAX_RECALLED);
    state.historyAt = state.history.length;
    try {
      localStorage.setItem(recallKey(state.room), JSON.stringify(state.history));
    } catch (_) {
      // Storage full or off: recall still works until the page reloads.
    }
  }

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children || []) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  // ----- Markdown, as elements -----

  function safeUrl(url) {
    return /^https?:\/\//i.test(url) ? url : null;
  }

  // One pass over the text: the earliest match of any rule wins, then the scan goes on
  // after it. Every repetition is bounded, so no input makes a rule backtrack far.
  const INLINE = /`([^`\n]{1,500})`|\*\*([^*\n]{1,500})\*\*|__([^_\n]{1,500})__|~~([^~\n]{1,500})~~|\*([^*\s][^*\n]{0,500})\*|(?<![\w])_([^_\s][^_\n]{0,500})_(?![\w])|\[([^\]\n]{1,500})\]\(([^)\s]{1,512})\)|<?(https?:\/\/[^\s<>]{0,2048}[^\s<>.,;:!?)\]'"])>?/g;

  function inline(text) {
    const out = [];
    const re = new RegExp(INLINE.source, "g");
    let at = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > at) out.push(document.createTextNode(text.slice(at, m.index)));
      at = m.index + m[0].length;
      if (m[1] !== undefined) out.push(el("code", { text: m[1] }));
      else if (m[2] !== undefined) out.push(el("strong", {}, inline(m[2])));
      else if (m[3] !== undefined) out.push(el("strong", {}, inline(m[3])));
      else if (m[4] !== undefined) out.push(el("del", {}, inline(m[4])));
      else if (m[5] !== undefined) out.push(el("em", {}, inline(m[5])));
      else if (m[6] !== undefined) out.push(el("em", {}, inline(m[6])));
      else if (m[7] !== undefined) {
        const href = safeUrl(m[8]);
        out.push(
          href
            ? el("a", { href, rel: "noopener noreferrer", target: "_blank" }, inline(m[7]))
            : document.createTextNode(m[0])
        );
      } else if (m[9] !== undefined) {
        out.push(el("a", { href: m[9], rel: "noopener noreferrer", target: "_blank", text: m[9] }));
      }
      if (m[0].length === 0) re.lastIndex += 1;
    }
    if (at < text.length) out.push(document.createTextNode(text.slice(at)));
    return out;
  }

  function splitRow(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
    return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
  }

  // A table's separator row, checked cell by cell (a single pattern would backtrack).
  function isTableRule(line) {
    let row = line.trim();
    if (!row.includes("-")) return false;
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|")) row = row.slice(0, -1);
    return row.split("|").every((cell) => /^:?-{2,}:?$/.test(cell.trim()));
  }

  // Longer texts are shown as they are: Markdown is for answers, not for whole files.
  const MAX_MARKDOWN_CHARS = 20000;

  function markdown(text) {
    if (text.length > MAX_MARKDOWN_CHARS) return [el("pre", { class: "plain", text })];
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const blocks = [];
    let paragraph = [];
    const flush = () => {
      if (paragraph.length === 0) return;
      const p = el("p");
      paragraph.forEach((line, i) => {
        if (i > 0) p.append(el("br"));
        p.append(...inline(line));
      });
      blocks.push(p);
      paragraph = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = /^\s*```\s*([\w+-]*)\s*$/.exec(line);
      if (fence) {
        flush();
        const code = [];
        i++;
        while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
        blocks.push(el("pre", {}, [el("code", { text: code.join("\n"), "data-lang": fence[1] || null })]));
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        flush();
        const level = Math.min(6, heading[1].length + 2);
        blocks.push(el("h" + level, {}, inline(heading[2])));
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && isTableRule(lines[i + 1])) {
        flush();
        const head = splitRow(line);
        const rows = [];
        i += 2;
        while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") rows.push(splitRow(lines[i++]));
        i--;
        const table = el("table", {}, [
          el("thead", {}, [el("tr", {}, head.map((cell) => el("th", { scope: "col" }, inline(cell))))]),
          el("tbody", {}, rows.map((row) => el("tr", {}, head.map((_, c) => el("td", {}, inline(row[c] || "")))))),
        ]);
        blocks.push(table);
        continue;
      }
      const bullet = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
      if (bullet) {
        flush();
        const ordered = /\d/.test(bullet[1]);
        const items = [];
        while (i < lines.length) {
          const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
          if (!item || /\d/.test(item[1]) !== ordered) break;
          items.push(el("li", {}, inline(item[2])));
          i++;
        }
        i--;
        blocks.push(el(ordered ? "ol" : "ul", {}, items));
        continue;
      }
      const quote = /^\s*>\s?(.*)$/.exec(line);
      if (quote) {
        flush();
        blocks.push(el("blockquote", {}, inline(quote[1])));
        continue;
      }
      if (line.trim() === "") flush();
      else paragraph.push(line);
    }
    flush();
    return blocks;
  }

  // ----- Rendering -----

  function isMedia(url) {
    return /\.(mp4|webm|mov)(\?|#|$)/i.test(url) ? "video" : "image";
  }

  // Rendered messages by where they are shown and their ID, reused while nothing about the
  // message changed, so that an update redraws one message rather than all of them.
  const rendered = new Map();

  function shown(where, m) {
    const key = [m.revision, m.replies, (m.reactions || []).join(","), state.operator && state.operator.id].join("|");
    const cached = rendered.get(where + ":" + m.id);
    if (cached && cached.key === key) return cached.node;
    const node = renderMessage(m);
    rendered.set(where + ":" + m.id, { key, node });
    return node;
  }

  function renderMessage(m) {
    const classes = ["message", m.author.bot ? "bot" : "user", m.role];
    if (m.error) classes.push("error");
    if (m.restored) classes.push("restored");
    // What the operator typed is shown exactly as typed; the bot's answers are Markdown.
    const body =
      m.role === "user"
        ? el("div", { class: "body typed", text: m.text || "" })
        : el("div", { class: "body" }, m.text ? markdown(m.text) : []);
    if (m.files && m.files.length > 0) {
      body.append(el("div", { class: "files-sent", text: "📎 " + m.files.join(", ") }));
    }
    if (m.media && safeUrl(m.media)) {
      body.append(
        isMedia(m.media) === "video"
          ? el("video", { src: m.media, controls: true, preload: "metadata" })
          : el("img", { src: m.media, alt: "Image from the answer", loading: "lazy" })
      );
    }
    if (m.attachment) {
      const href =
        "/api/messages/" + encodeURIComponent(m.id) + "/" + encodeURIComponent(m.attachment.name);
      if (String(m.attachment.media_type || "").startsWith("image/")) {
        body.append(
          el("a", { class: "generated", href, target: "_blank", rel: "noopener" }, [
            el("img", { src: href, alt: "Image " + m.attachment.name, loading: "lazy" }),
          ])
        );
      } else {
        body.append(
          el("a", {
            class: "download",
            href,
            download: m.attachment.name,
            text: "Download " + m.attachment.name + " (" + m.attachment.bytes + " bytes)",
          })
        );
      }
    }
    const children = [
      el("div", { class: "meta" }, [
        el("span", { class: "author", text: m.author.name }),
        m.revision > 0 && m.role === "user" ? el("span", { text: "(edited)" }) : null,
        m.restored ? el("span", { text: "(from history)" }) : null,
      ]),
      body,
    ];
    if (m.caption) children.push(el("div", { class: "caption", text: m.caption }));
    if (m.reactions && m.reactions.length > 0) {
      children.push(
        el("div", { class: "reactions", "aria-label": "Reactions" }, m.reactions.map((r) => el("span", { class: "reaction", text: r })))
      );
    }
    if (m.buttons.length > 0 && !m.restored) {
      children.push(
        el(
          "div",
          { class: "actions", role: "group", "aria-label": "Answer actions" },
          m.buttons.map((b) =>
            el("button", {
              type: "button",
              text: b.label,
              "data-action": b.action,
              onclick: () => press(m.id, b),
            })
          )
        )
      );
    }
    const links = [];
    if (m.restored) {
      // Earlier conversation from the history store: shown, nothing more.
    } else if (!m.thread && m.role !== "status") {
      const label = m.replies > 0 ? "Thread (" + m.replies + ")" : "Reply in thread";
      links.push(el("button", { type: "button", text: label, onclick: () => openThread(m.id) }));
    }
    if (m.author.bot && m.role !== "status" && !m.restored) {
      links.push(
        el("button", {
          type: "button",
          text: "Delete ❌",
          title: "React with ❌ to delete this message",
          onclick: () => react(m.id, "❌"),
        })
      );
    }
    if (m.role === "user" && state.operator && m.author.id === state.operator.id) {
      links.push(el("button", { type: "button", text: "Edit", onclick: (e) => startEdit(e.target, m) }));
    }
    if (links.length > 0) children.push(el("div", { class: "links" }, links));
    return el("li", { class: classes.join(" "), "data-id": m.id, "data-role": m.role }, children);
  }

  function render() {
    // An open edit box would be lost by a redraw: draw once it closes.
    const editing = document.activeElement && document.activeElement.classList.contains("edit-box");
    if (editing) {
      state.redraw = true;
      return;
    }
    state.redraw = false;
    const rooms = $("rooms");
    rooms.replaceChildren(
      ...state.rooms.map((name) =>
        el("li", {}, [
          el("button", {
            type: "button",
            text: "#" + name,
            "aria-current": name === state.room ? "true" : "false",
            onclick: () => switchRoom(name),
          }),
        ])
      )
    );
    $("room-title").textContent = "#" + state.room;
    const all = [...state.messages.values()];
    const main = $("messages");
    const stick = atBottom(main);
    const top = all.filter((m) => !m.thread);
    main.replaceChildren(...top.map((m) => shown("main", m)));
    if (stick) {
      main.scrollTop = main.scrollHeight;
      state.seenMain = top.length;
    }
    // Replies that arrived while the reader was scrolled up: a marker that scrolls down.
    $("new-messages").hidden = stick || top.length <= state.seenMain;
    const panel = $("thread");
    if (state.thread && state.messages.has(state.thread)) {
      panel.hidden = false;
      const list = $("thread-messages");
      list.replaceChildren(
        ...[state.messages.get(state.thread), ...all.filter((m) => m.thread === state.thread)].map((m) => shown("thread", m))
      );
      list.scrollTop = list.scrollHeight;
    } else {
      panel.hidden = true;
    }
  }

  function atBottom(list) {
    return list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  }

  // ----- Server -----

  function showError(text) {
    $("error").textContent = text || "";
  }

  async function api(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(data.error || "request failed (" + response.status + ")");
      error.status = response.status;
      throw error;
    }
    return data;
  }

  async function load() {
    const snapshot = await api("GET", "/api/state?room=" + encodeURIComponent(state.room));
    state.rooms = snapshot.rooms;
    state.operator = snapshot.operator;
    state.seq = snapshot.seq;
    state.epoch = snapshot.epoch;
    state.messages = new Map(snapshot.messages.map((m) => [m.id, m]));
    state.seenMain = 0;
    rendered.clear();
    render();
    const main = $("messages");
    main.scrollTop = main.scrollHeight;
    state.seenMain = [...state.messages.values()].filter((m) => !m.thread).length;
    $("new-messages").hidden = true;
    showError("");
    listen();
  }

  // The bot went away (a restart, a network hiccup) and the browser gave up on the event
  // stream: try again, a little later each time, until the state loads; a changed token
  // is said plainly, since no retry can fix it.
  function reconnectSoon() {
    if (state.retry) return;
    $("connection").textContent = "reconnecting…";
    state.retry = setTimeout(async () => {
      state.retry = null;
      try {
        await load();
        state.retryDelay = 1000;
      } catch (e) {
        if (e.status === 401) {
          showError("The console's access token changed. Open the link the bot printed, or run `yetibot console-url`.");
        }
        state.retryDelay = Math.min(state.retryDelay * 2, 15000);
        reconnectSoon();
      }
    }, state.retryDelay);
  }

  function apply(update) {
    if (update.type === "room") {
      if (!state.rooms.includes(update.name)) state.rooms.push(update.name);
    } else if (update.type === "message") {
      if (update.message.room === state.room) state.messages.set(update.message.id, update.message);
    } else if (update.type === "deleted") {
      state.messages.delete(update.id);
      rendered.delete("main:" + update.id);
      rendered.delete("thread:" + update.id);
    }
  }

  function listen() {
    if (state.source) state.source.close();
    const source = new EventSource("/api/events?after=" + state.seq);
    state.source = source;
    source.addEventListener("hello", (event) => {
      let hello = {};
      try {
        hello = JSON.parse(event.data);
      } catch (_) {
        // A hello without data is still a connection.
      }
      if (hello.epoch && state.epoch && hello.epoch !== state.epoch) {
        // The bot restarted: its updates are numbered anew, so start from its state.
        load().catch(() => reconnectSoon());
        return;
      }
      $("connection").textContent = "connected";
      showError("");
    });
    source.addEventListener("full", (event) => {
      let reason = "too many console pages are open; close one";
      try {
        reason = JSON.parse(event.data).error || reason;
      } catch (_) {
        // Keep the general reason.
      }
      $("connection").textContent = "waiting for a free connection…";
      showError(reason);
    });
    source.addEventListener("update", (event) => {
      state.seq = Number(event.lastEventId) || state.seq;
      try {
        apply(JSON.parse(event.data));
      } catch (_) {
        return;
      }
      render();
    });
    source.addEventListener("reset", () => {
      load().catch((e) => showError(e.message));
    });
    source.onerror = () => {
      // The browser reconnects by itself and resumes from the last update it saw, unless
      // the answer was not an event stream at all (a refusal): then the page tries itself.
      $("connection").textContent = "reconnecting…";
      if (source.readyState === EventSource.CLOSED) reconnectSoon();
    };
  }

  async function send(text, thread, attachments) {
    showError("");
    await api("POST", "/api/messages", { room: state.room, thread: thread || null, text, attachments });
  }

  // Uploads one image for the next message: its ID, which the message then names.
  async function upload(file) {
    const response = await fetch("/api/uploads?name=" + encodeURIComponent(file.name), {
      method: "POST",
      headers: { "Content-Type": file.type || "application/octet-stream" },
      body: file,
      credentials: "same-origin",
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(file.name + ": " + (data.error || "upload failed (" + response.status + ")"));
    return data.id;
  }

  async function press(id, button) {
    showError("");
    try {
      await api("POST", "/api/press", { message: id, action: button.action, token: button.token });
    } catch (e) {
      showError(e.message);
    }
  }

  async function react(id, emoji) {
    showError("");
    try {
      await api("POST", "/api/messages/" + encodeURIComponent(id) + "/react", { emoji });
    } catch (e) {
      showError(e.message);
    }
  }

  function startEdit(target, m) {
    const box = el("textarea", { class: "edit-box", rows: 2, "aria-label": "Edit the message" });
    box.value = m.text;
    box.addEventListener("blur", () => {
      if (state.redraw) setTimeout(render, 0);
    });
    box.addEventListener("keydown", async (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        try {
          await api("POST", "/api/messages/" + encodeURIComponent(m.id) + "/edit", { text: box.value });
          box.remove();
          render();
        } catch (e) {
          showError(e.message);
        }
      } else if (event.key === "Escape") {
        box.remove();
        render();
      }
    });
    target.closest(".message").append(box);
    box.focus();
  }

  function switchRoom(name) {
    state.room = name;
    state.thread = null;
    loadRecall(name);
    load().catch((e) => showError(e.message));
  }

  function openThread(id) {
    state.thread = id;
    render();
    $("thread-text").focus();
  }

  function onFirstLine(box) {
    return !box.value.slice(0, box.selectionStart).includes("\n");
  }

  function onLastLine(box) {
    return !box.value.slice(box.selectionEnd).includes("\n");
  }

  function composer(form, box, thread) {
    // Images uploaded for the next message: { id, name }.
    let pending = [];
    const picker = form.querySelector('input[type="file"]');
    const list = form.querySelector(".files");
    const showPending = () => {
      list.replaceChildren(
        ...pending.map((file, i) =>
          el("li", {}, [
            el("span", { text: file.name }),
            el("button", {
              type: "button",
              "aria-label": "Remove " + file.name,
              text: "×",
              onclick: () => {
                pending.splice(i, 1);
                showPending();
              },
            }),
          ])
        )
      );
    };
    const attach = async (files) => {
      showError("");
      for (const file of files) {
        try {
          pending.push({ id: await upload(file), name: file.name || "pasted image" });
        } catch (e) {
          showError(e.message);
        }
      }
      showPending();
    };
    picker.addEventListener("change", async () => {
      const files = [...picker.files];
      picker.value = "";
      await attach(files);
    });
    // Images pasted into the command box are attached too; pasted text stays text.
    box.addEventListener("paste", (event) => {
      const images = [...((event.clipboardData && event.clipboardData.files) || [])].filter((f) =>
        /^image\//.test(f.type)
      );
      if (images.length === 0) return;
      event.preventDefault();
      attach(images);
    });
    const submit = async () => {
      const text = box.value;
      if (text.trim() === "") return;
      try {
        await send(text, thread(), pending.map((file) => file.id));
        remember(text);
        box.value = "";
        pending = [];
        showPending();
      } catch (e) {
        showError(e.message);
      }
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      submit();
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        submit();
      } else if (event.key === "ArrowUp" && onFirstLine(box) && state.historyAt > 0) {
        // One press per step: on the first line, ↑ always recalls the previous command.
        event.preventDefault();
        state.historyAt -= 1;
        box.value = state.history[state.historyAt];
        box.setSelectionRange(0, 0);
      } else if (event.key === "ArrowDown" && onLastLine(box) && state.historyAt < state.history.length) {
        event.preventDefault();
        state.historyAt += 1;
        box.value = state.history[state.historyAt] || "";
        box.setSelectionRange(box.value.length, box.value.length);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    composer($("composer"), $("composer-text"), () => null);
    composer($("thread-composer"), $("thread-text"), () => state.thread);
    $("thread-close").addEventListener("click", () => {
      state.thread = null;
      render();
    });
    const main = $("messages");
    main.addEventListener("scroll", () => {
      if (atBottom(main)) {
        state.seenMain = [...state.messages.values()].filter((m) => !m.thread).length;
        $("new-messages").hidden = true;
      }
    });
    $("new-messages").addEventListener("click", () => {
      main.scrollTop = main.scrollHeight;
      state.seenMain = [...state.messages.values()].filter((m) => !m.thread).length;
      $("new-messages").hidden = true;
    });
    loadRecall(state.room);
    $("new-room").addEventListener("submit", async (event) => {
      event.preventDefault();
      const name = $("new-room-name").value.trim();
      if (!name) return;
      try {
        await api("POST", "/api/rooms", { name });
        $("new-room-name").value = "";
        switchRoom(name);
      } catch (e) {
        showError(e.message);
      }
    });
    load().catch((e) => showError(e.message));
    $("composer-text").focus();
  });
})();
