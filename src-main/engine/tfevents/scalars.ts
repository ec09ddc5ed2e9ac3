/**
 * Scalars of event files: TFRecord framing + Event decoding, with the byte position of each
 * record so a reader can resume after the last one it used. What TensorBoard's
 * backend/event_processing/event_file_loader.py does for its scalars, without TensorFlow.
 */
import path from 'node:path';
import { decodeEvent } from './events';
import { readRecords, TFRecordError, type RecordReadOptions } from './tfrecord';

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

/** Every scalar of `file` after byte `start`; an undecodable record is an issue and is skipped. */
export async function* readScalars(file: string, start: number, options: RecordReadOptions & { label?: string }): AsyncGenerator<ScalarItem> {
  for await (const item of readRecords(file, start, options)) {
    if (item.kind !== 'record') {
      yield item.kind === 'issue' ? { kind: 'issue', error: item.error } : item;
      continue;
    }
    let event;
    try {
      event = decodeEvent(item.data);
    } catch (error) {
      yield { kind: 'issue', error: new TFRecordError(file, item.offset, `not an Event message (${(error as Error).message}); record skipped`) };
      continue;
    }
    const scalars = event.values.flatMap((v) => (v.scalar === null ? [] : [{ tag: v.tag, value: v.scalar }]));
    yield { kind: 'event', scalars, step: event.step, wallTime: event.wallTime, offset: item.offset, next: item.next };
  }
}
