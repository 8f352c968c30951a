// Canvas view of a widgets.grid.Grid: one <canvas>, whatever the number of cells.
// State arrives as compact binary traits: `cell_keys` (float64 per cell, row-major) and
// `cell_colors` (uint8 palette index per cell).  Hover writes `hover` = [row, col] back to the
// kernel; a click writes `selected` = the cell's key (click again to clear).

function f64(v) {
  if (!v) return new Float64Array(0);
  if (v instanceof DataView) return new Float64Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  if (v instanceof ArrayBuffer) return new Float64Array(v.slice(0));
  return new Float64Array(v);
}
function u8(v) {
  if (!v) return new Uint8Array(0);
  if (v instanceof DataView) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  return new Uint8Array(v);
}

const CELL_H = 18, CHAR_W = 7, FONT = "11px 'DejaVu Sans Mono', Menlo, Consolas, monospace";
const DYN = "#b35806", SEL = "#d7191c";

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "wb-grid";
  root.style.fontFamily = "'DejaVu Sans Mono', Menlo, Consolas, monospace";
  root.style.fontSize = "12px";
  const title = document.createElement("div");
  title.className = "wb-title";
  title.style.fontWeight = "bold";
  const sub = document.createElement("div");
  sub.className = "wb-subtitle";
  const readout = document.createElement("div");
  readout.className = "wb-readout";
  readout.style.minHeight = "1.4em";
  const scroller = document.createElement("div");
  scroller.style.overflow = "auto";
  scroller.style.maxHeight = "640px";
  const canvas = document.createElement("canvas");
  canvas.className = "wb-canvas";
  canvas.style.cursor = "crosshair";
  scroller.appendChild(canvas);
  root.append(title, sub, readout, scroller);
  el.appendChild(root);

  let st = null;   // decoded state and geometry

  function decode() {
    const rows = model.get("rows"), cols = model.get("cols");
    const keys = f64(model.get("cell_keys"));
    const colors = u8(model.get("cell_colors"));
    const texts = model.get("cell_texts") || [];
    const rowLabels = model.get("row_labels"), colLabels = model.get("col_labels");
    const text = (i) => (texts.length ? texts[i] : (Number.isNaN(keys[i]) ? "" : String(keys[i])));
    let longest = 1;
    for (const s of colLabels) longest = Math.max(longest, s.length);
    const n = rows * cols;
    for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 4096))) longest = Math.max(longest, text(i).length);
    if (!texts.length) {  // the extreme keys are the longest numbers
      for (const k of keys) if (!Number.isNaN(k)) longest = Math.max(longest, String(k).length);
    }
    const cw = Math.max(22, CHAR_W * longest + 8);
    let rl = 1;
    for (const s of rowLabels) rl = Math.max(rl, s.length);
    const left = CHAR_W * rl + 12, top = 40;
    st = { rows, cols, keys, colors, texts, text, rowLabels, colLabels, cw, left, top };
    // geometry for tests and tools that point at a cell (CSS pixels from the canvas corner)
    Object.assign(canvas.dataset, { cellW: cw, cellH: CELL_H, left, top, rows, cols });
  }

  function draw() {
    if (!st) decode();
    const { rows, cols, keys, colors, text, rowLabels, colLabels, cw, left, top } = st;
    const palette = model.get("palette");
    const selected = model.get("selected");
    const hover = model.get("hover") || [];
    const W = left + cols * cw + 12, H = top + rows * CELL_H + 26;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr; canvas.height = H * dpr;
    canvas.style.width = W + "px"; canvas.style.height = H + "px";
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    g.font = FONT;
    title.textContent = model.get("title");
    sub.textContent = model.get("subtitle");
    // axis titles: dynamic modes orange and italic, with the ? notation of their mode string
    const colDyn = model.get("col_dynamic"), rowDyn = model.get("row_dynamic");
    g.textAlign = "left";
    g.fillStyle = colDyn ? DYN : "#333";
    g.font = (colDyn ? "italic " : "") + FONT;
    g.fillText("columns " + model.get("col_title") + (colDyn ? " (dynamic)" : ""), left, 16);
    g.fillStyle = rowDyn ? DYN : "#333";
    g.font = (rowDyn ? "italic " : "") + FONT;
    g.fillText("rows " + model.get("row_title") + (rowDyn ? " (dynamic)" : ""), left, top + rows * CELL_H + 16);
    g.font = FONT;
    // labels
    g.textAlign = "center"; g.fillStyle = colDyn ? DYN : "#333";
    for (let c = 0; c < cols; c++) g.fillText(colLabels[c], left + c * cw + cw / 2, top - 5);
    g.textAlign = "right"; g.fillStyle = rowDyn ? DYN : "#333";
    for (let r = 0; r < rows; r++) g.fillText(rowLabels[r], left - 5, top + r * CELL_H + CELL_H / 2 + 4);
    // cells
    g.lineWidth = 0.5; g.strokeStyle = "#555";
    for (let r = 0, i = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, i++) {
        g.fillStyle = palette[colors[i] % palette.length];
        g.fillRect(left + c * cw, top + r * CELL_H, cw, CELL_H);
        g.strokeRect(left + c * cw, top + r * CELL_H, cw, CELL_H);
      }
    }
    g.textAlign = "center"; g.fillStyle = "#000";
    for (let r = 0, i = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, i++) {
        const t = text(i);
        if (t) g.fillText(t, left + c * cw + cw / 2, top + r * CELL_H + CELL_H / 2 + 4);
      }
    }
    // nesting rules
    g.strokeStyle = "#000";
    model.get("col_groups").forEach((p, level) => {
      g.lineWidth = 1 + level; g.setLineDash(colDyn ? [4, 2] : []);
      for (let c = p; c < cols; c += p) { g.beginPath(); g.moveTo(left + c * cw, top); g.lineTo(left + c * cw, top + rows * CELL_H); g.stroke(); }
    });
    model.get("row_groups").forEach((p, level) => {
      g.lineWidth = 1 + level; g.setLineDash(rowDyn ? [4, 2] : []);
      for (let r = p; r < rows; r += p) { g.beginPath(); g.moveTo(left, top + r * CELL_H); g.lineTo(left + cols * cw, top + r * CELL_H); g.stroke(); }
    });
    g.setLineDash([]); g.lineWidth = 1.5;
    g.strokeRect(left, top, cols * cw, rows * CELL_H);
    // every cell holding the selected key (a broadcast or non-injective layout shows several)
    if (selected !== null && selected !== undefined) {
      g.strokeStyle = SEL; g.lineWidth = 2.5;
      for (let i = 0; i < keys.length; i++) {
        if (keys[i] === selected) {
          const r = Math.floor(i / cols), c = i % cols;
          g.strokeRect(left + c * cw + 1, top + r * CELL_H + 1, cw - 2, CELL_H - 2);
        }
      }
    }
    if (hover.length === 2) {
      g.strokeStyle = "#000"; g.lineWidth = 2;
      g.strokeRect(left + hover[1] * cw, top + hover[0] * CELL_H, cw, CELL_H);
    }
    updateReadout();
  }

  function updateReadout() {
    const hover = model.get("hover") || [];
    const sel = model.get("selected");
    let s = "";
    if (hover.length === 2 && st) {
      const i = hover[0] * st.cols + hover[1];
      s = model.get("hover_format")
        .replace("{row}", st.rowLabels[hover[0]]).replace("{col}", st.colLabels[hover[1]])
        .replace("{key}", Number.isNaN(st.keys[i]) ? "-" : String(st.keys[i])).replace("{text}", st.text(i));
    }
    if (sel !== null && sel !== undefined && st) {
      let n = 0;
      for (const k of st.keys) if (k === sel) n++;
      s += (s ? "   " : "") + `selected ${model.get("key_name")} ${sel}: ${n} cell${n === 1 ? "" : "s"}`;
    }
    readout.textContent = s || "hover a cell; click to select its " + model.get("key_name");
  }

  function cellAt(ev) {
    if (!st) return null;
    const rect = canvas.getBoundingClientRect();
    const x = ev.clientX - rect.left - st.left, y = ev.clientY - rect.top - st.top;
    const c = Math.floor(x / st.cw), r = Math.floor(y / CELL_H);
    if (x < 0 || y < 0 || r >= st.rows || c >= st.cols) return null;
    return [r, c];
  }

  let last = "";
  canvas.addEventListener("mousemove", (ev) => {
    const rc = cellAt(ev);
    const key = rc ? rc.join(",") : "";
    if (key === last) return;   // only cell changes cross the wire
    last = key;
    model.set("hover", rc || []);
    model.save_changes();
  });
  canvas.addEventListener("mouseleave", () => {
    last = "";
    model.set("hover", []);
    model.save_changes();
  });
  canvas.addEventListener("click", (ev) => {
    const rc = cellAt(ev);
    if (!rc) return;
    const k = st.keys[rc[0] * st.cols + rc[1]];
    if (Number.isNaN(k)) return;
    model.set("selected", model.get("selected") === k ? null : k);
    model.save_changes();
  });

  const redecode = () => { st = null; draw(); };
  const handlers = [];
  for (const n of ["rows", "cols", "cell_keys", "cell_colors", "cell_texts", "row_labels", "col_labels"]) handlers.push(["change:" + n, redecode]);
  for (const n of ["palette", "selected", "hover", "title", "subtitle", "row_groups", "col_groups",
                   "row_dynamic", "col_dynamic", "row_title", "col_title"]) handlers.push(["change:" + n, draw]);
  for (const [ev, fn] of handlers) model.on(ev, fn);
  draw();
  return () => { for (const [ev, fn] of handlers) model.off(ev, fn); };
}

export default { render };
