/**
 * The import formats (issue 39): one folder each under imports/, one entry here. Detection tries
 * them in this order; the first whose `detect` accepts the path wins (a more specific format
 * before a more general one: a veRL run folder may also hold TensorBoard files).
 */
import type { ImportFormatId } from '#shared/contract';
import { marsrlFormat } from './marsrl';
import { mlflowFormat } from './mlflow';
import { tensorboardFormat } from './tensorboard';
import { trackioFormat } from './trackio';
import type { ImportFormat } from './types';
import { drmasFormat, verlFormat } from './verl';

export const IMPORT_FORMAT_REGISTRY: readonly ImportFormat[] = [
  marsrlFormat,
  verlFormat,
  drmasFormat,
  // After the veRL and DrMAS run folders, which may hold TensorBoard files of their own.
  tensorboardFormat,
  trackioFormat,
  mlflowFormat,
];

export function importFormat(id: ImportFormatId): ImportFormat | undefined {
  return IMPORT_FORMAT_REGISTRY.find((format) => format.id === id);
}
