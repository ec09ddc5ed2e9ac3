/**
 * The slot for a TensorBoard event-file reader. Issue 39 wrote the Studio's reader (TFRecord
 * framing, masked CRC-32C, Event/Summary protos: src-main/engine/tfevents, the codec the
 * importer in src-main/engine/imports/tensorboard also reads with); `tensorBoardReader` below is
 * it: the live follower (live.ts) and the veRL/DrMAS importer pass it, so a run whose metrics are
 * in TensorBoard files (DrMAS with `trainer.logger` containing tensorboard) is read at float32
 * precision rather than from its console lines (3 decimals in DrMAS).
 *
 * What the follower needs from a reader: every scalar written after a cursor, in file order,
 * across all `events.out.tfevents.*` files of the folder (a resumed writer adds a file), with the
 * position of each record so a restarted Studio continues where it stopped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isEventFileName, readScalarsSync } from '../../tfevents/scalars';

export interface TensorBoardScalar {
  /** The tag: the metric key verbatim (modern torch SummaryWriter keeps spaces). */
  tag: string;
  step: number;
  value: number;
  /** Seconds since the epoch (Event.wall_time). */
  wallTime: number;
  /** The event file (name within the folder) and the byte offset of the record. */
  file: string;
  offset: number;
}

export interface TensorBoardReader {
  /** Scalars after `cursor` (null: from the start); a record still being written is left for the next call. */
  readScalars(dir: string, cursor: unknown | null): { scalars: TensorBoardScalar[]; cursor: unknown; warnings: string[] };
}

/** Per event file of the folder: the byte offset reached. */
interface SlotCursor {
  files: Record<string, number>;
}

/** Most scalars one call returns; the cursor stops after a whole event, and the next call goes on. */
const MAX_SCALARS_PER_CALL = 100_000;

/**
 * The Studio's reader for the slot: the folder's event files in name order (TensorBoard's order;
 * a resumed writer adds a later file), each from its offset in the cursor. A file with a later
 * file beside it is finished, so a record cut short in it is a warning; in the last file it is
 * left for the next call. Bad records are warnings naming the file and byte offset.
 */
export const tensorBoardReader: TensorBoardReader = {
  readScalars(dir, rawCursor) {
    const files = ((rawCursor as Partial<SlotCursor> | null)?.files ?? {}) as Record<string, number>;
    const cursor: SlotCursor = { files: { ...files } };
    const scalars: TensorBoardScalar[] = [];
    const warnings: string[] = [];
    const names = eventFiles(dir);
    for (const [i, name] of names.entries()) {
      if (scalars.length >= MAX_SCALARS_PER_CALL) break;
      for (const item of readScalarsSync(path.join(dir, name), cursor.files[name] ?? 0, { finished: i < names.length - 1 })) {
        if (item.kind === 'issue') warnings.push(`${name}: ${item.error.reason} (record at byte ${item.error.offset})`);
        else if (item.kind === 'end') cursor.files[name] = item.resumeAt;
        else {
          for (const s of item.scalars) scalars.push({ tag: s.tag, step: item.step, value: s.value, wallTime: item.wallTime, file: name, offset: item.offset });
          cursor.files[name] = item.next;
          if (scalars.length >= MAX_SCALARS_PER_CALL) break;
        }
      }
    }
    return { scalars, cursor, warnings };
  },
};

function eventFiles(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && isEventFileName(e.name))
      .map((e) => e.name)
      .sort();
  } catch {
    // Not made yet: the job writes its first event file once training starts.
    return [];
  }
}
