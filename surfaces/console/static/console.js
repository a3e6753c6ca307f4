// harnessd console: live approvals, lists, job logs and run updates over
// Server-Sent Events. Text goes in with textContent only, never as HTML;
// what is inserted whole (new approval cards, refreshed list rows) is the
// console's own server-rendered (escaped) page, parsed, never a string
// assigned to innerHTML.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var body = document.body;

  // Fetches this console's page at url and hands over the parsed document.
  var fetchPage = function (url, then) {
    fetch(url, {credentials: "same-origin", headers: {"Accept": "text/html"}}).then(function (r) {
      if (!r.ok) { throw new Error(r.status); }
      return r.text();
    }).then(function (html) {
      then(new DOMParser().parseFromString(html, "text/html"));
    }).catch(function () { /* the next event tries again */ });
  };

  // The pending approvals: the title's count, the nav badge, new cards on
  // the approvals page, and a notification when the person asked for one.
  var setPending = function (n) {
    document.title = (n > 0 ? "(" + n + ") " : "") + body.getAttribute("data-title");
    var badge = document.getElementById("pending-count");
    if (badge) {
      badge.textContent = String(n);
      badge.className = n > 0 ? "count" : "count zero";
    }
  };
  var addCards = function (ids) {
    var list = document.querySelector("[data-live-approvals]");
    if (!list) { return; }
    var missing = ids.filter(function (id) { return !document.getElementById("approval-" + id); });
    if (missing.length === 0) { return; }
    fetchPage("/ui/approvals", function (doc) {
      missing.forEach(function (id) {
        var card = doc.getElementById("approval-" + id);
        if (card && !document.getElementById("approval-" + id)) {
          list.insertBefore(document.importNode(card, true), list.firstChild);
        }
      });
      var none = document.getElementById("no-approvals");
      if (none && list.querySelector(".approval")) { none.remove(); }
    });
  };
  var notify = function (items) {
    if (!("Notification" in window) || Notification.permission !== "granted") { return; }
    items.forEach(function (a) {
      var n = new Notification("harnessd: approval requested", {body: a.operation + ": " + a.summary, tag: a.id});
      n.onclick = function () { window.focus(); location.href = "/ui/approvals#approval-" + a.id; };
    });
  };
  var button = document.getElementById("notify");
  if (button && "Notification" in window && Notification.permission === "default") {
    button.hidden = false;
    // Asked on a click only, never on load.
    button.addEventListener("click", function () {
      Notification.requestPermission().then(function (p) {
        button.hidden = p !== "default";
      });
    });
  }

  // A list (jobs, runs) refreshes its rows when the stream says it changed.
  var refreshing = null;
  var refreshList = function () {
    if (refreshing !== null) { return; }
    refreshing = setTimeout(function () {
      fetchPage(location.href, function (doc) {
        refreshing = null;
        var fresh = doc.getElementById("live-list");
        var old = document.getElementById("live-list");
        if (fresh && old) { old.replaceWith(document.importNode(fresh, true)); }
      });
    }, 300);
  };

  var live = body.getAttribute("data-live");
  if (live) {
    var es = new EventSource(live);
    es.addEventListener("approvals", function (ev) {
      var d = JSON.parse(ev.data);
      setPending(d.pending);
      addCards(d.ids);
      if (d["new"]) { notify(d["new"]); }
    });
    es.addEventListener("jobs", refreshList);
    es.addEventListener("runs", refreshList);
  }

  var logs = document.querySelector("[data-job-events]");
  if (logs) {
    var liveEl = document.getElementById("live");
    var js = new EventSource(logs.getAttribute("data-job-events"));
    var append = function (id) {
      return function (ev) {
        var pre = document.getElementById(id);
        pre.textContent += ev.data; // the chunk as written, newlines included
        pre.scrollTop = pre.scrollHeight;
      };
    };
    js.addEventListener("open", function () { liveEl.textContent = "live"; });
    js.addEventListener("stdout", append("stdout"));
    js.addEventListener("stderr", append("stderr"));
    js.addEventListener("end", function (ev) {
      js.close();
      liveEl.textContent = "ended: " + ev.data;
      var st = document.getElementById("job-state");
      if (st) { st.textContent = ev.data; st.className = "badge state-" + ev.data; }
      var cancel = document.getElementById("cancel-job");
      if (cancel) { cancel.form.remove(); }
    });
    js.addEventListener("failure", function (ev) { js.close(); liveEl.textContent = ev.data; });
  }
  var run = document.querySelector("[data-run-events]");
  if (run) {
    var rs = new EventSource(run.getAttribute("data-run-events"));
    var pending = null;
    rs.addEventListener("update", function () {
      if (pending === null) { pending = setTimeout(function () { location.reload(); }, 500); }
    });
    rs.addEventListener("end", function () { rs.close(); });
  }
});
