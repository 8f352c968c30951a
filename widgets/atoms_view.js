// MMAView / CopyView: one canvas a panel (A, B, C or src, dst), cells coloured by thread, all panels
// at the model's one cell size (p.cell, the same in every panel) so that their lengths compare.
// Click a cell: select its thread in every panel (model "thread"); hover: model "hover" gets
// {panel, thread, value, row, col}, cleared when the pointer leaves.  A panel read from shared
// memory by a whole group of threads (p.shared > 0, SM90 _SS operands) is grey, with its note under
// it: no single thread holds those cells, so selecting a thread outlines none there.
// Each canvas says what it drew: data-selected-cells (outlined cells) and data-drawn (draws so far).
const SHARED_FILLS = ["#e4e4e4", "#cdcdcd"];
const NOTE_W = 240;
function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "wb-atoms wb-live";
  root.style.fontFamily = "sans-serif";
  const row = document.createElement("div");
  row.style.display = "flex";
  row.style.gap = "16px";
  row.style.alignItems = "flex-start";
  const status = document.createElement("div");
  status.className = "wb-atoms-status";
  status.style.fontSize = "12px";
  status.style.minHeight = "16px";
  const readout = document.createElement("pre");
  readout.className = "wb-atoms-readout";
  readout.style.fontSize = "11px";
  root.append(row, status, readout);
  el.appendChild(root);
  let canvases = [];

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
          ctx.fillStyle = t < 0 ? "#fff" : p.shared ? SHARED_FILLS[Math.floor(t / p.shared) % 2] : palette[t % palette.length];
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
      const canvas = document.createElement("canvas");
      const cs = p.cell;   // one size for every panel (the model sets it)
      canvas.width = p.cols * cs;
      canvas.height = p.rows * cs;
      canvas.dataset.panel = p.name;
      canvas.style.border = "1px solid #444";
      const at = (ev) => {
        const rect = canvas.getBoundingClientRect();
        const c = Math.floor((ev.clientX - rect.left) / cs), r = Math.floor((ev.clientY - rect.top) / cs);
        if (r < 0 || c < 0 || r >= p.rows || c >= p.cols) return null;
        return { r, c, t: p.thr[r * p.cols + c], v: p.val[r * p.cols + c] };
      };
      canvas.addEventListener("mousemove", (ev) => {
        const h = at(ev);
        if (!h) return;
        const cur = model.get("hover");
        if (cur.panel === p.name && cur.row === h.r && cur.col === h.c) return;
        const who = p.shared ? `shared memory, read by T${h.t}..T${h.t + p.shared - 1} together` : `(T${h.t}, V${h.v})`;
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
      if (p.note) {
        const note = document.createElement("div");
        note.className = "wb-atoms-note";
        note.textContent = p.note;
        Object.assign(note.style, { fontSize: "11px", color: "#b35806", maxWidth: Math.max(canvas.width, NOTE_W) + "px" });
        box.appendChild(note);
      }
      row.appendChild(box);
      return { canvas, p };
    });
    draw();
  }

  model.on("change:panels", build);
  model.on("change:thread", draw);
  model.on("change:readout", draw);
  build();
}
export default { render };
