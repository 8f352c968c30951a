// Canvas view of a widgets grid source, of any size: a viewport over the grid with zoom, pan and
// a minimap, drawing only what is visible, with level of detail: cells with their labels when
// they are large enough, colour only when they are not, and an aggregated heat map beyond that.
// The kernel holds the data: the state carries an overview (one colour per block of cells) and a
// first tile; other windows are asked for with a custom message {type:"tile", r0, c0, nr, nc,
// step, gen} and arrive as {type:"tile", ...} with two buffers (float64 keys, uint8 colours).
// Hover writes `hover` = [row, col] and shows the kernel's `hover_text`; a click writes `selected`.
// It fits its output area: a grid of up to 2^14 cells opens readable (see readableZoom), a larger one fitted
// (square cells once labels no longer fit, so a square
// layout is a square), the canvas is never wider than the output, text wraps.  The mouse wheel scrolls the
// page; Ctrl (or Cmd) + wheel zooms, dragging pans, and the toolbar says so.  Colours of text, rules and
// background come from JupyterLab's theme variables (light, dark, high contrast), redrawn on a theme change.

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

const CELL_H = 18, CHAR_W = 7, MAX_W = 900, MAX_H = 600;
const FONT = "11px 'DejaVu Sans Mono', Menlo, Consolas, monospace";
const DYN = "#b35806", SEL = "#d7191c";
const LABEL_PX = 11, MIN_SIDE = 40;      // cell height at which labels are drawn: below it cells are square (aspect kept)
// theme colours: JupyterLab's CSS variables, with the light theme's values where there are none
const VARS = { fg: ["--jp-ui-font-color1", "#333333"], muted: ["--jp-ui-font-color2", "#555555"],
               bg: ["--jp-layout-color0", "#ffffff"], rule: ["--jp-border-color1", "#999999"],
               ink: ["--jp-ui-font-color0", "#000000"] };
function themeOf(node) {
  const cs = getComputedStyle(node), out = {};
  for (const [k, [name, dflt]] of Object.entries(VARS)) out[k] = cs.getPropertyValue(name).trim() || dflt;
  return out;
}
const cssVar = (k) => `var(${VARS[k][0]}, ${VARS[k][1]})`;
const LABEL_MIN_PX = 4;
const READABLE_CELLS = 1 << 14;   // a grid up to this size opens readable (labels or its pattern), larger ones whole   // below this cell size a tile is asked for by blocks (a heat map)

function rgbOf(hex) { return [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16)); }
function textOn(hex) {
  const lin = rgbOf(hex).map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.179 ? "#000" : "#fff";
}
function div(cls, style) {
  const d = document.createElement("div");
  d.className = cls;
  Object.assign(d.style, { overflowWrap: "break-word", whiteSpace: "pre-wrap" }, style || {});
  return d;
}
// a tile as a 1-pixel-per-block image, drawn scaled without smoothing
function tileImage(colors, nr, nc, rgb) {
  const c = document.createElement("canvas");
  c.width = Math.max(nc, 1); c.height = Math.max(nr, 1);
  const g = c.getContext("2d");
  const img = g.createImageData(c.width, c.height);
  for (let i = 0; i < nr * nc; i++) {
    const p = rgb[colors[i] % rgb.length];
    img.data[4 * i] = p[0]; img.data[4 * i + 1] = p[1]; img.data[4 * i + 2] = p[2]; img.data[4 * i + 3] = 255;
  }
  g.putImageData(img, 0, 0);
  return c;
}

