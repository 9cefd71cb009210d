// imgpress dashboard behaviour, loaded by every staff page (no inline script: the CSP forbids it).
// 1. Times in the browser's language, in UTC (named): <time datetime> and chart labels with data-t.
// 2. A confirmation before forms that carry data-confirm (e.g. Revoke) are submitted.
// 3. The live panel: polls the URL in data-live-src (and its sparklines, server-drawn HTML from
//    data-spark-src) every data-live-every seconds, and pauses after
//    data-live-pause seconds without a key press, click or scroll, so that an unattended tab lets the
//    staff session reach its idle timeout instead of keeping it alive for ever.
// 4. A refusal's "in N s" (data-countdown="N") counts down to "now", so the page says when to try again.
// 5. Chart steps: one Tab stop per chart, the arrow keys (and Home, End) move between its steps.
// 6. A table row with data-href (Top keys) opens that page when clicked anywhere on it; the link in
//    its first cell stays the way in for the keyboard and without script.
(() => {
  "use strict";
  // One time zone on every page: UTC, as the usage buckets, the charts' steps and their tables are;
  // each time says so, so a reader in Tokyo does not take 14:00 UTC for 14:00 at home.
  const dateTime = new Intl.DateTimeFormat(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
    timeZone: "UTC",
    timeZoneName: "short",
  });
  const date = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
  // Chart axis labels: as short as the locale writes them (11/18, 9 PM), so seven fit side by side on a
  // phone; the axis itself says UTC.
  const hour = new Intl.DateTimeFormat(undefined, { hour: "numeric", timeZone: "UTC" });
  const day = new Intl.DateTimeFormat(undefined, { month: "numeric", day: "numeric", timeZone: "UTC" });
  const month = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", timeZone: "UTC" });
  const clock = new Intl.DateTimeFormat(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    timeZone: "UTC",
    timeZoneName: "short",
  });
  const formats = { datetime: dateTime, date, hour, day, month };

  function localise(root) {
    for (const el of root.querySelectorAll("time[datetime]")) {
      const d = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(d.getTime())) continue;
      el.textContent = (formats[el.dataset.f] || dateTime).format(d);
      el.title = d.toISOString();
    }
    for (const el of root.querySelectorAll("[data-t]")) {
      const d = new Date(Number(el.dataset.t));
      if (Number.isNaN(d.getTime())) continue;
      const f = formats[el.dataset.f] || dateTime;
      el.textContent = f.format(d);
    }
  }

  // The nav scrolls sideways on a narrow screen: keep the focused link, and on load the current page's, in view.
  const nav = document.querySelector(".nav");
  if (nav) {
    nav.addEventListener("focusin", (event) => event.target.scrollIntoView({ block: "nearest", inline: "nearest" }));
    nav.querySelector("[aria-current]")?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const row = target?.closest("tr[data-href]");
    // A link or control inside the row does its own thing; selecting text to copy it opens nothing.
    if (!row || target.closest("a, button, input, select, label") || String(window.getSelection() ?? "") !== "") return;
    window.location.assign(row.dataset.href);
  });

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
  const decimal = new Intl.NumberFormat(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const writers = {
    int: (v) => number.format(v),
    decimal: (v) => decimal.format(v),
    mib: (v) => `${decimal.format(v / 1048576)} MiB`,
    uptime: (v) => {
      const s = Math.floor(v);
      const d = Math.floor(s / 86400);
      const h = Math.floor((s % 86400) / 3600);
      const m = Math.floor((s % 3600) / 60);
      return d > 0 ? `${d} d ${h} h` : h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${s % 60} s` : `${s} s`;
    },
    text: (v) => String(v),
  };

  function field(data, path) {
    return path.split(".").reduce((v, k) => (v == null ? undefined : v[k]), data);
  }

  function startLive(panel) {
    const src = panel.dataset.liveSrc;
    const every = Math.max(2, Number(panel.dataset.liveEvery) || 5) * 1000;
    const pauseMs = (Number(panel.dataset.livePause) || 1500) * 1000;
    const status = panel.querySelector("[data-live-status]");
    // The visible status changes at every poll; a screen reader hears only a change of state
    // (updating, unreachable, paused), not a new time every few seconds.
    const announce = panel.querySelector("[data-live-announce]");
    let state = "updating";
    function show(next, text, spoken) {
      if (status) status.textContent = text;
      if (announce && next !== state) announce.textContent = spoken || text;
      state = next;
    }
    let timer = 0;
    let busy = false;
    let paused = false;
    let lastInput = Date.now();

    function resume() {
      lastInput = Date.now();
      if (paused) {
        paused = false;
        panel.classList.remove("stale");
        if (!timer && !busy) tick();
      }
    }
    for (const type of ["keydown", "pointerdown", "scroll", "wheel", "touchstart"]) window.addEventListener(type, resume, { passive: true });

    async function tick() {
      timer = 0;
      if (Date.now() - lastInput > pauseMs) {
        paused = true;
        panel.classList.add("stale");
        show("paused", "paused while you are away: click or press a key to resume");
        return;
      }
      busy = true;
      try {
        const response = await fetch(src, { headers: { accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
        if (response.status === 401) {
          // The session ended: this page, loaded again, is answered with the sign-in page's address,
          // which brings staff back here once signed in (the server knows its own paths; this file does not).
          window.location.reload();
          return;
        }
        if (!response.ok) throw new Error(String(response.status));
        const data = await response.json();
        for (const el of panel.querySelectorAll("[data-live]")) {
          const value = field(data, el.dataset.live);
          if (value === undefined || value === null) continue;
          el.textContent = (writers[el.dataset.format] || writers.text)(value);
        }
        // The sparklines are drawn by the server (the last 10 minutes it keeps): fetched again as they are.
        const spark = panel.querySelector("[data-spark-src]");
        if (spark) {
          const drawn = await fetch(spark.dataset.sparkSrc, { credentials: "same-origin", cache: "no-store" });
          if (drawn.ok) spark.innerHTML = await drawn.text();
        }
        panel.classList.remove("stale");
        show("updating", `updated ${clock.format(new Date())}`, "live figures are updating again");
      } catch {
        panel.classList.add("stale");
        show("unreachable", "cannot reach the service; retrying");
      }
      busy = false;
      if (!document.hidden) timer = window.setTimeout(tick, every);
    }

    // Polling stops while the tab is hidden and resumes, at once, when it is shown again.
    document.addEventListener("visibilitychange", () => {
      if (document.hidden) {
        window.clearTimeout(timer);
        timer = 0;
      } else if (!timer && !busy && !paused) tick();
    });
    tick();
  }

  function countDown(el) {
    const end = Date.now() + Number(el.dataset.countdown) * 1000;
    if (!Number.isFinite(end)) return;
    const show = () => {
      const left = Math.ceil((end - Date.now()) / 1000);
      el.textContent = left > 0 ? `in ${left} s` : "now";
      if (left > 0) window.setTimeout(show, ((end - Date.now()) % 1000) + 20);
    };
    show();
  }

  // Without script every step of a chart is a Tab stop (hundreds on a page); with it, Tab enters a
  // chart once, on its latest step, and the arrow keys walk the steps (a roving tabindex).
  function rove(svg) {
    const steps = [...svg.querySelectorAll("g.step")];
    if (steps.length < 2) return;
    steps.forEach((step, i) => step.setAttribute("tabindex", i === steps.length - 1 ? "0" : "-1"));
    svg.addEventListener("keydown", (event) => {
      const at = steps.indexOf(event.target.closest("g.step"));
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: steps.length - 1 }[event.key];
      if (at < 0 || to === undefined || !steps[to]) return;
      event.preventDefault();
      steps[at].setAttribute("tabindex", "-1");
      steps[to].setAttribute("tabindex", "0");
      steps[to].focus();
    });
    // A tap or click on a step makes it the chart's Tab stop too.
    svg.addEventListener("focusin", (event) => {
      const step = event.target.closest("g.step");
      if (!step) return;
      for (const other of steps) other.setAttribute("tabindex", other === step ? "0" : "-1");
    });
  }

  // The outcome of the action that led here: focused, so a screen reader reads it (a status
  // present when the page loads is not announced) and the keyboard goes on from it.
  document.querySelector("[data-notice]")?.focus();
  localise(document);
  for (const panel of document.querySelectorAll("[data-live-src]")) startLive(panel);
  for (const el of document.querySelectorAll("[data-countdown]")) countDown(el);
  for (const svg of document.querySelectorAll("figure.chart svg")) rove(svg);
})();
