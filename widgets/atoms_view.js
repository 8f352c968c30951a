// MMAView / CopyView: one canvas a panel (A, B, C or src, dst), cells coloured by thread, all panels
// at the model's one cell size (p.cell, the same in every panel) so that their lengths compare.
// Click a cell: select its thread in every panel (model "thread"); hover: model "hover" gets
// {panel, thread, value, row, col}, cleared when the pointer leaves.  A panel read from shared
// memory by a whole group of threads (p.shared > 0, SM90 _SS operands) is grey, with its note under
// it: no single thread holds those cells, so selecting a thread outlines none there.
// Each canvas says what it drew: data-selected-cells (outlined cells) and data-drawn (draws so far).
// The view fits its output area: panels wrap to the next line, and open scaled so that the widest fits
// ("fit"); "1:1" draws them at full size (the row then scrolls on its own), "+" and "−" zoom.  The hover
// status sits above the panels and sticks to the top of the screen while the view is on it.  Text and
// frames take JupyterLab's theme colours (the cells keep CuTe's TV colours).
const SHARED_FILLS = ["#e4e4e4", "#cdcdcd"];
const NOTE_W = 240;
const FG = "var(--jp-ui-font-color1, #333333)", MUTED = "var(--jp-ui-font-color2, #555555)";
const BG = "var(--jp-layout-color0, #ffffff)", RULE = "var(--jp-border-color1, #444444)";
function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "wb-atoms wb-live";
  Object.assign(root.style, { fontFamily: "sans-serif", color: FG, maxWidth: "100%" });
  const bar = document.createElement("div");
  bar.className = "wb-atoms-toolbar";
  Object.assign(bar.style, { display: "flex", gap: "4px", alignItems: "center", flexWrap: "wrap", margin: "2px 0" });
  const mk = (cls, text, tip) => {
    const b = document.createElement("button");
    b.className = cls; b.textContent = text; b.title = tip;
    b.style.cssText = "font:inherit;font-size:12px;padding:0 6px;cursor:pointer";
    bar.appendChild(b);
    return b;
  };
  const bOut = mk("wb-zoom-out", "\u2212", "smaller"), bIn = mk("wb-zoom-in", "+", "larger");
  const bFit = mk("wb-fit", "fit", "every panel within the output's width"), bOne = mk("wb-one", "1:1", "full size");
  const zoomInfo = document.createElement("span");
  zoomInfo.className = "wb-zoom";
  Object.assign(zoomInfo.style, { fontSize: "12px", color: MUTED });
  bar.appendChild(zoomInfo);
  const row = document.createElement("div");
  row.className = "wb-atoms-panels";
  Object.assign(row.style, { display: "flex", flexWrap: "wrap", gap: "16px", alignItems: "flex-start", overflowX: "auto",
                             maxWidth: "100%" });
  const status = document.createElement("div");
  status.className = "wb-atoms-status";
  Object.assign(status.style, { fontSize: "12px", minHeight: "16px", position: "sticky", top: "0", background: BG,
                                zIndex: "1", overflowWrap: "anywhere" });
  const readout = document.createElement("pre");
  readout.className = "wb-atoms-readout";
  Object.assign(readout.style, { fontSize: "11px", whiteSpace: "pre-wrap", overflowWrap: "anywhere", color: FG });
  root.append(bar, status, row, readout);
  el.appendChild(root);
  let canvases = [];
  let scale = null;   // CSS px per bitmap px; null: fitted to the output area
  const area = () => el.closest(".jp-OutputArea-output, .output_subarea, .cell-output-ipywidget-background") || el.parentElement || el;
  let watched = null, lastArea = 0;
  const sizeWatch = new ResizeObserver(() => {
    const w = area().clientWidth;
    if (w && Math.abs(w - lastArea) > 1) { lastArea = w; place(); }
  });
  const watch = () => { if (area() !== watched) { if (watched) sizeWatch.unobserve(watched); watched = area(); sizeWatch.observe(watched); } };
  function fitScale() {
    const avail = Math.max(100, (area().clientWidth || 900) - 16);
    const widest = Math.max(1, ...canvases.map(({ canvas }) => canvas.width));
    return Math.min(1, (avail - 2) / widest);   // (the canvas's 1 px border on each side)
  }
  function place() {   // each canvas at its bitmap size times the scale; the panel boxes follow
    watch();
    const s = scale === null ? fitScale() : scale;
    for (const { canvas, box, note } of canvases) {
      canvas.style.width = canvas.width * s + "px";
      canvas.style.height = canvas.height * s + "px";
      box.style.maxWidth = Math.max(canvas.width * s + 2, note ? NOTE_W : 0) + "px";
    }
    zoomInfo.textContent = `${Math.round(s * 1000) / 10}%` + (scale === null ? " (fit)" : "");
    root.dataset.scale = String(s);
  }
  bFit.onclick = () => { scale = null; place(); };
  bOne.onclick = () => { scale = 1; place(); };
  bIn.onclick = () => { scale = Math.min(4, (scale === null ? fitScale() : scale) * 1.5); place(); };
  bOut.onclick = () => { scale = Math.max(0.05, (scale === null ? fitScale() : scale) / 1.5); place(); };

  function draw() {
    const panels = model.get("panels");
    const palette = model.get("palette");
    const sel = model.get("thread");
    canvases.forEach(({ canvas, p }) => {
      const cs = p.cell;
      const ctx = canvas.getContext("2d");
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      ctx.font = "8px sans-serif";
      ctx.textAlign = "center";
      for (let r = 0; r < p.rows; r++) {
        for (let c = 0; c < p.cols; c++) {
          const t = p.thr[r * p.cols + c];
          ctx.fillStyle = p.fill ? p.fills[p.fill[r * p.cols + c]] :   // a bank-coloured panel: its own colours
            t < 0 ? "#fff" : p.shared ? SHARED_FILLS[Math.floor(t / p.shared) % 2] : palette[t % palette.length];
          ctx.fillRect(c * cs, r * cs, cs, cs);
          if (cs >= 28 && t >= 0 && !p.shared) {
            ctx.fillStyle = "#000";
            ctx.fillText("T" + t, c * cs + cs / 2, r * cs + cs / 2 - 2);
            ctx.fillText("V" + p.val[r * p.cols + c], c * cs + cs / 2, r * cs + cs / 2 + 8);
          }
        }
      }
      let outlined = 0;
      if (sel >= 0 && !p.shared) {
        ctx.strokeStyle = "#000";
        ctx.lineWidth = 2;
        for (let i = 0; i < p.thr.length; i++) {
          if (p.thr[i] === sel) {
            ctx.strokeRect((i % p.cols) * cs + 1, Math.floor(i / p.cols) * cs + 1, cs - 2, cs - 2);
            outlined++;
          }
        }
      }
      canvas.dataset.selectedCells = String(outlined);
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
    });
    readout.textContent = model.get("readout").join("\n");
  }

  function build() {
    row.innerHTML = "";
    canvases = model.get("panels").map((p) => {
      const box = document.createElement("div");
      const title = document.createElement("div");
      title.textContent = p.title;
      title.style.fontWeight = "bold";
      title.style.fontSize = "12px";
      title.style.overflowWrap = "anywhere";
      const canvas = document.createElement("canvas");
      const cs = p.cell;   // one size for every panel (the model sets it)
      canvas.width = p.cols * cs;
      canvas.height = p.rows * cs;
      canvas.dataset.panel = p.name;
      canvas.style.border = `1px solid ${RULE}`;
      canvas.style.boxSizing = "content-box";
      const at = (ev) => {   // by the displayed size: the canvas may be scaled
        const rect = canvas.getBoundingClientRect();
        const w = rect.width - 2, h = rect.height - 2;   // the 1 px border on each side
        const c = Math.floor((ev.clientX - rect.left - 1) / w * p.cols), r = Math.floor((ev.clientY - rect.top - 1) / h * p.rows);
        if (r < 0 || c < 0 || r >= p.rows || c >= p.cols) return null;
        return { r, c, t: p.thr[r * p.cols + c], v: p.val[r * p.cols + c] };
      };
      canvas.addEventListener("mousemove", (ev) => {
        const h = at(ev);
        if (!h) return;
        const cur = model.get("hover");
        if (cur.panel === p.name && cur.row === h.r && cur.col === h.c) return;
        const who = (p.shared ? `shared memory, read by T${h.t}..T${h.t + p.shared - 1} together` : `(T${h.t}, V${h.v})`) +
          (p.fill ? `, ${p.fill_name || "bank"} ${p.fill[h.r * p.cols + h.c]}` : "");
        status.textContent = `${p.name}: ${who} -> (${p.row_name}=${h.r}, ${p.col_name}=${h.c})`;
        model.set("hover", { panel: p.name, thread: h.t, value: h.v, row: h.r, col: h.c });
        model.save_changes();
      });
      canvas.addEventListener("mouseleave", () => {
        model.set("hover", {});
        model.save_changes();
      });
      canvas.addEventListener("click", (ev) => {
        const h = at(ev);
        if (!h || h.t < 0 || p.shared) return;   // a shared operand names no single thread to select
        model.set("thread", h.t === model.get("thread") ? -1 : h.t);
        model.save_changes();
      });
      box.append(title, canvas);
      let note = null;
      if (p.note) {
        note = document.createElement("div");
        note.className = "wb-atoms-note";
        note.textContent = p.note;
        Object.assign(note.style, { fontSize: "11px", color: "#b35806", overflowWrap: "anywhere" });
        box.appendChild(note);
      }
      row.appendChild(box);
      return { canvas, p, box, note };
    });
    place();
    draw();
  }

  model.on("change:panels", build);
  model.on("change:thread", draw);
  model.on("change:readout", draw);
  build();
}
export default { render };
