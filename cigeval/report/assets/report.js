// cigeval report: filters, sorts and pages the sample cards. No network, no libraries.
// Card HTML is rendered and escaped by cigeval (Python); this script only chooses which
// cards to show and puts the thumbnails (data URIs) into their <img data-img> tags.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("cg-data").textContent);
  var samples = data.samples;
  var images = data.images;
  var pageSize = data.page_size;
  var $ = function (id) { return document.getElementById(id); };
  var controls = ["cg-task", "cg-gen", "cg-status", "cg-min", "cg-max", "cg-sort", "cg-judge", "cg-text"];
  var page = 0;
  var shown = samples;

  function fill(select, values) {
    values.forEach(function (value) {
      var option = document.createElement("option");
      option.value = value;
      option.textContent = value;
      select.appendChild(option);
    });
  }
  fill($("cg-task"), data.tasks);
  fill($("cg-gen"), data.generators);
  data.judges.forEach(function (label, index) {
    var option = document.createElement("option");
    option.value = String(index);
    option.textContent = label;
    $("cg-judge").appendChild(option);
  });
  if (data.judges.length < 2) {
    $("cg-judge-box").style.display = "none";
    $("cg-sort").querySelector('option[value="spread"]').remove();
  }

  function number(id) {
    var text = $(id).value.trim();
    if (text === "") return null;
    var value = Number(text);
    return isNaN(value) ? null : value;
  }

  function apply() {
    var task = $("cg-task").value, gen = $("cg-gen").value, status = $("cg-status").value;
    var low = number("cg-min"), high = number("cg-max");
    var judge = Number($("cg-judge").value || 0);
    var text = $("cg-text").value.trim().toLowerCase();
    shown = samples.filter(function (s) {
      if (task && s.task !== task) return false;
      if (gen && s.generator !== gen) return false;
      if (status === "ok" && s.errors > 0) return false;
      if (status === "error" && s.errors === 0) return false;
      if (status === "degraded" && !s.degraded) return false;
      var score = s.scores[judge];
      if ((low !== null || high !== null) && (score === null || score === undefined)) return false;
      if (low !== null && score < low) return false;
      if (high !== null && score > high) return false;
      if (text && s.id.toLowerCase().indexOf(text) < 0 && s.search.indexOf(text) < 0) return false;
      return true;
    });
    var sort = $("cg-sort").value;
    var key = {
      "order": function (s) { return s.order; },
      "id": function (s) { return s.id; },
      "score-asc": function (s) { var v = s.scores[judge]; return v === null ? Infinity : v; },
      "score-desc": function (s) { var v = s.scores[judge]; return v === null ? Infinity : -v; },
      "spread": function (s) { return s.spread === null ? Infinity : -s.spread; },
      "task": function (s) { return s.task + "\u0000" + s.generator; },
      "generator": function (s) { return s.generator + "\u0000" + s.task; }
    }[sort];
    shown = shown.map(function (s) { return [key(s), s.order, s]; });
    shown.sort(function (a, b) {
      if (a[0] < b[0]) return -1;
      if (a[0] > b[0]) return 1;
      return a[1] - b[1];
    });
    shown = shown.map(function (entry) { return entry[2]; });
    page = 0;
    render();
  }

  function render() {
    var pages = Math.max(1, Math.ceil(shown.length / pageSize));
    page = Math.min(Math.max(0, page), pages - 1);
    var slice = shown.slice(page * pageSize, (page + 1) * pageSize);
    var box = $("cg-cards");
    box.innerHTML = slice.map(function (s) { return s.html; }).join("");
    box.querySelectorAll("img[data-img]").forEach(function (img) {
      var uri = images[img.getAttribute("data-img")];
      if (uri) img.src = uri;
    });
    $("cg-count").textContent = shown.length + " of " + samples.length + " samples";
    $("cg-page").textContent = "page " + (page + 1) + " of " + pages;
    $("cg-prev").disabled = page === 0;
    $("cg-next").disabled = page >= pages - 1;
  }

  controls.forEach(function (id) {
    $(id).addEventListener(id === "cg-min" || id === "cg-max" || id === "cg-text" ? "input" : "change", apply);
  });
  $("cg-prev").addEventListener("click", function () { page -= 1; render(); window.scrollTo(0, $("cg-samples").offsetTop); });
  $("cg-next").addEventListener("click", function () { page += 1; render(); window.scrollTo(0, $("cg-samples").offsetTop); });
  apply();
})();
