// The topology page: draws the graph from the server's elements, keeps the link figures
// live (fetches the state every data-refresh seconds) and highlights a chosen connection.
"use strict";
(function () {
  const box = document.getElementById("topology");
  const elements = JSON.parse(document.getElementById("graph-elements").textContent);
  let paths = JSON.parse(document.getElementById("graph-paths").textContent);
  const select = document.getElementById("connection-select");
  const info = document.getElementById("path-info");
  const started = performance.now();

  const style = [
    { selector: "node.host", style: { shape: "round-rectangle", "background-color": "#eef2f6",
        "border-color": "#57606a", "border-width": 2, label: "data(label)", "text-valign": "top",
        "font-size": 13, "font-weight": 600, padding: 14 } },
    { selector: "node.router", style: { shape: "ellipse", width: 26, height: 26,
        "background-color": "#6e7781", label: "data(label)", "font-size": 10,
        "text-valign": "bottom", "text-margin-y": 3 } },
    { selector: "edge.arc", style: { "curve-style": "bezier", "control-point-step-size": 50,
        "target-arrow-shape": "triangle", "arrow-scale": 0.9, width: "mapData(load, 0, 1, 2, 12)",
        "line-color": "mapData(share, 0, 1, #2da44e, #cf222e)", "target-arrow-color": "mapData(share, 0, 1, #2da44e, #cf222e)",
        label: "data(label)", "font-size": 9, "text-rotation": "autorotate", "text-margin-y": -8,
        "text-background-color": "#fff", "text-background-opacity": 0.8 } },
    { selector: 'edge.arc[state = "down"]', style: { "line-style": "dotted", "line-color": "#6e7781",
        "target-arrow-color": "#6e7781" } },
    { selector: "edge.vnet", style: { "curve-style": "straight", "line-style": "dashed", width: 1.5,
        "line-color": "#8250df", opacity: 0.7 } },
    { selector: "edge.on-path", style: { "line-color": "#0b5cad", "target-arrow-color": "#0b5cad",
        width: 8, "z-index": 10 } },
    { selector: "node.router.on-path", style: { "background-color": "#0b5cad" } },
    { selector: "node.host.on-path", style: { "border-color": "#0b5cad", "border-width": 4 } },
    { selector: ".dimmed", style: { opacity: 0.25 } },
  ];

  // Hosts on a circle, each host's VRs in a small grid inside its box: the same picture
  // every time (a force layout moves things between visits) and no layout cost.
  function placeNodes(all) {
    const hosts = all.filter(el => el.classes === "host");
    const radius = hosts.length < 2 ? 0 : Math.max(220, hosts.length * 70);
    const centre = {};
    hosts.forEach((h, i) => {
      const angle = -Math.PI / 2 + (2 * Math.PI * i) / hosts.length;
      centre[h.data.id] = { x: radius * Math.cos(angle), y: radius * Math.sin(angle) };
      h.position = { ...centre[h.data.id] };
    });
    const placed = {};
    for (const el of all.filter(e => e.classes === "router")) {
      const c = centre[el.data.parent], k = placed[el.data.parent] = (placed[el.data.parent] || 0) + 1;
      const col = (k - 1) % 3, row = Math.floor((k - 1) / 3);
      el.position = { x: c.x + (col - 1) * 55, y: c.y + row * 50 };
    }
  }

  function share(arc) { return arc.capacity ? arc.reserved / arc.capacity : 0; }
  function load(arc) { return arc.capacity ? Math.min(1, (arc.utilisation || 0) / arc.capacity) : 0; }
  for (const el of elements) {
    if (el.classes === "arc") { el.data.share = share(el.data); el.data.load = load(el.data); }
  }
  placeNodes(elements);
  const cy = cytoscape({ container: document.getElementById("graph"), elements, style,
    layout: { name: "preset", padding: 30 } });
  window.vnetGraph = cy;  // for the browser tests and the curious

  function highlight(key) {
    cy.elements().removeClass("on-path dimmed");
    const p = paths[key];
    if (!p) { info.textContent = ""; return; }
    const hops = [];
    for (let i = 0; i + 1 < p.path.length; i++) {
      hops.push([p.path[i], p.path[i + 1]]);
      if (p.bidirectional) hops.push([p.path[i + 1], p.path[i]]);
    }
    let on = cy.collection();
    for (const [a, b] of hops) {
      on = on.union(cy.edges(".arc").filter(e => e.data("source") === "host:" + a && e.data("target") === "host:" + b));
    }
    for (const r of p.routers) on = on.union(cy.getElementById("vr:" + r));
    for (const h of p.path) on = on.union(cy.getElementById("host:" + h));
    cy.elements().not(on).addClass("dimmed");
    on.addClass("on-path").removeClass("dimmed");
    info.textContent = key + ": " + p.status + ", " + p.bandwidth + ", path " + p.path.join(" → ");
  }

  function fillSelect() {
    const chosen = select.value;
    select.replaceChildren(new Option("(none)", ""));
    for (const [key, p] of Object.entries(paths)) {
      select.add(new Option(key + " (" + p.bandwidth + ", " + p.path.join(" → ") + ")", key, false, key === chosen));
    }
  }

  function rateText(bits) {
    if (bits === null || bits === undefined) return "-";
    for (const [unit, scale] of [["Gbit/s", 1e9], ["Mbit/s", 1e6], ["kbit/s", 1e3]]) {
      if (bits >= scale) { const v = bits / scale; return (v < 100 ? v.toPrecision(3).replace(/\.?0+$/, "") : v.toFixed(0)) + " " + unit; }
    }
    return bits + " bit/s";
  }

  function update(state) {
    for (const arc of state.arcs) {
      const edge = cy.getElementById(arc.id);
      if (edge.nonempty()) edge.data({ ...arc, source: edge.data("source"), target: edge.data("target"),
                                       share: share(arc), load: load(arc) });
      const row = document.querySelector('tr[data-arc="' + CSS.escape(arc.id) + '"]');
      if (row) {
        row.querySelector(".reserved").textContent = rateText(arc.reserved);
        row.querySelector(".free").textContent = rateText(arc.free);
        row.querySelector(".utilisation").textContent = rateText(arc.utilisation);
        row.querySelector(".state").textContent = arc.state;
      }
    }
    paths = state.paths;
    fillSelect();
    highlight(select.value);
    document.getElementById("refreshed").textContent = "refreshed " + new Date().toLocaleTimeString();
  }

  async function refresh() {
    try {
      const answer = await fetch(box.dataset.stateUrl, { credentials: "same-origin", cache: "no-store" });
      if (answer.status === 401 || answer.redirected) { window.location.reload(); return; }
      if (answer.ok) update(await answer.json());
    } catch (e) { /* the controller restarts or the network blinks: try again next time */ }
    setTimeout(refresh, 1000 * Number(box.dataset.refresh || 1));
  }

  select.addEventListener("change", () => highlight(select.value));
  highlight(select.dataset.selected || "");
  cy.ready(() => {
    window.vnetTopologyMs = performance.now() - started;  // drawing alone
    window.vnetReadyAt = performance.now();  // since the navigation started
    box.dataset.ready = "true";
  });
  setTimeout(refresh, 1000 * Number(box.dataset.refresh || 1));
})();
