// Sorting and filtering for the replay table. Without JS the table is complete and plain.
(function () {
  "use strict";
  var table = document.getElementById("replay-table");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var heads = table.tHead.rows[0].cells;
  function key(row, col) {
    var cell = row.cells[col];
    return (cell.getAttribute("data-v") || cell.textContent || "").trim();
  }
  Array.prototype.forEach.call(heads, function (th, col) {
    var btn = document.createElement("button");
    btn.type = "button";
    btn.textContent = th.textContent;
    th.textContent = "";
    th.appendChild(btn);
    th.setAttribute("aria-sort", "none");
    btn.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var sorted = rows.slice().sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        var c = x < y ? -1 : (x > y ? 1 : 0);
        return asc ? c : -c;
      });
      sorted.forEach(function (r) { body.appendChild(r); });
    });
  });
  var text = document.getElementById("f-text");
  var overall = document.getElementById("f-overall");
  var count = document.getElementById("f-count");
  function apply() {
    var q = text.value.toLowerCase(), o = overall.value, shown = 0;
    rows.forEach(function (r) {
      var ok = key(r, 0).toLowerCase().indexOf(q) >= 0 && (!o || r.getAttribute("data-overall") === o);
      r.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " shown";
  }
  text.addEventListener("input", apply);
  overall.addEventListener("change", apply);
  document.getElementById("filters").hidden = false;
  apply();
})();