function render({ model, el }) {
  const root = div("wb-grid wb-live", { fontFamily: "'DejaVu Sans Mono', Menlo, Consolas, monospace", fontSize: "12px",
                                whiteSpace: "normal", maxWidth: "100%", color: cssVar("fg") });
  const title = div("wb-title", { fontWeight: "bold" });
  const sub = div("wb-subtitle");
  const notes = div("wb-notes", { color: cssVar("muted") });
  const bar = div("wb-toolbar", { display: "flex", gap: "4px", alignItems: "center", margin: "2px 0" });
  const mk = (cls, text, tip) => {
    const b = document.createElement("button");
    b.className = cls; b.textContent = text; b.title = tip;
    b.style.cssText = "font:inherit;padding:0 6px;cursor:pointer";
    bar.appendChild(b);
    return b;
  };
  const bOut = mk("wb-zoom-out", "\u2212", "zoom out"), bIn = mk("wb-zoom-in", "+", "zoom in");
  const bFit = mk("wb-fit", "fit", "the whole grid"), bOne = mk("wb-one", "1:1", "cells at full size");
  const zoomInfo = document.createElement("span");
  zoomInfo.className = "wb-zoom"; zoomInfo.style.color = cssVar("muted");
  const hint = document.createElement("span");
  hint.className = "wb-hint"; hint.style.color = cssVar("muted");
  hint.textContent = "Ctrl+wheel zooms, drag pans";
  Object.assign(hint.style, { marginLeft: "12px", paddingLeft: "12px", borderLeft: `1px solid ${cssVar("rule")}` });
  zoomInfo.style.marginLeft = "6px";
  bar.style.flexWrap = "wrap";
  bar.append(zoomInfo, hint);
  const colTitle = div("wb-coltitle");
  const body = div("wb-body", { display: "flex", flexWrap: "wrap", gap: "8px", alignItems: "flex-start", whiteSpace: "normal" });
  const canvas = document.createElement("canvas");
  canvas.className = "wb-canvas";
  canvas.style.cursor = "crosshair";
  canvas.style.flex = "none";
  canvas.style.maxWidth = "100%";
  // flex-start: a stretched minimap would take the legend's width and push the legend far down
  const side = div("wb-side", { display: "flex", flexDirection: "column", alignItems: "flex-start", gap: "6px",
                                whiteSpace: "normal" });
  const mini = document.createElement("canvas");
  mini.className = "wb-minimap";
  mini.style.cssText = `border:1px solid ${cssVar("rule")};cursor:pointer`;
  const legend = div("wb-legend", { maxWidth: "220px" });
  side.append(mini, legend);
  body.append(canvas, side);
  const rowTitle = div("wb-rowtitle");
  // the read-out under the view, and the same text beside the pointer while it hovers a cell (a tooltip in the
  // page's body, kept inside the window: a large view's own read-out may have scrolled off screen)
  const readout = div("wb-readout", { minHeight: "1.4em", background: cssVar("bg") });
  const tip = div("wb-tip wb-grid-tip", { position: "fixed", display: "none", zIndex: "10000", pointerEvents: "none",
                                          fontFamily: "'DejaVu Sans Mono', Menlo, Consolas, monospace", fontSize: "12px",
                                          padding: "2px 6px", background: cssVar("bg"), color: cssVar("fg"),
                                          border: `1px solid ${cssVar("rule")}`, borderRadius: "3px", maxWidth: "60vw" });
  document.body.appendChild(tip);
  let pointer = null;   // the last pointer position over a cell (clientX, clientY)
  function placeTip() {
    const text = model.get("hover_text");
    if (!pointer || !text || (model.get("hover") || []).length !== 2) { tip.style.display = "none"; return; }
    tip.textContent = text; tip.style.display = "block";
    const w = tip.offsetWidth, h = tip.offsetHeight, vw = window.innerWidth, vh = window.innerHeight;
    let x = pointer[0] + 14, y = pointer[1] + 16;
    if (x + w > vw - 4) x = Math.max(4, pointer[0] - w - 14);
    if (y + h > vh - 4) y = Math.max(4, pointer[1] - h - 12);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  root.append(title, sub, notes, bar, colTitle, body, rowTitle, readout);
  el.appendChild(root);

  let st = null;                 // geometry and data
  let tile = null, pending = null, queued = false;
  let z = 1, ox = 0, oy = 0;     // zoom and the content pixel at the viewport's corner
  let th = themeOf(root);
  let fitted = false;            // "fit" (the whole grid) or "readable" (see readableZoom): kept as the area resizes, until a zoom

  function decodeTile(meta, keysBuf, colorsBuf) {
    const t = Object.assign({}, meta);
    t.keys = f64(keysBuf); t.colors = u8(colorsBuf);
    t.img = tileImage(t.colors, t.nr, t.nc, st.rgb);
    return t;
  }

  function setup() {
    const palette = model.get("palette");
    const rows = model.get("rows"), cols = model.get("cols");
    const chars = Math.max(model.get("label_chars"), model.get("col_label_chars"), 1);
    const cw0 = Math.max(22, CHAR_W * chars + 8);
    const left = CHAR_W * Math.max(model.get("row_label_chars"), 1) + 12, top = 18;
    const om = model.get("overview_meta");
    st = { rows, cols, cw0, left, top, palette, rgb: palette.map(rgbOf), text: palette.map(textOn), om };
    st.ov = tileImage(u8(model.get("overview_colors")), om.nr, om.nc, st.rgb);
    tile = decodeTile(model.get("tile_meta"), model.get("tile_keys"), model.get("tile_colors"));
    pending = null;
    // start at full size when the grid fits, else fitted (the whole grid, aspect kept)
    ox = 0; oy = 0; z = 1;
    const big = st.left + cols * cellW() + 1 > maxW() || st.top + rows * cellH() + 1 > MAX_H;   // refitted as the area resizes
    fitted = !big ? false : rows * cols <= READABLE_CELLS && Math.min(rows, cols) >= 8 ? "readable" : "fit";
    title.textContent = model.get("title");
    sub.textContent = model.get("subtitle");
    notes.textContent = (model.get("notes") || []).join("\n");
    const cd = model.get("col_dynamic"), rd = model.get("row_dynamic");
    colTitle.textContent = "columns " + model.get("col_title") + (cd ? " (dynamic)" : "");
    colTitle.style.color = cd ? DYN : cssVar("fg"); colTitle.style.fontStyle = cd ? "italic" : "normal";
    rowTitle.textContent = "rows " + model.get("row_title") + (rd ? " (dynamic)" : "");
    rowTitle.style.color = rd ? DYN : cssVar("fg"); rowTitle.style.fontStyle = rd ? "italic" : "normal";
    drawLegend();
  }

  function drawLegend() {
    const lg = model.get("legend") || {};
    legend.textContent = "";
    if (!lg.kind) return;
    const head = div("wb-legend-title", { color: cssVar("fg") });
    head.textContent = lg.label || "";
    legend.appendChild(head);
    if (lg.kind === "scale") {
      const pal = lg.stops || st.palette, stops = [];
      const n = Math.min(pal.length - 1, 32);
      for (let k = 0; k <= n; k++) stops.push(pal[Math.round(k * (pal.length - 1) / n)]);
      const g = div("wb-legend-scale", { height: "10px", width: "160px", background: `linear-gradient(to right, ${stops.join(",")})` });
      const ends = div("wb-legend-ends", { display: "flex", justifyContent: "space-between", width: "160px", whiteSpace: "normal" });
      const a = document.createElement("span"), b = document.createElement("span");
      a.textContent = String(lg.lo); b.textContent = String(lg.hi);
      ends.append(a, b);
      legend.append(g, ends);
    } else {
      for (const [color, text] of lg.entries || []) {
        const row = div("wb-legend-entry", { display: "flex", gap: "4px", alignItems: "center", whiteSpace: "normal" });
        const sw = div("", { width: "12px", height: "12px", background: color, border: `1px solid ${cssVar("rule")}`, flex: "none" });
        const tx = document.createElement("span"); tx.textContent = text;
        row.append(sw, tx);
        legend.appendChild(row);
      }
    }
    if (lg.note) { const n = div("wb-legend-note", { color: cssVar("muted") }); n.textContent = lg.note; legend.appendChild(n); }
  }

  // cells are label-wide while labels fit (CELL_H * z >= LABEL_PX), square below: a square layout stays square
  const cellH = () => CELL_H * z, cellW = () => (CELL_H * z >= LABEL_PX ? st.cw0 * z : CELL_H * z);
  // never wider than the output area (measured there: a view inside a wrapping row is sized by its content)
  const area = () => el.closest(".jp-OutputArea-output, .output_subarea, .cell-output-ipywidget-background") || el.parentElement || el;
  const maxW = () => Math.min(MAX_W, Math.max(200, (area().clientWidth || MAX_W) - 16));
  let watched = null, lastArea = 0;   // the output area resized (the file browser opened, a narrower window): fit again
  const sizeWatch = new ResizeObserver(() => {
    const w = area().clientWidth;
    if (st && w && Math.abs(w - lastArea) > 1) { lastArea = w; draw(); }
  });
  function viewSize() {
    const W = Math.max(120, Math.min(maxW(), st.left + st.cols * cellW() + 1));
    const H = Math.max(40, Math.min(MAX_H, st.top + st.rows * cellH() + 1));
    return [W, H];
  }
  function clampPan() {
    const [W, H] = viewSize();
    ox = Math.max(0, Math.min(ox, st.cols * cellW() - (W - st.left)));
    oy = Math.max(0, Math.min(oy, st.rows * cellH() - (H - st.top)));
  }
  // the whole grid, aspect kept; but a grid that would be thinner than MIN_SIDE px (a long vector) keeps its
  // short side MIN_SIDE px thick and its long side scrolls (the minimap shows where)
  function fitZoom() {
    const w = maxW() - st.left - 1, h = MAX_H - st.top - 1;
    const labelled = Math.min(1, w / (st.cols * st.cw0), h / (st.rows * CELL_H));
    if (CELL_H * labelled >= LABEL_PX) return labelled;
    const square = Math.min(LABEL_PX / CELL_H * 0.999, w / (st.cols * CELL_H), h / (st.rows * CELL_H));
    const thin = Math.min(st.rows, st.cols) * CELL_H * square;
    return thin >= MIN_SIDE ? square : Math.min(1, MIN_SIDE / (Math.min(st.rows, st.cols) * CELL_H));
  }
  // a grid of at most READABLE_CELLS cells (8 or more a side) opens readable rather than whole: its labels drawn, all its columns in
  // the width and its rows panned when they fit that way; else, coloured by bank or chunk (the pattern is the
  // lesson), every column at the largest square cell; else at the zoom its labels need (the minimap shows where)
  function readableZoom() {
    const w = maxW() - st.left - 1;
    const chars = Math.max(model.get("label_chars"), 1);
    const zl = Math.min(1, Math.max(LABEL_PX / CELL_H, (CHAR_W * chars + 2) / st.cw0));
    const whole = fitZoom();
    if (CELL_H * whole >= LABEL_PX) return whole;
    if (st.cols * st.cw0 * zl <= w) return Math.max(whole, Math.min(1, w / (st.cols * st.cw0)));
    const lg = model.get("legend") || {};
    if (/bank|chunk/.test(lg.label || "")) return Math.max(whole, Math.min(LABEL_PX / CELL_H * 0.999, w / (st.cols * CELL_H)));
    return Math.max(whole, zl);
  }
  function neededStep() {
    const s = Math.min(cellW(), cellH());
    return s >= LABEL_MIN_PX ? 1 : Math.ceil(LABEL_MIN_PX / s);
  }
  function visible() {
    const [W, H] = viewSize();
    const cw = cellW(), ch = cellH();
    const c0 = Math.max(0, Math.floor(ox / cw)), c1 = Math.min(st.cols, Math.ceil((ox + W - st.left) / cw));
    const r0 = Math.max(0, Math.floor(oy / ch)), r1 = Math.min(st.rows, Math.ceil((oy + H - st.top) / ch));
    return { r0, r1, c0, c1 };
  }
  function covers(t, v, step) {
    return t && t.step === step && t.gen === model.get("generation") && t.r0 <= v.r0 && t.c0 <= v.c0 &&
      t.r0 + t.nr * step >= v.r1 && t.c0 + t.nc * step >= v.c1;
  }
  function request() {
    const step = neededStep();
    const v = visible();
    if (step >= st.om.step || covers(tile, v, step)) return;   // the overview is as fine as needed
    if (pending) { queued = true; return; }
    // a quarter of a viewport of margin, aligned to the step
    const mr = Math.ceil((v.r1 - v.r0) / 4), mc = Math.ceil((v.c1 - v.c0) / 4);
    const r0 = Math.max(0, Math.floor((v.r0 - mr) / step) * step), c0 = Math.max(0, Math.floor((v.c0 - mc) / step) * step);
    const nr = Math.ceil((Math.min(st.rows, v.r1 + mr) - r0) / step), nc = Math.ceil((Math.min(st.cols, v.c1 + mc) - c0) / step);
    pending = { r0, c0, nr, nc, step, gen: model.get("generation") };
    model.send(Object.assign({ type: "tile" }, pending));
  }
  function onMessage(msg, buffers) {
    if (!msg || msg.type !== "tile") return;
    pending = null;
    if (msg.gen === model.get("generation")) tile = decodeTile(msg, buffers[0], buffers[1]);
    draw();
    if (queued) { queued = false; request(); }
  }

  function draw() {
    if (!st) setup();
    if (area() !== watched) { if (watched) sizeWatch.unobserve(watched); watched = area(); sizeWatch.observe(watched); }
    if (fitted) { z = fitted === "readable" ? readableZoom() : fitZoom(); ox = 0; oy = 0; }
    clampPan();
    const [W, H] = viewSize();
    const { rows, cols, left, top } = st;
    const cw = cellW(), ch = cellH();
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
      canvas.style.width = W + "px"; canvas.style.height = H + "px";
    }
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    th = themeOf(root);
    g.fillStyle = th.bg; g.fillRect(0, 0, W, H);
    g.imageSmoothingEnabled = false;
    const gw = Math.min(W - left, cols * cw - ox), gh = Math.min(H - top, rows * ch - oy);
    g.save();
    g.beginPath(); g.rect(left, top, gw, gh); g.clip();
    // the overview is always underneath: a large grid is never a blank box while tiles arrive
    const om = st.om;
    g.drawImage(st.ov, left - ox, top - oy, om.nc * om.step * cw, om.nr * om.step * ch);
    const v = visible(), need = neededStep();
    const t = tile && tile.gen === model.get("generation") ? tile : null;
    if (t) g.drawImage(t.img, left + t.c0 * cw - ox, top + t.r0 * ch - oy, t.nc * t.step * cw, t.nr * t.step * ch);
    const exact = t && t.step === 1;
    const at = (r, c) => (exact && r >= t.r0 && r < t.r0 + t.nr && c >= t.c0 && c < t.c0 + t.nc) ? (r - t.r0) * t.nc + (c - t.c0) : -1;
    const X = (c) => left + c * cw - ox, Y = (r) => top + r * ch - oy;
    // cell rules, nesting rules and labels only where cells are large enough to carry them
    if (exact && need === 1 && Math.min(cw, ch) >= 6) {
      g.strokeStyle = "#555"; g.lineWidth = 0.5; g.beginPath();
      for (let c = v.c0; c <= v.c1; c++) { g.moveTo(X(c), Y(v.r0)); g.lineTo(X(c), Y(v.r1)); }
      for (let r = v.r0; r <= v.r1; r++) { g.moveTo(X(v.c0), Y(r)); g.lineTo(X(v.c1), Y(r)); }
      g.stroke();
    }
    g.strokeStyle = "#000";   // on the cells' own colours: black reads on every palette entry
    const rules = (groups, dyn, vertical) => groups.forEach((p, level) => {
      const px = p * (vertical ? cw : ch);
      if (px < 4) return;
      g.lineWidth = 1 + level; g.setLineDash(dyn ? [4, 2] : []); g.beginPath();
      const a = vertical ? v.c0 : v.r0, b = vertical ? v.c1 : v.r1;
      for (let k = Math.ceil(Math.max(a, 1) / p) * p; k < b; k += p) {
        if (vertical) { g.moveTo(X(k), Y(v.r0)); g.lineTo(X(k), Y(v.r1)); } else { g.moveTo(X(v.c0), Y(k)); g.lineTo(X(v.c1), Y(k)); }
      }
      g.stroke();
    });
    rules(model.get("col_groups"), model.get("col_dynamic"), true);
    rules(model.get("row_groups"), model.get("row_dynamic"), false);
    g.setLineDash([]);
    // what this zoom shows: cells (labelled when they fit) or block means, at the finest step at hand
    const shown = t && t.step === need && covers(t, v, need) ? t.step : om.step;
    let lod = need === 1 && exact ? "colour" : `heat map: each pixel block = mean of ${shown}x${shown} cells`;
    if (exact && need === 1 && ch >= 11) {
      const texts = t.texts || [];
      g.font = FONT; g.textAlign = "center";
      let drawn = false;
      for (let r = v.r0; r < v.r1; r++) {
        for (let c = v.c0; c < v.c1; c++) {
          const i = at(r, c);
          if (i < 0) continue;
          const k = t.keys[i];
          const s = texts.length ? texts[i] : (Number.isNaN(k) ? "" : String(k));
          if (!s || CHAR_W * s.length + 2 > cw) continue;
          g.fillStyle = st.text[t.colors[i] % st.text.length];
          g.fillText(s, X(c) + cw / 2, Y(r) + ch / 2 + 4);
          drawn = true;
        }
      }
      if (drawn) lod = "labels";
    }
    const selected = model.get("selected");
    if (exact && selected !== null && selected !== undefined) {
      g.strokeStyle = SEL; g.lineWidth = 2.5;
      for (let r = v.r0; r < v.r1; r++) for (let c = v.c0; c < v.c1; c++) {
        const i = at(r, c);
        if (i >= 0 && t.keys[i] === selected) g.strokeRect(X(c) + 1, Y(r) + 1, cw - 2, ch - 2);
      }
    }
    const hover = model.get("hover") || [];
    if (hover.length === 2) { g.strokeStyle = "#000"; g.lineWidth = 2; g.strokeRect(X(hover[1]), Y(hover[0]), cw, ch); }
    g.restore();
    // headers stay in place while the grid pans under them
    g.font = FONT; g.fillStyle = th.bg;
    g.fillRect(0, 0, W, top); g.fillRect(0, 0, left, H);
    const labels = (n, first, last, size, pos, colLabels) => {
      const names = exact ? (colLabels ? t.col_labels : t.row_labels) : null;
      const off = exact ? (colLabels ? t.c0 : t.r0) : 0;
      const widest = colLabels ? CHAR_W * (model.get("col_label_chars") + 1) : 14;
      const every = Math.max(1, Math.ceil(widest / size));
      for (let k = Math.ceil(first / every) * every; k < last; k += every) {
        const name = names && k - off >= 0 && k - off < names.length ? names[k - off] : String(k);
        pos(k, name);
      }
    };
    g.fillStyle = model.get("col_dynamic") ? DYN : th.fg; g.textAlign = "center";
    labels(cols, v.c0, v.c1, cw, (c, s) => g.fillText(s, X(c) + cw / 2, top - 5), true);
    g.fillStyle = model.get("row_dynamic") ? DYN : th.fg; g.textAlign = "right";
    labels(rows, v.r0, v.r1, ch, (r, s) => g.fillText(s, left - 5, Y(r) + ch / 2 + 4), false);
    g.strokeStyle = th.fg; g.lineWidth = 1.5;
    g.strokeRect(left, top, Math.max(0, gw), Math.max(0, gh));
    Object.assign(canvas.dataset, { cellW: cw, cellH: ch, left, top, ox, oy, rows, cols, zoom: z, lod,
                                    step: t ? t.step : om.step, bg: th.bg, fg: th.fg });
    // text never sets the view's width: it wraps at the output area's width (at least 320 px), between words
    const textW = Math.max(320, Math.max(W + (mini.style.display === "none" ? 0 : 180), (area().clientWidth || 0) - 16)) + "px";
    for (const d of [title, sub, notes, colTitle, rowTitle, readout]) d.style.maxWidth = textW;
    zoomInfo.textContent = `zoom ${Math.round(z * 1000) / 10}% \u00b7 ${lod}`;
    drawMini(W, H);
    updateReadout();
    request();
  }

  function drawMini(W, H) {
    const big = st.cols * cellW() > W - st.left + 1 || st.rows * cellH() > H - st.top + 1;
    mini.style.display = big ? "block" : "none";
    if (!big) return;
    const cW = st.cols * st.cw0, cH = st.rows * CELL_H;   // content aspect at zoom 1
    const s = 160 / Math.max(cW, cH);
    const mw = Math.max(8, Math.round(cW * s)), mh = Math.max(8, Math.round(cH * s));
    mini.width = mw; mini.height = mh;
    mini.style.width = mw + "px"; mini.style.height = mh + "px";   // drawn at its own size, never stretched
    const g = mini.getContext("2d");
    g.imageSmoothingEnabled = false;
    g.drawImage(st.ov, 0, 0, st.om.nc * st.om.step * mw / st.cols, st.om.nr * st.om.step * mh / st.rows);
    g.strokeStyle = SEL; g.lineWidth = 2;
    const fx = mw / (st.cols * cellW()), fy = mh / (st.rows * cellH());
    g.strokeRect(ox * fx, oy * fy, Math.max(2, (W - st.left) * fx), Math.max(2, (H - st.top) * fy));
  }

  function updateReadout() {
    const hover = model.get("hover") || [];
    const sel = model.get("selected");
    const parts = [];
    if (hover.length === 2) parts.push(model.get("hover_text"));
    if (sel !== null && sel !== undefined) parts.push(`selected ${model.get("key_name")} ${sel}` +
      (model.get("selected_count") >= 0 ? `: ${model.get("selected_count")} cell${model.get("selected_count") === 1 ? "" : "s"}` : ""));
    readout.textContent = parts.filter((s) => s).join("\n") || `hover a cell; click to select its ${model.get("key_name")}`;
  }

  function cellAt(ev) {
    if (!st) return null;
    const rect = canvas.getBoundingClientRect();
    const x = ev.clientX - rect.left - st.left + ox, y = ev.clientY - rect.top - st.top + oy;
    if (ev.clientX - rect.left < st.left || ev.clientY - rect.top < st.top) return null;
    const c = Math.floor(x / cellW()), r = Math.floor(y / cellH());
    if (r < 0 || c < 0 || r >= st.rows || c >= st.cols) return null;
    return [r, c];
  }
  function zoomTo(nz, px, py) {   // keep the content point under (px, py) in place
    fitted = false;
    const fz = Math.max(Math.min(fitZoom(), 1) / 4, Math.min(8, nz));
    const fx = (ox + px) / (st.cols * cellW()), fy = (oy + py) / (st.rows * cellH());
    z = fz; ox = fx * st.cols * cellW() - px; oy = fy * st.rows * cellH() - py;
    draw();
  }
  const center = () => { const [W, H] = viewSize(); return [(W - st.left) / 2, (H - st.top) / 2]; };
  bIn.onclick = () => zoomTo(z * 2, ...center());
  bOut.onclick = () => zoomTo(z / 2, ...center());
  bFit.onclick = () => { fitted = "fit"; draw(); };
  bOne.onclick = () => zoomTo(1, ...center());

  let last = "", drag = null;
  canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, ox, oy, moved: false }; });
  window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });
  canvas.addEventListener("mousemove", (ev) => {
    if (drag && ev.buttons) {
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) { fitted = false; ox = drag.ox - dx; oy = drag.oy - dy; draw(); return; }
    }
    const rc = cellAt(ev);
    const key = rc ? rc.join(",") : "";
    if (key === last) return;   // only cell changes cross the wire
    last = key;
    pointer = rc ? [ev.clientX, ev.clientY] : null;
    model.set("hover", rc || []);
    model.save_changes();
    if (!rc) placeTip();
  });
  canvas.addEventListener("mouseleave", () => { last = ""; pointer = null; placeTip(); model.set("hover", []); model.save_changes(); });
  canvas.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const rc = cellAt(ev);
    if (!rc || !tile || tile.step !== 1) return;
    const r = rc[0] - tile.r0, c = rc[1] - tile.c0;
    if (r < 0 || c < 0 || r >= tile.nr || c >= tile.nc) return;
    const k = tile.keys[r * tile.nc + c];
    if (Number.isNaN(k)) return;
    model.set("selected", model.get("selected") === k ? null : k);
    model.save_changes();
  });
  // the wheel belongs to the page (a notebook is read by scrolling); Ctrl/Cmd + wheel zooms the grid
  canvas.addEventListener("wheel", (ev) => {
    if (!(ev.ctrlKey || ev.metaKey)) return;
    const rect = canvas.getBoundingClientRect();
    ev.preventDefault();
    zoomTo(z * (ev.deltaY < 0 ? 1.25 : 0.8), ev.clientX - rect.left - st.left, ev.clientY - rect.top - st.top);
  }, { passive: false });
  mini.addEventListener("click", (ev) => {
    const rect = mini.getBoundingClientRect();
    const [W, H] = viewSize();
    // the displayed box (border excluded), not the bitmap size: a click's fraction of the minimap
    const fx = (ev.clientX - rect.left - mini.clientLeft) / Math.max(1, mini.clientWidth);
    const fy = (ev.clientY - rect.top - mini.clientTop) / Math.max(1, mini.clientHeight);
    fitted = false;
    ox = fx * st.cols * cellW() - (W - st.left) / 2;
    oy = fy * st.rows * cellH() - (H - st.top) / 2;
    draw();
  });

  const reset = () => { st = null; draw(); };
  // a theme change (JupyterLab swaps its stylesheet and marks <body>) redraws the canvas in the new colours
  const themeWatch = new MutationObserver(() => { if (st) draw(); });
  themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"] });
  const handlers = [["change:generation", reset], ["msg:custom", onMessage]];
  for (const n of ["selected", "hover", "selected_count"]) handlers.push(["change:" + n, draw]);
  handlers.push(["change:hover_text", () => { updateReadout(); placeTip(); }]);
  handlers.push(["change:subtitle", () => { sub.textContent = model.get("subtitle"); }]);
  handlers.push(["change:notes", () => { notes.textContent = (model.get("notes") || []).join("\n"); }]);
  for (const [ev, fn] of handlers) model.on(ev, fn);
  draw();
  return () => { tip.remove(); themeWatch.disconnect(); sizeWatch.disconnect(); for (const [ev, fn] of handlers) model.off(ev, fn); };
}

export default { render };
