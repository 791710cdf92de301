// Test-only (tests/test_diagram.py): parse each Mermaid file with Mermaid's own parser, as a
// browser would (jsdom stands in for the DOM Mermaid's module expects), and print what the
// flowchart's database holds: node ids and label texts, subgraphs and their members, edges.
// Install: `npm ci --prefix tests/mermaid`. The product never runs Node.
import { JSDOM } from "jsdom";
import { readFileSync } from "node:fs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const name of ["DOMParser", "Element", "HTMLElement", "Node", "SVGElement"]) {
  if (!(name in globalThis)) globalThis[name] = dom.window[name];
}
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

const results = [];
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, "utf8");
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const db = diagram.db;
    results.push({
      file,
      ok: true,
      type: diagram.type,
      vertices: [...db.getVertices().values()].map((v) => ({ id: v.id, text: v.text })),
      subgraphs: db.getSubGraphs().map((s) => ({ id: s.id, title: s.title, nodes: s.nodes })),
      edges: db.getEdges().map((e) => ({ start: e.start, end: e.end, stroke: e.stroke })),
    });
  } catch (error) {
    results.push({ file, ok: false, error: String((error && error.message) || error) });
  }
}
console.log(JSON.stringify(results));
