// harnessd console: live job logs and run updates over Server-Sent Events.
// Text goes in with textContent only, never as HTML.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var logs = document.querySelector("[data-job-events]");
  if (logs) {
    var live = document.getElementById("live");
    var es = new EventSource(logs.getAttribute("data-job-events"));
    var append = function (id) {
      return function (ev) {
        var pre = document.getElementById(id);
        pre.textContent += ev.data; // the chunk as written, newlines included
        pre.scrollTop = pre.scrollHeight;
      };
    };
    es.addEventListener("open", function () { live.textContent = "live"; });
    es.addEventListener("stdout", append("stdout"));
    es.addEventListener("stderr", append("stderr"));
    es.addEventListener("end", function (ev) {
      es.close();
      live.textContent = "ended: " + ev.data;
      var st = document.getElementById("job-state");
      if (st) { st.textContent = ev.data; st.className = "badge state-" + ev.data; }
    });
    es.addEventListener("failure", function (ev) { es.close(); live.textContent = ev.data; });
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
