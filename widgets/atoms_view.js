// MMAView / CopyView: one canvas a panel (A, B, C or src, dst), cells coloured by thread (CuTe's TV colours).
// Two levels, chosen when the view opens and switchable ("warps" / "cells"):
// * cells: every cell T#V#, drawn at LC px with LFONT px labels (readable at the default zoom, "1:1");
// * warps (a view of more than one warp whose cells would not fit one screen): an overview of every panel,
//   side by side, one colour per warp (or per warpgroup for an operand read from shared memory by a whole
//   warpgroup), each block labelled W# / WG#, and under it one window of a panel at the cells' readable size:
//   the warp of the cell last clicked (default: the selected thread's, in C or src), its T#V# labels legible.
// Click a cell: select its thread in every panel (model "thread"); hover: model "hover" gets
// {panel, thread, value, row, col}, cleared when the pointer leaves.  The hovered cell is outlined (red) and
// the read-out follows the pointer (a tooltip in the page's body, kept inside the window), so it is on screen
// wherever the view has scrolled; the same text stays in the status line above the panels.  A panel read
// from shared memory by a whole group of threads (p.shared > 0, SM90 _SS operands) is grey, with its note
// under it: no single thread holds those cells, so selecting a thread outlines none there.
// Each canvas says what it drew: data-selected-cells (outlined cells), data-drawn (draws so far),
// data-hovered ("row,col" of the outlined hovered cell); the root says data-mode, data-scale, data-label-px.
const SHARED_FILLS = ["#e4e4e4", "#cdcdcd"];
const WARP_FILLS = ["#8fb8e8", "#f2b36b", "#93d08a", "#e89494", "#c0a2e0", "#d9b48f", "#f0a8d8", "#b8c4cc"];
const NOTE_W = 240, LC = 30, LFONT = 10, OV_FONT = 12, GAP = 16, SEL = "#d7191c";
const FG = "var(--jp-ui-font-color1, #333333)", MUTED = "var(--jp-ui-font-color2, #555555)";
const BG = "var(--jp-layout-color0, #ffffff)", RULE = "var(--jp-border-color1, #444444)";

