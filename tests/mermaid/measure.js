// Test-only (tests/test_diagram.py): renders each <pre class="src"> with Mermaid's own renderer,
// puts the SVG in a column COLUMN px wide as GitHub shows a Markdown picture (Mermaid's
// `width="100%"` and `max-width` of its natural width: scaled down to the column, never up), and
// writes into <pre id="result"> as JSON, per picture: its scale, the smallest label's font size in
// screen pixels (computed size x scale), the visible edges, and each edge that passes through a
// box other than its own two ends (sampled every 2 px along the path, in screen coordinates).
async function measure() {
  mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
  const out = [];
  const sources = [...document.querySelectorAll("pre.src")];
  for (let i = 0; i < sources.length; i++) {
    const column = document.createElement("div");
    column.style.width = COLUMN + "px";
    document.body.appendChild(column);
    try {
      const { svg } = await mermaid.render("d" + i, sources[i].textContent);
      column.innerHTML = svg;
    } catch (e) {
      out.push({ error: String(e) });
      continue;
    }
    const el = column.querySelector("svg");
    const vb = el.viewBox.baseVal;
    const shown = el.getBoundingClientRect();
    const scale = shown.width / vb.width;
    const fonts = [];
    for (const t of el.querySelectorAll(".nodeLabel, .cluster-label span, .edgeLabel span, text")) {
      if (!t.textContent.trim()) continue;
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      fonts.push({ text: t.textContent.slice(0, 40), px: parseFloat(getComputedStyle(t).fontSize) * scale });
    }
    const boxes = [...el.querySelectorAll("g.node")].map((n) => ({ id: n.id, r: n.getBoundingClientRect() }));
    const crossings = [];
    let edges = 0;
    for (const path of el.querySelectorAll("path.flowchart-link")) {
      if (getComputedStyle(path).strokeOpacity === "0" || path.classList.contains("edge-thickness-invisible")) continue;
      edges += 1;
      const id = path.id || "";
      const length = path.getTotalLength();
      const ctm = path.getScreenCTM();
      for (const b of boxes) {
        const name = b.id.replace(/^d\d+-flowchart-/, "").replace(/-\d+$/, "");
        if (id.includes("_" + name + "_")) continue;  // its own ends: L_<from>_<to>_<n>
        for (let s = 0; s <= length; s += 2) {
          const p = path.getPointAtLength(s).matrixTransform(ctm);
          if (p.x > b.r.left + 1 && p.x < b.r.right - 1 && p.y > b.r.top + 1 && p.y < b.r.bottom - 1) {
            crossings.push({ edge: id, box: b.id });
            break;
          }
        }
      }
    }
    out.push({ width: vb.width, shown: shown.width, scale, minPx: Math.min(...fonts.map((f) => f.px)), smallest: fonts.sort((a, b) => a.px - b.px)[0], labels: fonts.length, nodes: boxes.length, edges, crossings });
  }
  document.getElementById("result").textContent = JSON.stringify(out);
}
measure();
