// An axe-style check of the page, written for etl-craft's UI: landmarks, names and labels,
// and text contrast (WCAG 2 AA). Evaluated in the page; returns a list of problems (empty: passed).
() => {
  const problems = [];
  const visible = (el) => {
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden") return false;
    const box = el.getBoundingClientRect();
    return box.width > 1 && box.height > 1;
  };
  const describe = (el) => `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : ""}`;

  // Landmarks and structure.
  if (!document.documentElement.lang) problems.push("html has no lang");
  if (!document.title.trim()) problems.push("the page has no title");
  if (document.querySelectorAll("main").length !== 1) problems.push("not exactly one main landmark");
  if (!document.querySelector("header")) problems.push("no banner (header)");
  if (!document.querySelector("footer")) problems.push("no contentinfo (footer)");
  if (document.querySelectorAll("h1").length !== 1) problems.push("not exactly one h1");
  const skip = document.querySelector("a.skip-link");
  if (!skip || skip.getAttribute("href") !== "#main") problems.push("no skip link to #main");
  const focusable = document.querySelector("a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex='-1'])");
  if (focusable !== skip) problems.push("the skip link is not the first thing to focus");
  if (document.querySelector(".who") && !document.querySelector("nav[aria-label]")) problems.push("no labelled navigation");
  const ids = new Set();
  for (const el of document.querySelectorAll("[id]")) {
    if (ids.has(el.id)) problems.push(`duplicate id ${el.id}`);
    ids.add(el.id);
  }

  // Every control has a label, every link and button a name, every image a text.
  for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
    const labelled = (el.id && document.querySelector(`label[for="${el.id}"]`)) || el.closest("label") || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!labelled) problems.push(`control without a label: ${describe(el)}`);
  }
  for (const el of document.querySelectorAll("a[href], button")) {
    if (!(el.textContent.trim() || el.getAttribute("aria-label") || el.querySelector("title"))) problems.push(`no accessible name: ${describe(el)}`);
  }
  for (const el of document.querySelectorAll("img, svg[role=img]")) {
    const named = el.getAttribute("alt") !== null || el.getAttribute("aria-label") || (el.getAttribute("aria-labelledby") && document.getElementById(el.getAttribute("aria-labelledby")));
    if (!named) problems.push(`image without a text: ${describe(el)}`);
  }
  for (const el of document.querySelectorAll("table")) {
    if (!el.querySelector("caption") && !el.getAttribute("aria-label")) problems.push(`table without a caption: ${describe(el)}`);
  }
  for (const el of document.querySelectorAll(".scroll, .graph-scroll")) {
    if (el.getAttribute("tabindex") !== "0" || !el.getAttribute("aria-label")) problems.push(`a scrolling region that keyboards can't reach: ${describe(el)}`);
  }

  // Contrast of every visible text against the first opaque background behind it.
  const rgba = (text) => {
    const m = text.match(/rgba?\(([^)]+)\)/);
    if (!m) return [0, 0, 0, 0];
    const parts = m[1].split(",").map((v) => parseFloat(v));
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  };
  const luminance = ([r, g, b]) => {
    const lin = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  };
  const background = (el) => {
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const colour = rgba(getComputedStyle(node).backgroundColor);
      if (colour[3] >= 0.99) return colour;
    }
    return [255, 255, 255, 1];
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!walker.currentNode.textContent.trim() || !el || seen.has(el) || el.closest("svg") || el.closest(".visually-hidden") || el.closest(".skip-link")) continue;
    seen.add(el);
    if (!visible(el)) continue;
    const style = getComputedStyle(el);
    const fg = rgba(style.color), bg = background(el);
    const [light, dark] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const ratio = (light + 0.05) / (dark + 0.05);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight, 10) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < needed) problems.push(`contrast ${ratio.toFixed(2)} < ${needed}: ${describe(el)} "${walker.currentNode.textContent.trim().slice(0, 30)}"`);
  }
  return problems;
}
