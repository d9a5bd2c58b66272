// Progressive enhancement only: without JS every highlight keeps its title (hover) and
// its tags link to the annotation cards. With JS, focusing or clicking a highlight shows
// its annotations (copied from the cards, already escaped) in a panel that is announced.
(function () {
  "use strict";
  var panel = document.getElementById("inspector");
  if (!panel) { return; }
  var active = null;
  function show(mark) {
    if (active) { active.classList.remove("active"); }
    active = mark;
    mark.classList.add("active");
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "close ✕";
    close.addEventListener("click", function () { panel.hidden = true; mark.focus(); });
    panel.appendChild(close);
    var head = document.createElement("p");
    head.className = "k";
    head.textContent = "evidence for:";
    panel.appendChild(head);
    (mark.getAttribute("data-ann") || "").split(" ").forEach(function (id) {
      var card = id && document.getElementById(id);
      if (card) {
        var copy = card.cloneNode(true);
        copy.removeAttribute("id");
        panel.appendChild(copy);
      }
    });
    panel.hidden = false;
  }
  // print everything: collapsed explanations open before printing
  window.addEventListener("beforeprint", function () {
    var ds = document.querySelectorAll("details");
    for (var j = 0; j < ds.length; j++) { ds[j].open = true; }
  });
  var marks = document.querySelectorAll("mark.ev");
  for (var i = 0; i < marks.length; i++) {
    marks[i].setAttribute("role", "button");
    marks[i].setAttribute("aria-controls", "inspector");
    marks[i].addEventListener("click", function (e) { show(e.currentTarget); });
    marks[i].addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); show(e.currentTarget); }
      if (e.key === "Escape") { panel.hidden = true; }
    });
  }
})();
