// etl-craft web UI: progressive enhancement only; every page works without this script.
"use strict";

const REFRESH_MS = 3000;

// An element with data-refresh="URL" is replaced by what URL answers, every few seconds while the
// page is visible (the pipeline page's runs x tasks grid).
function refresh(element) {
  const url = element.dataset.refresh;
  let last = element.innerHTML;
  async function tick() {
    if (!document.hidden) {
      try {
        const answer = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
        if (answer.ok) {
          const html = await answer.text();
          if (html !== last) {
            element.innerHTML = html;
            last = html;
          }
        } else if (answer.status === 401 || answer.status === 403) {
          return; // signed out: stop asking
        }
      } catch (_) {
        // the server is restarting: try again at the next tick
      }
    }
    setTimeout(tick, REFRESH_MS);
  }
  setTimeout(tick, REFRESH_MS);
}

// A <pre data-follow="URL" data-offset="N"> appends the log that follows offset N until the attempt
// has ended and nothing more is left to read.
function follow(element) {
  const url = element.dataset.follow;
  let offset = Number(element.dataset.offset || "0");
  const status = document.getElementById("attempt-status");
  async function tick() {
    let again = true;
    let soon = false;
    try {
      const answer = await fetch(`${url}?offset=${offset}`, { credentials: "same-origin" });
      if (answer.ok) {
        const chunk = await answer.json();
        if (chunk.text) {
          const atBottom = element.scrollTop + element.clientHeight >= element.scrollHeight - 4;
          element.append(document.createTextNode(chunk.text));
          if (atBottom) element.scrollTop = element.scrollHeight;
        }
        offset = chunk.next_offset;
        if (status && status.textContent !== chunk.status) status.textContent = chunk.status;
        soon = Boolean(chunk.text);
        again = !chunk.finished || soon;
      } else {
        again = false;
      }
    } catch (_) {
      // try again at the next tick
    }
    if (again) setTimeout(tick, soon ? 50 : 1000);
  }
  tick();
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-refresh]").forEach(refresh);
  document.querySelectorAll("[data-follow]").forEach(follow);
});
