/**
 * Build the MCP Apps view pages: each view (src/views/<name>.ts) bundled by esbuild with the
 * shared renderers and their libraries into ONE self-contained HTML file, its styles and
 * script inline, written to jupyter_mcp/views/static/<name>.html (shipped in the wheel).
 *
 * Each page declares its own Content-Security-Policy: no connection, frame, font or picture
 * from anywhere but `data:`, and no script but its own, allowed by its SHA-256 — so even an
 * inline script or event handler that got past the sanitizer would not run.
 *
 * Usage: node scripts/build-views.mjs [--dev]   (--dev: not minified)
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build, transform } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const out = join(root, '..', 'jupyter_mcp', 'views', 'static');
const VIEWS = {
  'cell-outputs': 'Cell outputs',
  variables: 'Kernel variables',
  diff: 'Diff'
};
const dev = process.argv.includes('--dev');

const css = (
  await transform(
    ['render.css', 'page.css'].map(name => readFileSync(join(root, 'style', name), 'utf8')).join('\n'),
    { loader: 'css', minify: !dev }
  )
).code;

mkdirSync(out, { recursive: true });
for (const [name, title] of Object.entries(VIEWS)) {
  const result = await build({
    entryPoints: [join(root, 'src', 'views', `${name}.ts`)],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: !dev,
    write: false,
    legalComments: 'eof',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'warning'
  });
  // A script inside <script> must not close it early.
  const script = result.outputFiles[0].text.replace(/<\/(script)/gi, '<\\/$1');
  const hash = createHash('sha256').update(script, 'utf8').digest('base64');
  const csp = [
    "default-src 'none'",
    `script-src 'sha256-${hash}'`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    'font-src data:',
    "connect-src 'none'",
    "frame-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'"
  ].join('; ');
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · jupyter-mcp</title>
<style>${css}</style>
</head>
<body>
<div id="root" class="jp-MCPView-page"><p class="jp-MCPView-note">Waiting for the tool's result…</p></div>
<script>${script}</script>
</body>
</html>
`;
  const file = join(out, `${name}.html`);
  writeFileSync(file, html);
  console.log(`${file.slice(root.length - 'labextension'.length)}: ${(html.length / 1024).toFixed(0)} KiB`);
}
