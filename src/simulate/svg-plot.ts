/** One line of a plot: a name and its (x, y) points. */
export interface PlotSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function niceTicks(min: number, max: number, count: number): number[] {
  const span = max - min || 1;
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step)
    ticks.push(Number(t.toFixed(10)));
  return ticks;
}

/**
 * Renders series as a standalone SVG line chart (axes, ticks, grid, legend, optional horizontal
 * target line). No dependencies: the file opens in any browser.
 */
export function renderLinePlot(options: {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly PlotSeries[];
  target?: number;
  yMin?: number;
  yMax?: number;
}): string {
  const W = 800;
  const H = 500;
  const m = { left: 70, right: 20, top: 40, bottom: 60 };
  const all = options.series.flatMap((s) => s.points);
  const xMax = Math.max(1, ...all.map((p) => p[0]));
  const ys = all.map((p) => p[1]);
  const yMin = options.yMin ?? Math.min(...ys, options.target ?? Number.POSITIVE_INFINITY);
  const yMax = options.yMax ?? Math.max(...ys, options.target ?? Number.NEGATIVE_INFINITY);
  const lo = Number.isFinite(yMin) ? yMin : 0;
  const hi = Number.isFinite(yMax) && yMax > lo ? yMax : lo + 1;
  const sx = (x: number) => m.left + (x / xMax) * (W - m.left - m.right);
  const sy = (y: number) => H - m.bottom - ((y - lo) / (hi - lo)) * (H - m.top - m.bottom);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<title>${escapeXml(options.title)}</title>`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(options.title)}</text>`,
  );
  for (const t of niceTicks(lo, hi, 8)) {
    out.push(`<line x1="${m.left}" x2="${W - m.right}" y1="${sy(t)}" y2="${sy(t)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.left - 6}" y="${sy(t) + 4}" text-anchor="end">${t}</text>`);
  }
  for (const t of niceTicks(0, xMax, 10)) {
    out.push(`<line x1="${sx(t)}" x2="${sx(t)}" y1="${m.top}" y2="${H - m.bottom}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${sx(t)}" y="${H - m.bottom + 16}" text-anchor="middle">${t}</text>`);
  }
  out.push(
    `<rect x="${m.left}" y="${m.top}" width="${W - m.left - m.right}" height="${H - m.top - m.bottom}" fill="none" stroke="#333"/>`,
  );
  out.push(`<text x="${W / 2}" y="${H - 20}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`);
  out.push(
    `<text transform="translate(18 ${H / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  if (options.target !== undefined && options.target >= lo && options.target <= hi) {
    out.push(
      `<line x1="${m.left}" x2="${W - m.right}" y1="${sy(options.target)}" y2="${sy(options.target)}" stroke="#555" stroke-dasharray="6 4"/>`,
    );
    out.push(
      `<text x="${W - m.right - 4}" y="${sy(options.target) - 4}" text-anchor="end" fill="#555">target ${options.target}</text>`,
    );
  }
  options.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points
      .filter((p) => p[1] >= lo && p[1] <= hi)
      .map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`)
      .join(' ');
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.8" points="${pts}"/>`);
    const ly = m.top + 16 + i * 18;
    out.push(
      `<line x1="${m.left + 12}" x2="${m.left + 36}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="3"/>`,
    );
    out.push(`<text x="${m.left + 42}" y="${ly}">${escapeXml(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
