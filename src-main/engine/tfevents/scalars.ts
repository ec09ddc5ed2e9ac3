/**
 * Scalars of event files: TFRecord framing + Event decoding, with the byte position of each
 * record so a reader can resume after the last one it used. What TensorBoard's
 * backend/event_processing/event_file_loader.py does for its scalars, without TensorFlow.
 */
import path from 'node:path';
import { decodeEvent } from './events';
import { readRecords, readRecordsSync, TFRecordError, type RecordItem, type RecordReadOptions } from './tfrecord';

export type ScalarItem =
  /**
   * One record's event: its scalars (none for the file_version event, graphs, images…) together,
   * so a reader that resumes at `next` never splits an event's values.
   */
  | { kind: 'event'; scalars: { tag: string; value: number }[]; step: number; wallTime: number; offset: number; next: number }
  | { kind: 'issue'; error: TFRecordError }
  | { kind: 'end'; resumeAt: number; pending: boolean };

/**
 * TensorBoard's io_wrapper.py `IsSummaryEventsFile`: "tfevents" in the file name, except the
 * profiler's empty `.profile-empty` markers.
 */
export function isEventFileName(name: string): boolean {
  const base = path.basename(name);
  return base.includes('tfevents') && !base.endsWith('.profile-empty');
}

/** One record as a scalar item: an undecodable event is an issue and is skipped. */
function toScalarItem(file: string, item: RecordItem): ScalarItem {
  if (item.kind === 'end') return item;
  if (item.kind === 'issue') return { kind: 'issue', error: item.error };
  let event;
  try {
    event = decodeEvent(item.data);
  } catch (error) {
    return { kind: 'issue', error: new TFRecordError(file, item.offset, `not an Event message (${(error as Error).message}); record skipped`) };
  }
  const scalars = event.values.flatMap((v) => (v.scalar === null ? [] : [{ tag: v.tag, value: v.scalar }]));
  return { kind: 'event', scalars, step: event.step, wallTime: event.wallTime, offset: item.offset, next: item.next };
}

/** Every event of `file` after byte `start`, with its scalars. */
export async function* readScalars(file: string, start: number, options: RecordReadOptions): AsyncGenerator<ScalarItem> {
  for await (const item of readRecords(file, start, options)) yield toScalarItem(file, item);
}

export function* readScalarsSync(file: string, start: number, options: RecordReadOptions): Generator<ScalarItem> {
  for (const item of readRecordsSync(file, start, options)) yield toScalarItem(file, item);
}