function uniformBlock(p, group) {   // the largest (bh, bw) dividing the panel whose blocks each hold one group
  const divs = (n) => { const d = []; for (let k = n; k >= 1; k--) if (n % k === 0) d.push(k); return d; };
  let best = [1, 1];
  for (const bh of divs(p.rows)) {
    for (const bw of divs(p.cols)) {
      if (bh * bw <= best[0] * best[1]) continue;
      let ok = true;
      for (let r0 = 0; ok && r0 < p.rows; r0 += bh) for (let c0 = 0; ok && c0 < p.cols; c0 += bw) {
        let g = -2;
        for (let r = r0; ok && r < r0 + bh; r++) for (let c = c0; c < c0 + bw; c++) {
          const x = group(p, p.thr[r * p.cols + c]);
          if (x < 0) continue;
          if (g === -2) g = x; else if (g !== x) { ok = false; break; }
        }
      }
      if (ok) best = [bh, bw];
    }
  }
  return best;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "wb-atoms wb-live";
  Object.assign(root.style, { fontFamily: "sans-serif", color: FG, maxWidth: "100%" });
  const bar = document.createElement("div");
  bar.className = "wb-atoms-toolbar";
  Object.assign(bar.style, { display: "flex", gap: "6px", alignItems: "center", flexWrap: "wrap", margin: "2px 0" });
  const mk = (cls, text, tip) => {
    const b = document.createElement("button");
    b.className = cls; b.textContent = text; b.title = tip;
    b.style.cssText = "font:inherit;font-size:12px;padding:0 6px;cursor:pointer";
    bar.appendChild(b);
    return b;
  };
  const bMode = mk("wb-level", "every cell", "switch between the warp overview and every cell");
  const bOut = mk("wb-zoom-out", "\u2212", "smaller"), bIn = mk("wb-zoom-in", "+", "larger");
  const bFit = mk("wb-fit", "fit", "every panel within the output's width"), bOne = mk("wb-one", "1:1", "readable size");
  const zoomInfo = document.createElement("span");
  zoomInfo.className = "wb-zoom";
  Object.assign(zoomInfo.style, { fontSize: "12px", color: MUTED, marginLeft: "6px" });
  bar.appendChild(zoomInfo);
  const row = document.createElement("div");
  row.className = "wb-atoms-panels";
  Object.assign(row.style, { display: "flex", flexWrap: "wrap", gap: GAP + "px", alignItems: "flex-start", overflowX: "auto",
                             maxWidth: "100%" });
  const detail = document.createElement("div");
  detail.className = "wb-atoms-detail";
  Object.assign(detail.style, { marginTop: "8px", overflowX: "auto", maxWidth: "100%" });
  const status = document.createElement("div");
  status.className = "wb-atoms-status";
  Object.assign(status.style, { fontSize: "12px", minHeight: "16px", background: BG, overflowWrap: "break-word" });
  const readout = document.createElement("pre");
  readout.className = "wb-atoms-readout";
  Object.assign(readout.style, { fontSize: "11px", whiteSpace: "pre-wrap", overflowWrap: "break-word", color: FG });
  root.append(bar, status, row, detail, readout);
  el.appendChild(root);
  // the hover read-out beside the pointer: in the page's body, so no scrolled or clipped output area hides it
  const tip = document.createElement("div");
  tip.className = "wb-tip wb-atoms-tip";
  Object.assign(tip.style, { position: "fixed", display: "none", zIndex: "10000", pointerEvents: "none", fontSize: "12px",
                             fontFamily: "sans-serif", padding: "2px 6px", background: BG, color: FG,
                             border: `1px solid ${RULE}`, borderRadius: "3px", whiteSpace: "pre", maxWidth: "60vw" });
  document.body.appendChild(tip);
  function showTip(text, ev) {
    tip.textContent = text; tip.style.display = "block";
    const w = tip.offsetWidth, h = tip.offsetHeight, vw = window.innerWidth, vh = window.innerHeight;
    let x = ev.clientX + 14, y = ev.clientY + 16;
    if (x + w > vw - 4) x = Math.max(4, ev.clientX - w - 14);
    if (y + h > vh - 4) y = Math.max(4, ev.clientY - h - 12);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  const hideTip = () => { tip.style.display = "none"; };

  let canvases = [], dcan = null;
  let mode = null, scale = null;   // null: chosen from the view's size (see choose())
  let focus = null;                // {panel, r, c}: the cell whose warp the detail window shows
  let hov = null;                  // {panel, r, c, detail}
  const area = () => el.closest(".jp-OutputArea-output, .output_subarea, .cell-output-ipywidget-background") || el.parentElement || el;
  let watched = null, lastArea = 0;
  const sizeWatch = new ResizeObserver(() => {
    const w = area().clientWidth;
    if (w && Math.abs(w - lastArea) > 1) { lastArea = w; place(); }
  });
  const watch = () => { if (area() !== watched) { if (watched) sizeWatch.unobserve(watched); watched = area(); sizeWatch.observe(watched); } };
  const availW = () => Math.max(100, (area().clientWidth || 900) - 16);
  const panelsH = () => Math.max(240, (window.innerHeight || 900) - 300);   // toolbar, titles, notes, read-out
  const panels = () => model.get("panels");
  const threads = () => Math.max(1, ...panels().map((p) => Math.max(...p.thr) + 1));
  const group = (p, t) => (t < 0 ? -1 : p.shared ? Math.floor(t / p.shared) : Math.floor(t / 32));
  const groupName = (p, g) => {
    if (!p.shared) return `W${g}`;
    if (p.shared % 128) return `G${g}`;
    const k = p.shared / 128;   // warpgroups reading each cell together
    return k === 1 ? `WG${g}` : `WG${g * k}-${g * k + k - 1}`;
  };
  const ovCell = () => {   // overview cell size: every panel side by side within the width, the overview within its share
    const ps = panels(), cols = ps.reduce((a, p) => a + p.cols, 0), rows = Math.max(...ps.map((p) => p.rows));
    return Math.max(1, Math.min(12, Math.floor((availW() - GAP * (ps.length - 1) - 2 * ps.length) / cols),
                                Math.max(3, Math.floor((panelsH() - 6 * LC - 30) / rows))));
  };
  function cellsFit() {   // every panel at LC, wrapped to the width, within one screen
    let x = 0, lineH = 0, h = 0;
    for (const p of panels()) {
      const w = Math.max(p.cols * LC + 2, p.note ? NOTE_W : 0), ph = p.rows * LC + 40;
      if (x && x + w > availW()) { h += lineH + GAP; x = 0; lineH = 0; }
      x += w + GAP; lineH = Math.max(lineH, ph);
      if (w > availW()) return false;
    }
    return h + lineH <= panelsH();
  }
  const chosenMode = () => mode || (threads() > 32 && !cellsFit() ? "warps" : "cells");
  function cellSize() {
    const m = chosenMode();
    if (m === "warps") return Math.max(1, Math.round(ovCell() * (scale === null ? 1 : scale)));
    if (scale !== null) return Math.max(1, LC * scale);
    return LC;
  }
  const fitScale = () => {
    const widest = Math.max(...panels().map((p) => p.cols));
    return Math.min(1, (availW() - 2) / (widest * (chosenMode() === "warps" ? ovCell() : LC)));
  };

  function place() { watch(); draw(); }
  bFit.onclick = () => { scale = fitScale(); place(); };
  bOne.onclick = () => { scale = null; place(); };
  bIn.onclick = () => { scale = Math.min(4, (scale === null ? 1 : scale) * 1.5); place(); };
  bOut.onclick = () => { scale = Math.max(0.05, (scale === null ? 1 : scale) / 1.5); place(); };
  bMode.onclick = () => { mode = chosenMode() === "warps" ? "cells" : "warps"; scale = null; build(); };

  function fillOf(p, t, i, warps) {
    if (p.fill) return p.fills[p.fill[i]];   // a bank/chunk panel keeps its colours at every level
    if (t < 0) return "#fff";
    if (p.shared) return SHARED_FILLS[Math.floor(t / p.shared) % 2];
    return warps ? WARP_FILLS[Math.floor(t / 32) % WARP_FILLS.length] : model.get("palette")[t % model.get("palette").length];
  }
  // draw cells r0..r0+nr, c0..c0+nc of panel p on canvas at cs px a cell
  function paint(canvas, p, cs, r0, c0, nr, nc, warps, isDetail) {
    if (canvas.width !== nc * cs || canvas.height !== nr * cs) { canvas.width = Math.round(nc * cs); canvas.height = Math.round(nr * cs); }
    canvas.style.width = canvas.width + "px"; canvas.style.height = canvas.height + "px";
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const font = Math.round(LFONT * cs / LC * 10) / 10;
    const labels = !warps && !p.shared && cs >= 18;
    ctx.textAlign = "center";
    ctx.font = `${font}px sans-serif`;
    for (let r = 0; r < nr; r++) {
      for (let c = 0; c < nc; c++) {
        const i = (r0 + r) * p.cols + c0 + c, t = p.thr[i];
        ctx.fillStyle = fillOf(p, t, i, warps);
        ctx.fillRect(c * cs, r * cs, cs, cs);
        if (labels && t >= 0) {
          ctx.fillStyle = "#000";
          ctx.fillText("T" + t, c * cs + cs / 2, r * cs + cs / 2 - 1);
          ctx.fillText("V" + p.val[i], c * cs + cs / 2, r * cs + cs / 2 + font);
        }
      }
    }
    if (labels && cs >= 8) {   // cell rules
      ctx.strokeStyle = "rgba(0,0,0,0.25)"; ctx.lineWidth = 1; ctx.beginPath();
      for (let c = 1; c < nc; c++) { ctx.moveTo(c * cs + 0.5, 0); ctx.lineTo(c * cs + 0.5, nr * cs); }
      for (let r = 1; r < nr; r++) { ctx.moveTo(0, r * cs + 0.5); ctx.lineTo(nc * cs, r * cs + 0.5); }
      ctx.stroke();
    }
    if (warps && !p.fill) {   // one label a block of one warp (or warpgroup), where it fits
      const [bh, bw] = p._block || (p._block = uniformBlock(p, group));
      ctx.font = `bold ${OV_FONT}px sans-serif`; ctx.textBaseline = "middle";
      ctx.strokeStyle = "#000"; ctx.lineWidth = 1;
      for (let r = 0; r < p.rows; r += bh) for (let c = 0; c < p.cols; c += bw) {
        let t = -1;
        for (let k = 0; k < bh * bw && t < 0; k++) t = p.thr[(r + Math.floor(k / bw)) * p.cols + c + (k % bw)];
        ctx.strokeRect(c * cs + 0.5, r * cs + 0.5, bw * cs - 1, bh * cs - 1);
        if (t < 0) continue;
        const s = groupName(p, group(p, t));
        if (ctx.measureText(s).width + 4 <= bw * cs && OV_FONT + 2 <= bh * cs) {
          ctx.fillStyle = "#000"; ctx.fillText(s, (c + bw / 2) * cs, (r + bh / 2) * cs);
        }
      }
      ctx.textBaseline = "alphabetic";
    }
    const sel = model.get("thread");
    let outlined = 0;
    if (sel >= 0 && !p.shared) {
      ctx.strokeStyle = "#000"; ctx.fillStyle = "#000"; ctx.lineWidth = 2;
      for (let r = 0; r < nr; r++) for (let c = 0; c < nc; c++) {
        if (p.thr[(r0 + r) * p.cols + c0 + c] !== sel) continue;
        if (cs >= 6) ctx.strokeRect(c * cs + 1, r * cs + 1, cs - 2, cs - 2); else ctx.fillRect(c * cs, r * cs, cs, cs);
        outlined++;
      }
    }
    canvas.dataset.selectedCells = String(outlined);
    canvas.dataset.hovered = "";
    if (hov && hov.panel === p.name && hov.r >= r0 && hov.r < r0 + nr && hov.c >= c0 && hov.c < c0 + nc) {
      const pad = Math.max(0, (8 - cs) / 2);   // a tiny overview cell gets a box of at least 8 px
      ctx.strokeStyle = SEL; ctx.lineWidth = 2;
      ctx.strokeRect((hov.c - c0) * cs - pad + 1, (hov.r - r0) * cs - pad + 1, cs + 2 * pad - 2, cs + 2 * pad - 2);
      canvas.dataset.hovered = `${hov.r},${hov.c}`;
    }
    canvas.dataset.cell = String(cs);
    canvas.dataset.labelPx = String(labels ? font : warps ? OV_FONT : 0);
    canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
  }

  function detailWindow() {   // the panel and window the detail shows: the focus cell's warp, clipped to fit
    const ps = panels();
    let p = focus && ps.find((q) => q.name === focus.panel && !q.shared);
    if (!p) p = ps.find((q) => q.name === "C" && !q.shared) || ps.find((q) => !q.shared);
    if (!p) return null;
    let fr = 0, fc = 0;
    const sel = model.get("thread");
    if (focus && focus.panel === p.name) { fr = focus.r; fc = focus.c; } else if (sel >= 0) {
      const i = p.thr.indexOf(sel);
      if (i >= 0) { fr = Math.floor(i / p.cols); fc = i % p.cols; }
    }
    const g = group(p, p.thr[fr * p.cols + fc]);
    let r0 = p.rows, r1 = -1, c0 = p.cols, c1 = -1;
    for (let i = 0; i < p.thr.length; i++) {
      if (group(p, p.thr[i]) !== g) continue;
      const r = Math.floor(i / p.cols), c = i % p.cols;
      r0 = Math.min(r0, r); r1 = Math.max(r1, r); c0 = Math.min(c0, c); c1 = Math.max(c1, c);
    }
    const cs = LC * (scale === null ? 1 : Math.max(0.6, Math.min(2, scale)));
    const maxR = Math.max(4, Math.floor((panelsH() + 80 - 40 - ps.reduce((a, q) => Math.max(a, q.rows), 0) * cellSize()) / cs));
    const maxC = Math.max(4, Math.floor((availW() - 2) / cs));
    const clip = (lo, hi, f, n) => { if (hi - lo + 1 <= n) return [lo, hi - lo + 1]; const s = Math.max(lo, Math.min(f - Math.floor(n / 4), hi - n + 1)); return [s, n]; };
    const [wr, nr] = clip(r0, r1, fr, maxR), [wc, nc] = clip(c0, c1, fc, maxC);
    return { p, g, r0: wr, c0: wc, nr, nc, cs, whole: nr === r1 - r0 + 1 && nc === c1 - c0 + 1 };
  }

  function hoverAt(p, r, c, ev, isDetail) {
    const i = r * p.cols + c, t = p.thr[i], v = p.val[i];
    const who = (p.shared ? `shared memory, read by T${t}..T${t + p.shared - 1} together` : `(T${t}, V${v})`) +
      (p.fill ? `, ${p.fill_name || "bank"} ${p.fill[i]}` : "");
    const text = `${p.name}: ${who} -> (${p.row_name}=${r}, ${p.col_name}=${c})`;
    status.textContent = text;
    showTip(text + (t >= 0 && !p.shared && threads() > 32 ? `  warp ${Math.floor(t / 32)}` : ""), ev);
    const same = hov && hov.panel === p.name && hov.r === r && hov.c === c;
    hov = { panel: p.name, r, c };
    if (!same) {
      draw();
      const cur = model.get("hover");
      if (!(cur.panel === p.name && cur.row === r && cur.col === c)) {
        model.set("hover", { panel: p.name, thread: t, value: v, row: r, col: c });
        model.save_changes();
      }
    }
  }
  function attach(canvas, p, win) {   // win(): {r0, c0, nr, nc} the canvas shows
    const at = (ev) => {
      const rect = canvas.getBoundingClientRect(), w = win();
      const c = Math.floor((ev.clientX - rect.left - 1) / (rect.width - 2) * w.nc), r = Math.floor((ev.clientY - rect.top - 1) / (rect.height - 2) * w.nr);
      if (r < 0 || c < 0 || r >= w.nr || c >= w.nc) return null;
      return { r: r + w.r0, c: c + w.c0 };
    };
    canvas.addEventListener("mousemove", (ev) => { const h = at(ev); if (h) hoverAt(p, h.r, h.c, ev); });
    canvas.addEventListener("mouseleave", () => {
      hideTip(); hov = null; draw();
      model.set("hover", {}); model.save_changes();
    });
    canvas.addEventListener("click", (ev) => {
      const h = at(ev);
      if (!h) return;
      const t = p.thr[h.r * p.cols + h.c];
      if (!p.shared && canvas !== (dcan && dcan.canvas)) focus = { panel: p.name, r: h.r, c: h.c };
      if (t < 0 || p.shared) { draw(); return; }   // a shared operand names no single thread to select
      model.set("thread", t === model.get("thread") ? -1 : t);
      model.save_changes();
    });
  }

  function draw() {
    const m = chosenMode(), warps = m === "warps", cs = cellSize();
    for (const { canvas, p, box, note } of canvases) {
      paint(canvas, p, cs, 0, 0, p.rows, p.cols, warps, false);
      box.style.maxWidth = Math.max(canvas.width + 2, note ? NOTE_W : 0) + "px";
    }
    detail.style.display = warps && dcan ? "block" : "none";
    if (warps && dcan) {
      const w = detailWindow();
      if (w) {
        dcan.win = w;
        paint(dcan.canvas, w.p, w.cs, w.r0, w.c0, w.nr, w.nc, false, true);
        dcan.canvas.dataset.detail = w.p.name;
        dcan.canvas.dataset.window = `${w.r0},${w.c0},${w.nr},${w.nc}`;
        const ts = [];
        for (let i = 0; i < w.p.thr.length; i++) if (group(w.p, w.p.thr[i]) === w.g) ts.push(w.p.thr[i]);
        const lo = Math.min(...ts), hi = Math.max(...ts);
        dcan.title.textContent = `${w.p.name}, warp ${w.g} (T${lo}..T${hi})${w.whole ? "" : ", part"}: ` +
          `${w.p.row_name} ${w.r0}..${w.r0 + w.nr - 1} of ${w.p.rows}, ${w.p.col_name} ${w.c0}..${w.c0 + w.nc - 1} of ${w.p.cols}` +
          " \u00b7 click a cell above to open its warp here";
      }
    }
    const label = warps ? `overview, one colour a warp, cells ${cs} px; below: one warp at ${LC} px` :
      `cells ${Math.round(cs * 10) / 10} px` + (cs >= 18 ? `, labels ${Math.round(LFONT * cs / LC * 10) / 10} px` : ", no labels");
    zoomInfo.textContent = label;
    bMode.textContent = warps ? "every cell" : "warps";
    bMode.style.display = threads() > 32 ? "" : "none";
    root.dataset.mode = m;
    root.dataset.scale = String(scale === null ? 1 : scale);
    root.dataset.labelPx = String(warps ? Math.min(OV_FONT, LFONT * (dcan && dcan.win ? dcan.win.cs : LC) / LC) : cs >= 18 ? LFONT * cs / LC : 0);
    readout.textContent = model.get("readout").join("\n");
  }

  function build() {
    row.innerHTML = ""; detail.innerHTML = "";
    canvases = panels().map((p) => {
      const box = document.createElement("div");
      const title = document.createElement("div");
      title.textContent = p.title;
      Object.assign(title.style, { fontWeight: "bold", fontSize: "12px", whiteSpace: "nowrap" });
      const canvas = document.createElement("canvas");
      canvas.dataset.panel = p.name;
      canvas.style.border = `1px solid ${RULE}`;
      canvas.style.boxSizing = "content-box";
      attach(canvas, p, () => ({ r0: 0, c0: 0, nr: p.rows, nc: p.cols }));
      box.append(title, canvas);
      let note = null;
      if (p.note) {
        note = document.createElement("div");
        note.className = "wb-atoms-note";
        note.textContent = p.note;
        Object.assign(note.style, { fontSize: "11px", color: "#b35806", overflowWrap: "break-word" });
        box.appendChild(note);
      }
      row.appendChild(box);
      return { canvas, p, box, note };
    });
    dcan = null;
    if (panels().some((p) => !p.shared)) {
      const title = document.createElement("div");
      title.className = "wb-atoms-detail-title";
      Object.assign(title.style, { fontWeight: "bold", fontSize: "12px" });
      const canvas = document.createElement("canvas");
      canvas.className = "wb-atoms-detail-canvas";
      canvas.style.border = `1px solid ${RULE}`;
      canvas.style.boxSizing = "content-box";
      detail.append(title, canvas);
      dcan = { canvas, title, win: null };
      // the detail's panel changes with the focus: its handlers read the window drawn last
      const pOf = () => (dcan.win ? dcan.win.p : panels()[0]);
      const at = (ev) => {
        const w = dcan.win; if (!w) return null;
        const rect = canvas.getBoundingClientRect();
        const c = Math.floor((ev.clientX - rect.left - 1) / (rect.width - 2) * w.nc), r = Math.floor((ev.clientY - rect.top - 1) / (rect.height - 2) * w.nr);
        return r < 0 || c < 0 || r >= w.nr || c >= w.nc ? null : { r: r + w.r0, c: c + w.c0 };
      };
      canvas.addEventListener("mousemove", (ev) => { const h = at(ev); if (h) hoverAt(pOf(), h.r, h.c, ev); });
      canvas.addEventListener("mouseleave", () => { hideTip(); hov = null; draw(); model.set("hover", {}); model.save_changes(); });
      canvas.addEventListener("click", (ev) => {
        const h = at(ev), p = pOf(); if (!h) return;
        const t = p.thr[h.r * p.cols + h.c];
        if (t < 0) return;
        focus = { panel: p.name, r: h.r, c: h.c };
        model.set("thread", t === model.get("thread") ? -1 : t); model.save_changes();
      });
    }
    place();
  }

  const onThread = () => { const t = model.get("thread"); if (focus && t >= 0) {
    const p = panels().find((q) => q.name === focus.panel);
    if (p && p.thr[focus.r * p.cols + focus.c] !== t) focus = null; } draw(); };
  model.on("change:panels", build);
  model.on("change:thread", onThread);
  model.on("change:readout", draw);
  build();
  return () => { tip.remove(); sizeWatch.disconnect(); model.off("change:panels", build); model.off("change:thread", onThread);
                 model.off("change:readout", draw); };
}
export default { render };
