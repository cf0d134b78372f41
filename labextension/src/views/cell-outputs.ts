/** The page of the cell-outputs view (one HTML file, built by scripts/build-views.mjs). */
import { Sanitizer } from '@jupyterlab/apputils/lib/sanitizer';

import { renderCellOutputs } from '../render/outputs';
import { startView } from './page';

const sanitizer = new Sanitizer();
startView('cell-outputs', (data, images) =>
  renderCellOutputs(data, { sanitizer, images })
);
