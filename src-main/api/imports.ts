/**
 * The StudioApi's import area (issue 39): what a path holds before anything is written, an
 * import in the background with progress and cancel, pushed as events like an export's.
 */
import type { StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import type { ServiceContext } from './context';

type ImportsApi = Pick<StudioApi, 'previewImport' | 'startImport' | 'cancelImport'>;

export function createImportsApi(_context: ServiceContext): ImportsApi {
  const notYet = () => new StudioError('invalid_request', 'importing runs is not available in this build yet');
  return {
    async previewImport() {
      throw notYet();
    },
    async startImport() {
      throw notYet();
    },
    async cancelImport() {
      throw notYet();
    },
  };
}
