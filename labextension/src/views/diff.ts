/** The page of the diff view (one HTML file, built by scripts/build-views.mjs). */
import { renderDiff } from '../render/diff';
import { startView } from './page';

startView('diff', data => renderDiff(data.files));
