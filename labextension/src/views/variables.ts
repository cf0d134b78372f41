/** The page of the variables view (one HTML file, built by scripts/build-views.mjs). */
import { renderVariables } from '../render/variables';
import { startView } from './page';

startView('variables', data => renderVariables(data));
