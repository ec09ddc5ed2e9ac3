/**
 * trackio (gradio-app/trackio): one SQLite database per project, `metrics` rows of a step's JSON,
 * a run's `configs` and, since 0.25.1, `traces` of chat messages. See schema.ts for the versions read.
 */
import type { ImportFormat } from '../types';
import { readTrackio } from './read';
import { scanTrackio } from './scan';
import { detectTrackio } from './source';

export const trackioFormat: ImportFormat = {
  id: 'trackio',
  label: 'trackio project database',
  detect: detectTrackio,
  scan: async (path, options) => scanTrackio(path, options.signal),
  read: (path, runKey, cursor, options) => readTrackio(path, runKey, cursor, options),
};
