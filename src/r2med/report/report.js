/* r2med HTML report: sortable leaderboard, per-query scatter, query inspector. No dependencies. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";

  function esc(s) {
    return String(s === undefined || s === null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function el(id) { return document.getElementById(id); }
  function fmt(v, d) { return v === undefined || v === null ? "–" : Number(v).toFixed(d === undefined ? 4 : d); }
  function option(sel, value, label) {
    var o = document.createElement("option"); o.value = value; o.textContent = label; sel.appendChild(o); return o;
  }

  /* ---- sortable leaderboard -------------------------------------------------------------- */
  var sortState = { col: null, dir: 1 };
  function sortBy(col, dir) {
    var table = el("leaderboard"); if (!table) return;
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    if (dir === undefined) dir = sortState.col === col ? -sortState.dir : (col === 0 ? 1 : -1);
    sortState = { col: col, dir: dir };
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-value"), y = b.cells[col].getAttribute("data-value");
      if (col === 0) return dir * x.localeCompare(y);
      var fx = x === "" ? NaN : parseFloat(x), fy = y === "" ? NaN : parseFloat(y);
      if (isNaN(fx) && isNaN(fy)) return 0;
      if (isNaN(fx)) return 1;
      if (isNaN(fy)) return -1;
      return dir * (fx - fy);
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.classList.remove("sorted-asc", "sorted-desc");
      if (i === col) th.classList.add(dir > 0 ? "sorted-asc" : "sorted-desc");
    });
  }
  function initSort() {
    var table = el("leaderboard"); if (!table) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.addEventListener("click", function () { sortBy(i); });
    });
  }

  /* ---- scatter ------------------------------------------------------------------------------ */
  function pairs(sx, sy, task) {
    var out = [];
    var tasks = task === "__all__" ? data.tasks : [task];
    tasks.forEach(function (t) {
      var a = (data.perQuery[sx] || {})[t] || {}, b = (data.perQuery[sy] || {})[t] || {};
      var k = data.scatterScale || 1;  /* x100, as the bars and the leaderboard */
      Object.keys(a).forEach(function (q) { if (q in b) out.push({ task: t, qid: q, x: k * a[q], y: k * b[q] }); });
    });
    return out;
  }
  function svgEl(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function drawScatter() {
    var box = el("scatter"); box.innerHTML = "";
    var sx = el("scatter-x").value, sy = el("scatter-y").value, task = el("scatter-task").value;
    var pts = pairs(sx, sy, task);
    var W = 460, H = 460, P = 46;
    var svg = svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, id: "scatter-svg", role: "img" }, box);
    var ticks = data.scatterTicks || [0, 0.25, 0.5, 0.75, 1];  /* round ticks, computed with the page */
    var max = ticks[ticks.length - 1];
    function X(v) { return P + (v / max) * (W - P - 12); }
    function Y(v) { return H - P - (v / max) * (H - P - 12); }
    svgEl("line", { x1: P, y1: H - P, x2: W - 12, y2: H - P, "class": "axis" }, svg);
    svgEl("line", { x1: P, y1: H - P, x2: P, y2: 12, "class": "axis" }, svg);
    svgEl("line", { x1: X(0), y1: Y(0), x2: X(max), y2: Y(max), "class": "diag" }, svg);
    var decimals = 0;
    ticks.forEach(function (v) { var t = String(v).split(".")[1]; if (t) decimals = Math.max(decimals, t.length); });
    ticks.forEach(function (v) {
      var tx = svgEl("text", { x: X(v), y: H - P + 16, "text-anchor": "middle" }, svg);
      tx.textContent = v.toFixed(decimals);
      var ty = svgEl("text", { x: P - 6, y: Y(v) + 4, "text-anchor": "end" }, svg);
      ty.textContent = v.toFixed(decimals);
    });
    var unit = " (" + data.measureLabel + (data.scatterScale === 100 ? " x100)" : ")");
    var lx = svgEl("text", { x: (W + P) / 2, y: H - 8, "text-anchor": "middle", "class": "title" }, svg);
    lx.textContent = sx + unit;
    var ly = svgEl("text", { x: 14, y: (H - P) / 2, "text-anchor": "middle", "class": "title",
      transform: "rotate(-90 14 " + (H - P) / 2 + ")" }, svg); ly.textContent = sy + unit;
    var wins = 0, losses = 0, ties = 0;
    var byTask = task === "__all__" && data.tasks.length > 1;  /* all tasks: one colour per task, a legend */
    var legend = el("scatter-legend"); legend.innerHTML = "";
    if (byTask) {
      data.tasks.forEach(function (t) {
        var n = pts.filter(function (p) { return p.task === t; }).length;
        if (!n) return;
        var item = document.createElement("span"); item.className = "key"; item.setAttribute("data-task", t);
        item.innerHTML = '<i style="background:' + esc(data.taskColors[t]) + '"></i>' + esc(t) + " (" + n + ")";
        legend.appendChild(item);
      });
    }
    pts.forEach(function (p) {
      if (p.y > p.x + 1e-9) wins++; else if (p.y < p.x - 1e-9) losses++; else ties++;
      var colour = byTask ? data.taskColors[p.task] : data.colors[sy];
      var c = svgEl("circle", { cx: X(p.x), cy: Y(p.y), r: 4, "class": "pt", fill: colour || "#4e79a7",
        "data-task": p.task, "data-qid": p.qid }, svg);
      var t = svgEl("title", {}, c); t.textContent = p.task + " / " + p.qid + ": x " + fmt(p.x, 2) + ", y " + fmt(p.y, 2);
      c.addEventListener("click", function () { inspect(p.task, p.qid, true); });
    });
    el("scatter-summary").textContent = pts.length + " queries: " + sy + " wins " + wins + ", ties " + ties +
      ", loses " + losses;
  }
  function initScatter() {
    var sx = el("scatter-x"), sy = el("scatter-y"), st = el("scatter-task");
    data.systems.forEach(function (s) { option(sx, s, s); option(sy, s, s); });
    if (data.systems.length > 1) {  /* y: the next system that ran a task of the first (a combined page) */
      var first = data.perQuery[data.systems[0]] || {};
      var pair = data.systems.slice(1).filter(function (s) {
        return data.tasks.some(function (t) { return first[t] && (data.perQuery[s] || {})[t]; });
      });
      sy.value = pair.length ? pair[0] : data.systems[1];
    }
    option(st, "__all__", "all tasks");
    data.tasks.forEach(function (t) { option(st, t, t); });
    [sx, sy, st].forEach(function (s) { s.addEventListener("change", drawScatter); });
    drawScatter();
  }

  /* ---- inspector ----------------------------------------------------------------------------- */
  function queryIds(task) {
    return Object.keys(data.queries[task] || {}).sort(function (a, b) {
      return a.localeCompare(b, undefined, { numeric: true });
    });
  }
  function fillQueries(task, filter) {
    var sel = el("inspect-query"); sel.innerHTML = "";
    var f = (filter || "").toLowerCase();
    queryIds(task).forEach(function (q) {
      var text = (data.queries[task][q] || {}).text || "";
      if (f && q.toLowerCase().indexOf(f) < 0 && text.toLowerCase().indexOf(f) < 0) return;
      option(sel, q, q + (text ? " — " + text.slice(0, 70) : ""));
    });
  }
  function docText(task, did) { return ((data.docs || {})[task] || {})[did]; }
  function renderInspector(task, qid) {
    var box = el("inspector");
    var entry = (data.queries[task] || {})[qid];
    if (!entry) { box.innerHTML = "<p>No such query: " + esc(task) + " / " + esc(qid) + "</p>"; return; }
    var gold = entry.gold || null;
    var goldGrade = {};
    (gold || []).forEach(function (g) { goldGrade[g[0]] = g[1]; });
    var h = [];
    h.push('<h3 id="inspect-title">' + esc(task) + " / " + esc(qid) + "</h3>");
    var vals = data.systems.filter(function (s) { return data.perQuery[s] && data.perQuery[s][task]; })
      .map(function (s) { return "<b>" + esc(s) + "</b> " + fmt(data.perQuery[s][task][qid]); });
    h.push('<p class="qvals">' + esc(data.measureLabel) + ": " + vals.join(" · ") + "</p>");
    h.push('<div class="qtext" id="inspect-text">' + (entry.text ? esc(entry.text) :
      "<i>query text unavailable (pass --data-dir or --hub)</i>") + "</div>");
    Object.keys(entry.expansion || {}).forEach(function (s) {
      h.push("<h4>Expansion used by " + esc(s) + '</h4><div class="exp">' + esc(entry.expansion[s]) + "</div>");
    });
    if (gold === null) {
      h.push("<p><i>No judgments loaded: relevance marks and gold ranks need --data-dir or --hub.</i></p>");
    } else {
      var sysWithRun = data.systems.filter(function (s) { return (data.runs[s][task] || {})[qid]; });
      h.push("<h4>Gold documents (" + gold.length + ")</h4><div class='goldbox'><table id='gold-table'><tr><th>doc</th><th>grade</th>" +
        sysWithRun.map(function (s) { return "<th>rank in " + esc(s) + "</th>"; }).join("") + "<th>text</th></tr>");
      gold.forEach(function (g) {
        h.push("<tr><td>" + esc(g[0]) + "</td><td>" + g[1] + "</td>" + sysWithRun.map(function (s) {
          var r = ((data.goldRanks[s][task] || {})[qid] || {})[g[0]];
          return "<td>" + (r ? r : "–") + "</td>";
        }).join("") + '<td class="snip">' + esc((docText(task, g[0]) || "").slice(0, 240)) + "</td></tr>");
      });
      h.push("</table></div>");
    }
    h.push('<div class="systems">');
    data.systems.forEach(function (s) {
      var top = (data.runs[s][task] || {})[qid];
      if (!top) return;
      h.push('<div class="sysrun"><h4 style="color:' + esc(data.colors[s]) + '">' + esc(s) + " — top " + top.length +
        "</h4><table><tr><th>#</th><th>doc</th><th>score</th><th>rel</th><th>text</th></tr>");
      top.forEach(function (d, i) {
        var g = goldGrade[d[0]];
        var rel = gold === null ? "?" : g ? '<span class="mark">✓' + (g > 1 ? g : "") + "</span>" : "";
        h.push("<tr" + (g ? ' class="rel"' : "") + "><td>" + (i + 1) + "</td><td>" + esc(d[0]) + "</td><td>" +
          fmt(d[1], 3) + "</td><td>" + rel + '</td><td class="snip">' + esc((docText(task, d[0]) || "").slice(0, 200)) +
          "</td></tr>");
      });
      h.push("</table></div>");
    });
    h.push("</div>");
    box.innerHTML = h.join("");
  }
  function inspect(task, qid, scroll) {
    var st = el("inspect-task");
    if (st.value !== task) { st.value = task; el("inspect-find").value = ""; fillQueries(task); }
    el("inspect-query").value = qid;
    renderInspector(task, qid);
    if (scroll) el("sec-inspector").scrollIntoView();
  }
  function initInspector() {
    var st = el("inspect-task");
    data.tasks.forEach(function (t) { if (queryIds(t).length) option(st, t, t); });
    if (!st.options.length) { el("inspector").innerHTML = "<p>No queries.</p>"; return; }
    st.addEventListener("change", function () {
      fillQueries(st.value, el("inspect-find").value);
      var q = el("inspect-query").value; if (q) renderInspector(st.value, q);
    });
    el("inspect-query").addEventListener("change", function () { renderInspector(st.value, el("inspect-query").value); });
    el("inspect-find").addEventListener("input", function () {
      fillQueries(st.value, el("inspect-find").value);
      var q = el("inspect-query").value; if (q) renderInspector(st.value, q);
    });
    fillQueries(st.value);
    var hash = location.hash || "";
    try { hash = decodeURIComponent(hash); } catch (e) { hash = ""; }  /* a malformed link opens the default */
    var m = /^#q=([^/]+)\/(.+)$/.exec(hash);
    if (m && data.queries[m[1]] && data.queries[m[1]][m[2]]) inspect(m[1], m[2]);
    else renderInspector(st.value, el("inspect-query").value);
  }

  /* ---- per query group: one table per facet, chosen in a selector ---------------------------- */
  function showFacet(key) {
    Array.prototype.forEach.call(document.querySelectorAll("div.facet"), function (d) {
      d.hidden = d.getAttribute("data-key") !== key;
    });
  }
  function initFacets() {
    var sel = el("facet-key"); if (!sel) return;
    sel.addEventListener("change", function () { showFacet(sel.value); });
  }

  initSort();
  initFacets();
  initScatter();
  initInspector();
  window.r2medReport = { data: data, sortBy: sortBy, inspect: inspect, drawScatter: drawScatter, showFacet: showFacet };
})();
