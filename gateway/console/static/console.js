// Draws each chart from the JSON the page carries beside it ({"x": [...], "series": [[label, values], ...]}).
// A second series on its own scale (tokens and cost) gets a right-hand axis; p50/p99 share one.
(function () {
  "use strict";
  var colours = ["#0a58ca", "#d63384", "#198754", "#fd7e14"];
  function tick(u, vals) {
    return vals.map(function (v) {
      if (v === 0) { return "0"; }
      if (Math.abs(v) < 0.01) { return v.toExponential(1); }
      return Math.abs(v) < 1 ? v.toPrecision(2) : v.toLocaleString();
    });
  }
  function draw(el) {
    var data = JSON.parse(document.getElementById(el.dataset.chart).textContent);
    var shared = data.series.length > 1 && data.series[0][0] === "p50";
    var series = [{}], columns = [data.x];
    data.series.forEach(function (s, i) {
      series.push({label: s[0], stroke: colours[i % colours.length], width: 2,
                   points: {show: true, size: 4}, scale: i && !shared ? "y" + i : "y"});
      columns.push(s[1]);
    });
    var axes = [{space: 80}, {scale: "y", values: tick, size: 60}];
    if (data.series.length > 1 && !shared) {
      axes.push({scale: "y1", side: 1, grid: {show: false}, values: tick, size: 60});
    }
    var scales = {x: {time: true}};
    if (/rate$/.test(data.series[0][0])) { scales.y = {range: [0, 1]}; }  // error and hit rates: fractions
    var width = Math.max(260, el.clientWidth || 360);
    el.innerHTML = "";
    new uPlot({width: width, height: 180, series: series, axes: axes, scales: scales}, columns, el);
  }
  function drawAll() {
    if (typeof uPlot === "undefined") { return; }
    document.querySelectorAll("[data-chart]").forEach(draw);
  }
  window.addEventListener("load", drawAll);
  var timer;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(drawAll, 200); });
})();
