// The in-page check that scripts/check-page.sh appends to a copy of a rendered page: it runs in
// headless Chromium after the page is laid out and writes its findings into
// a <pre> of id moebench-check ("OK ..." or one "FAIL ..." line a problem), which the script reads
// back from the dumped DOM. The page itself has no script; only the checked copy has this one.
//
// Expectations come in the query string, each optional:
//   line=N, bar=N, spread=N, stacked=N   exactly N plots of that kind
//   series-KIND=A,B                      every plot of that kind draws A or B series
//   id=NAME                              an element with that id exists (e.g. the missing section)
(function () {
  const problems = [];
  const params = new URLSearchParams(location.search);
  const fail = (what) => problems.push("FAIL " + what);
  const plots = Array.from(document.querySelectorAll("svg.plot"));
  const kinds = ["line", "bar", "spread", "stacked"];

  for (const kind of kinds) {
    if (!params.has(kind)) continue;
    const n = plots.filter((p) => p.dataset.kind === kind).length;
    if (String(n) !== params.get(kind)) fail(kind + " plots: " + n + ", expected " + params.get(kind));
  }
  for (const id of params.getAll("id"))
    if (!document.getElementById(id)) fail("no element #" + id);
  // Nothing fetched: a self-contained page loads no resource.
  const fetched = performance.getEntriesByType("resource").map((e) => e.name);
  if (fetched.length) fail("resources fetched: " + fetched.join(", "));

  const within = (inner, outer) =>
    inner.left >= outer.left - 1 && inner.right <= outer.right + 1 &&
    inner.top >= outer.top - 1 && inner.bottom <= outer.bottom + 1;
  const finite = (r) => [r.left, r.right, r.top, r.bottom].every(Number.isFinite);

  plots.forEach((svg, index) => {
    const name = svg.dataset.kind + " plot " + (index + 1) + " \"" + (svg.getAttribute("aria-label") || "") + "\"";
    const box = svg.getBoundingClientRect();
    if (!(box.width > 0 && box.height > 0)) fail(name + ": not laid out");
    // Series: each drawn series has points; their number is what the data holds and, where the
    // caller says, what it expects.
    // (A series may span several groups, such as the rows of one format in a spread chart.)
    const series = Array.from(svg.querySelectorAll("g.series"));
    const drawn = new Set(series.filter((g) => g.querySelector(".point")).map((g) => g.dataset.label)).size;
    const expect = Number(svg.dataset.expectSeries);
    if (!(expect > 0)) fail(name + ": no series in its data");
    if (drawn !== expect) fail(name + ": " + drawn + " series drawn with points, its data holds " + expect);
    const allowed = params.get("series-" + svg.dataset.kind);
    if (allowed && !allowed.split(",").includes(String(drawn)))
      fail(name + ": " + drawn + " series, expected " + allowed);
    for (const p of svg.querySelectorAll(".point")) {
      const r = p.getBoundingClientRect();
      if (!finite(r) || !within(r, box)) {
        fail(name + ": a point outside the plot (" + (p.textContent || p.outerHTML.slice(0, 80)) + ")");
        break;
      }
    }
    // Axes: ticks labelled on each axis the kind has.
    const axes = svg.dataset.kind === "line" || svg.dataset.kind === "bar"
      ? ["g.axis.x", "g.axis.y"] : ["g.axis.x.top", "g.axis.x.bottom"];
    for (const sel of axes) {
      const axis = svg.querySelector(sel);
      const ticks = axis ? axis.querySelectorAll("text.tick").length : 0;
      if (ticks < 2) fail(name + ": axis " + sel + " has " + ticks + " tick labels");
    }
    // Every text whole: inside the plot's box, not cut at an edge.
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      if (t.textContent.trim() && !within(r, box)) fail(name + ": text cut at the edge: \"" + t.textContent + "\"");
    }
  });

  const out = document.createElement("pre");
  out.id = "moebench-check";
  out.textContent = problems.length ? problems.join("\n") : "OK " + plots.length + " plots";
  document.body.appendChild(out);
})();
