// Draws each chart from the JSON the page carries beside it ({"x": [...], "series": [[label, values], ...]}).
(function () {
  "use strict";
  var colours = ["#0a58ca", "#d63384", "#198754", "#fd7e14"];
  function draw(el) {
    var data = JSON.parse(document.getElementById(el.dataset.chart).textContent);
    var series = [{}], columns = [data.x];
    data.series.forEach(function (s, i) {
      series.push({label: s[0], stroke: colours[i % colours.length], width: 2, spanGaps: false, scale: i ? "y" + i : "y"});
      columns.push(s[1]);
    });
    var axes = [{}, {scale: "y"}];
    if (data.series.length > 1 && data.series[0][0] !== "p50") { axes.push({scale: "y1", side: 1, grid: {show: false}, size: 70,
      values: function (u, vals) { return vals.map(function (v) { return v === 0 ? "0" : v.toPrecision(2); }); }}); }
    else if (data.series.length > 1) { series[2].scale = "y"; }
    var width = Math.max(260, el.clientWidth || 360);
    el.innerHTML = "";
    new uPlot({width: width, height: 180, series: series, axes: axes, scales: {x: {time: true}}}, columns, el);
  }
  function drawAll() {
    if (typeof uPlot === "undefined") { return; }
    document.querySelectorAll("[data-chart]").forEach(draw);
  }
  window.addEventListener("load", drawAll);
  var timer;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(drawAll, 200); });
})();
