#include "output/html_assets.hpp"

namespace culprit::html {

const char* const kStyle = R"CSS(
:root { --root: #d62728; --ink: #1d2733; --muted: #5b6b7b; --line: #d5dce3; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); background: #fff; }
header { padding: 14px 24px; background: var(--ink); color: #fff; }
header h1 { margin: 0; font-size: 20px; }
header .run { color: #c9d3dd; font-size: 12.5px; margin-top: 4px; word-break: break-all; }
main { padding: 12px 24px 40px; max-width: 1500px; }
section { margin-top: 22px; }
h2 { font-size: 17px; margin: 0 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
.warning { background: #fff4e5; border: 1px solid #f0b35a; padding: 8px 12px; border-radius: 6px; }
.cards { display: flex; flex-wrap: wrap; gap: 14px; }
.card { border: 1px solid var(--line); border-left: 6px solid var(--root); border-radius: 8px; padding: 12px 16px;
        flex: 1 1 420px; max-width: 720px; background: #fff; box-shadow: 0 1px 3px rgba(0,0,0,.06); }
.card.none { border-left-color: #7a9a6a; }
.card h3 { margin: 0 0 6px; font-size: 16px; }
.card .class { display: inline-block; background: var(--root); color: #fff; border-radius: 4px; padding: 0 6px;
               font-size: 12.5px; margin-left: 6px; vertical-align: 2px; }
.card dl { display: grid; grid-template-columns: repeat(5, auto); gap: 2px 18px; margin: 6px 0; }
.card dt { color: var(--muted); font-size: 12px; }
.card dd { margin: 0; font-weight: 600; }
.card ul { margin: 6px 0; padding-left: 20px; }
.card pre { background: var(--bg); padding: 6px 8px; border-radius: 4px; font-size: 12.5px; white-space: pre-wrap;
            word-break: break-all; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 12.5px; color: var(--muted); margin-bottom: 6px; }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 12px; margin-right: 5px;
                       vertical-align: -2px; border-radius: 2px; background: var(--c); }
.map { max-width: 100%; height: auto; display: block; border: 1px solid var(--line); border-radius: 6px; background: #fbfcfd; }
.map .box { fill: #fff; stroke: #9aa7b4; }
.map .host { font-size: 11px; fill: var(--muted); font-weight: 600; }
.map .gpu { cursor: pointer; }
.map .gpu rect { stroke: #8795a1; stroke-width: 1; }
.map .gpu text { font-size: 8.5px; text-anchor: middle; fill: #223; pointer-events: none; }
.map .gpu text.long { font-size: 6.5px; }
.map .gpu.role-root rect { stroke: #4a0000; stroke-width: 2.5; }
.map .gpu.role-root text { fill: #fff; font-weight: 700; }
.map .gpu.on-chain rect, .map .node-cell.on-chain { stroke: #000; stroke-width: 3; }
.map .node-cell { stroke: #a8b3bd; stroke-width: .6; cursor: pointer; }
.map .node-cell.role-root { stroke: #4a0000; stroke-width: 2; }
.map .node-cell.hot { stroke: #000; stroke-width: 1.6; }
.map .row-label { font-size: 10.5px; fill: var(--muted); }
.map .wire { fill: none; stroke-width: 1.4; opacity: .75; }
.map .v-normal { stroke: #a3aeb9; } .map .arrow-normal { fill: #a3aeb9; }
.map .v-late_data { stroke: #3182bd; stroke-width: 2.2; } .map .arrow-late_data { fill: #3182bd; }
.map .v-no_credit { stroke: #8e44ad; stroke-width: 2.2; } .map .arrow-no_credit { fill: #8e44ad; }
.map .v-slow_flush { stroke: #e67e22; stroke-width: 2.6; } .map .arrow-slow_flush { fill: #e67e22; }
.map .v-slow_link { stroke: #d62728; stroke-width: 3; } .map .arrow-slow_link { fill: #d62728; }
.map .culprit-wire { stroke: #d62728; stroke-width: 5; opacity: 1; stroke-dasharray: 9 4; }
.map .arrow-culprit { fill: #d62728; }
.map .chain { fill: none; stroke-linejoin: round; stroke-linecap: round; pointer-events: none; }
.map .chain.default { stroke: #111; stroke-width: 1.6; stroke-dasharray: 4 3; opacity: .55; }
.map .chain.selected { stroke: #0b6bcb; stroke-width: 3.5; opacity: .9; }
#chain-info { min-height: 1.5em; margin: 6px 0; font-size: 13px; }
#chain-info b { color: #0b6bcb; }
.chains li { cursor: pointer; margin: 2px 0; } .chains li:hover { text-decoration: underline; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: var(--bg); position: sticky; top: 0; cursor: pointer; user-select: none; }
th.sorted-asc::after { content: " \25B2"; } th.sorted-desc::after { content: " \25BC"; }
td.t, th.t { text-align: left; }
tr.v-late_data td.verdict { color: #3182bd; font-weight: 600; }
tr.v-no_credit td.verdict { color: #8e44ad; font-weight: 600; }
tr.v-slow_flush td.verdict { color: #e67e22; font-weight: 600; }
tr.v-slow_link td.verdict { color: #d62728; font-weight: 700; }
tr.culprit-edge { background: #fff1f0; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.hint, .muted { color: var(--muted); font-size: 12.5px; }
details pre { background: var(--bg); padding: 8px; font-size: 12px; overflow-x: auto; }
)CSS";

const char* const kScript = R"JS(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("culprit-data").textContent);
  var index = new Map();
  data.ids.forEach(function (id, i) { index.set(id, i); });

  // A victim's chain: follow each GPU's next hop until its root (the /chains table's path).
  function chainOf(pid) {
    var path = [pid], seen = new Set([pid]), at = pid;
    for (;;) {
      var i = index.get(at);
      if (i === undefined) break;
      var next = data.next[i];
      if (next < 0 || seen.has(next)) break;
      path.push(next); seen.add(next); at = next;
    }
    return path;
  }

  // The elements a chain passes through in one map: GPU cells, or node cells in the overview.
  function stops(svg, path) {
    var out = [];
    path.forEach(function (pid) {
      var el = null;
      if (svg.id === "overview") {
        var i = index.get(pid);
        if (i !== undefined) el = svg.querySelector("#node-" + data.node[i]);
      } else {
        el = svg.querySelector("#gpu-" + pid);
      }
      if (el && (out.length === 0 || out[out.length - 1] !== el)) out.push(el);
    });
    return out;
  }

  function draw(path, kind, mark) {
    document.querySelectorAll("svg.map").forEach(function (svg) {
      var els = stops(svg, path);
      if (mark) els.forEach(function (el) { el.classList.add("on-chain"); });
      if (els.length < 2) return;
      var points = els.map(function (el) { return el.dataset.cx + "," + el.dataset.cy; }).join(" ");
      var line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
      line.setAttribute("points", points);
      line.setAttribute("class", "chain " + kind);
      svg.querySelector(".chain-layer").appendChild(line);
    });
  }

  function clearSelection() {
    document.querySelectorAll(".chain.selected").forEach(function (el) { el.remove(); });
    document.querySelectorAll(".on-chain").forEach(function (el) { el.classList.remove("on-chain"); });
  }

  function select(pid) {
    clearSelection();
    var path = chainOf(pid);
    draw(path, "selected", true);
    var info = document.getElementById("chain-info");
    var names = path.map(function (p) { var i = index.get(p); return i === undefined ? "process " + p : data.names[i]; });
    info.textContent = "";
    var b = document.createElement("b");
    b.textContent = path.length > 1 ? "Chain (" + (path.length - 1) + " hops): " : "No chain: ";
    info.appendChild(b);
    info.appendChild(document.createTextNode(
      path.length > 1 ? names.join(" \u2192 ") + " (root)" : names[0] + " waits on no root"));
    document.body.dataset.selectedChain = path.join(",");
  }

  data.defaults.forEach(function (victim) { draw(chainOf(victim), "default", false); });
  document.querySelectorAll("svg.map .gpu").forEach(function (el) {
    el.addEventListener("click", function () { select(Number(el.dataset.pid)); });
  });
  document.querySelectorAll("svg.map .node-cell").forEach(function (el) {
    el.addEventListener("click", function () { select(data.focus[Number(el.dataset.node)]); });
  });
  document.querySelectorAll("[data-chain-victim]").forEach(function (el) {
    el.addEventListener("click", function () { select(Number(el.dataset.chainVictim)); });
  });

  // Sortable tables: numbers by their data-v, text by its content.
  document.querySelectorAll("table.sortable th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var table = th.closest("table"), body = table.tBodies[0];
      var ascending = !th.classList.contains("sorted-asc");
      table.querySelectorAll("th").forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
      th.classList.add(ascending ? "sorted-asc" : "sorted-desc");
      var numeric = th.dataset.type === "num";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column], y = b.cells[column];
        var d = numeric ? Number(x.dataset.v) - Number(y.dataset.v) : x.textContent.localeCompare(y.textContent);
        return ascending ? d : -d;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  document.body.dataset.ready = "1";
  if (window.performance && performance.mark) performance.mark("culprit-ready");  // bench/bench_html_load.py
})();
)JS";

}  // namespace culprit::html
