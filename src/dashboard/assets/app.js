// Pigeon dashboard behaviour that needs no server round trip: copy buttons, the navigation's Menu
// button and closing its groups, and the CSRF token on every htmx request. Loaded as a file (the pages' Content-Security-Policy allows no inline script).
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

  // The navigation: its groups open without a script (details); here a phone gets the Menu button,
  // and Escape, a click elsewhere or focus moving on closes what is open.
  document.addEventListener("DOMContentLoaded", () => {
    const nav = document.querySelector("nav.main");
    const toggle = nav?.querySelector(".nav-toggle");
    if (!nav || !toggle) return;
    const groups = () => [...nav.querySelectorAll("details[open]")];
    const setMenu = (open) => toggle.setAttribute("aria-expanded", String(open));
    const menuOpen = () => toggle.getAttribute("aria-expanded") === "true" && toggle.offsetParent !== null;
    toggle.hidden = false;
    toggle.addEventListener("click", () => setMenu(!menuOpen()));

    document.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      const open = groups();
      if (open.length > 0) {
        for (const group of open) {
          const inside = group.contains(document.activeElement);
          group.open = false;
          if (inside) group.querySelector("summary")?.focus();
        }
      } else if (menuOpen()) {
        setMenu(false);
        if (nav.contains(document.activeElement)) toggle.focus();
      }
    });
    document.addEventListener("click", (event) => {
      const target = event.target instanceof Node ? event.target : null;
      for (const group of groups()) if (!group.contains(target)) group.open = false;
      if (menuOpen() && !nav.contains(target)) setMenu(false);
    });
    nav.addEventListener("focusout", (event) => {
      // In the phone's menu a tap focuses the summary before its click lands: closing the group
      // above it then would move the tapped summary away, and the click would land outside the
      // menu and close it all. There the group above closes once the tapped one has opened.
      if (menuOpen()) return;
      const next = event.relatedTarget;
      if (!(next instanceof Node)) return;
      for (const group of groups()) if (!group.contains(next)) group.open = false;
    });
    for (const details of nav.querySelectorAll("details")) {
      details.addEventListener("toggle", () => {
        if (!details.open) return;
        for (const group of groups()) if (group !== details) group.open = false;
      });
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
