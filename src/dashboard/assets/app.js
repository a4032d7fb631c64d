// Pigeon dashboard behaviour that needs no server round trip: copy buttons, and the CSRF token on
// every htmx request. Loaded as a file (the pages' Content-Security-Policy allows no inline script).
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the file is served as a classic script, where this is not implied
  "use strict";
  const csrf = () => document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";

  document.addEventListener("htmx:configRequest", (event) => {
    event.detail.headers["X-CSRF-Token"] = csrf();
  });

  // Status badges (data-status-for="id") follow the server's changes while the page is open.
  document.addEventListener("DOMContentLoaded", () => {
    if (!document.querySelector("[data-live]") || !("EventSource" in window)) return;
    const source = new EventSource("/dashboard/live");
    source.addEventListener("status", (event) => {
      const { id, status } = JSON.parse(event.data);
      for (const badge of document.querySelectorAll(`[data-status-for="${Number(id)}"]`)) {
        badge.textContent = status;
        badge.className = `badge ${status}`;
      }
    });
  });

  // A time-zone picker still on its default starts at the browser's own zone.
  document.addEventListener("DOMContentLoaded", () => {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    for (const select of document.querySelectorAll('select[data-browser-zone="yes"]')) {
      if ([...select.options].some((o) => o.value === zone)) select.value = zone;
    }
  });

  document.addEventListener("click", async (event) => {
    const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    const source = document.getElementById(button.getAttribute("data-copy") ?? "");
    if (!source) return;
    const text = source.textContent ?? "";
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Without clipboard access (plain http on another host) select the text for Ctrl+C instead.
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection?.removeAllRanges();
      selection?.addRange(range);
    }
    const status = document.getElementById(`${button.getAttribute("data-copy")}-status`);
    if (status) status.textContent = "Copied";
  });
})();
