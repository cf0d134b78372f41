/**
 * Charts from the JSON an output carries: Plotly figures (`application/vnd.plotly.v1+json`)
 * with plotly.js's cartesian bundle, Vega and Vega-Lite specs with vega-embed.
 *
 * Both libraries are loaded on first use (a chunk of their own in JupyterLab). Nothing is
 * fetched: Vega's loader refuses every URL (a chart whose data is not in the output says so),
 * its expressions run in vega-interpreter (no `eval`, which the views' Content-Security-Policy
 * forbids), and a Plotly figure's pictures from elsewhere are dropped.
 */

/** The chart MIME types, Plotly's first. */
export const CHART_TYPES = [
  'application/vnd.plotly.v1+json',
  'application/vnd.vegalite.v6+json',
  'application/vnd.vegalite.v5+json',
  'application/vnd.vegalite.v4+json',
  'application/vnd.vegalite.v3+json',
  'application/vnd.vega.v6+json',
  'application/vnd.vega.v5+json'
];

/** Whether `mime` is a chart type. */
export function isChart(mime: string): boolean {
  return CHART_TYPES.includes(mime);
}

/** Why a chart cannot be drawn here (the caller shows the output's picture or text instead). */
export class ChartError extends Error {}

function refuse(uri: unknown): Promise<never> {
  return Promise.reject(
    new ChartError(
      `this chart loads ${String(uri)}, and a view fetches nothing: only data inside the output is drawn`
    )
  );
}

/** A Vega loader that loads nothing. */
const NO_LOADER = {
  options: {},
  sanitize: refuse,
  load: refuse,
  http: refuse,
  file: refuse
};

async function drawPlotly(node: HTMLElement, figure: any): Promise<void> {
  const Plotly: any = ((await import('plotly.js-cartesian-dist-min')) as any)
    .default;
  const known = new Set(Object.keys(Plotly.PlotSchema.get().traces));
  const data: any[] = Array.isArray(figure?.data) ? figure.data : [];
  const missing = data
    .map(trace => trace?.type ?? 'scatter')
    .filter(type => !known.has(type));
  if (missing.length) {
    throw new ChartError(
      `the Plotly trace type ${missing[0]} is not in the bundled plotly.js (cartesian)`
    );
  }
  const layout = { ...(figure?.layout ?? {}) };
  if (Array.isArray(layout.images)) {
    layout.images = layout.images.filter(
      (image: any) =>
        typeof image?.source === 'string' &&
        image.source.startsWith('data:image/')
    );
  }
  await Plotly.newPlot(node, data, layout, {
    ...(figure?.config ?? {}),
    displaylogo: false,
    showLink: false,
    showSendToCloud: false,
    showEditInChartStudio: false,
    responsive: true,
    typesetMath: false
  });
}

/** The first URL a spec loads from (`{"url": "…"}` anywhere in it), if any. */
function urlIn(value: unknown, depth = 0): string | null {
  if (depth > 50 || value === null || typeof value !== 'object') {
    return null;
  }
  if (!Array.isArray(value) && typeof (value as any).url === 'string') {
    return (value as any).url;
  }
  for (const item of Object.values(value as object)) {
    const found = urlIn(item, depth + 1);
    if (found !== null) {
      return found;
    }
  }
  return null;
}

async function drawVega(
  node: HTMLElement,
  spec: any,
  mime: string
): Promise<void> {
  const url = urlIn(spec);
  if (url !== null) {
    await refuse(url);
  }
  const [{ default: embed }, { expressionInterpreter }] = await Promise.all([
    import('vega-embed'),
    import('vega-interpreter')
  ]);
  await embed(node, spec, {
    mode: mime.includes('vegalite') ? 'vega-lite' : 'vega',
    ast: true,
    expr: expressionInterpreter,
    loader: NO_LOADER as any,
    actions: { export: true, source: false, compiled: false, editor: false },
    renderer: 'svg'
  });
}

/** Draw the chart `value` of type `mime` into `node` (a {@link ChartError} when it cannot). */
export async function drawChart(
  node: HTMLElement,
  mime: string,
  value: unknown
): Promise<void> {
  const spec = typeof value === 'string' ? JSON.parse(value) : value;
  if (mime === 'application/vnd.plotly.v1+json') {
    await drawPlotly(node, spec);
  } else {
    await drawVega(node, spec, mime);
  }
}
