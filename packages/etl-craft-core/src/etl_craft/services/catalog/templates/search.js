// The catalog's search box: ranks names over word starts over descriptions, and matches a
// subsequence ("slsord" finds "sales.orders"). The index comes from search-index.js, so it works
// from a folder opened as file:// and offline.
(function () {
  "use strict";
  var input = document.getElementById("search");
  var list = document.getElementById("search-results");
  var entries = window.ETL_CRAFT_SEARCH || [];
  if (!input || !list) { return; }
  var root = input.getAttribute("data-root") || "";

  function subsequence(needle, hay) {
    var at = 0;
    for (var i = 0; i < hay.length && at < needle.length; i++) {
      if (hay[i] === needle[at]) { at++; }
    }
    return at === needle.length;
  }

  function score(query, entry) {
    var name = entry.name.toLowerCase();
    var text = entry.text.toLowerCase();
    if (name === query) { return 0; }
    if (name.indexOf(query) === 0) { return 1; }
    if (name.split(/[._\s-]/).some(function (w) { return w.indexOf(query) === 0; })) { return 2; }
    if (name.indexOf(query) >= 0) { return 3; }
    if (subsequence(query, name)) { return 4; }
    if (text.indexOf(query) >= 0) { return 5; }
    return -1;
  }

  input.addEventListener("input", function () {
    var query = input.value.trim().toLowerCase();
    list.textContent = "";
    if (!query) { return; }
    entries
      .map(function (entry) { return { entry: entry, rank: score(query, entry) }; })
      .filter(function (hit) { return hit.rank >= 0; })
      .sort(function (a, b) { return a.rank - b.rank || a.entry.name.localeCompare(b.entry.name); })
      .slice(0, 20)
      .forEach(function (hit) {
        var item = document.createElement("li");
        var link = document.createElement("a");
        link.href = root + hit.entry.href;
        link.textContent = hit.entry.name;
        item.appendChild(link);
        list.appendChild(item);
      });
  });
})();
