/**
 * The slot for a TensorBoard event-file reader. Issue 39 writes the Studio's reader (TFRecord
 * framing, masked CRC-32C, Event/Summary protos; src-main/engine/imports/tensorboard); the
 * follower does not carry a second one. Until it is plugged in, a run whose metrics are in
 * TensorBoard files (DrMAS with `trainer.logger` containing tensorboard) is followed from the
 * console lines of its log instead (3 decimals in DrMAS), with a warning.
 *
 * What the follower needs from a reader: every scalar written after a cursor, in file order,
 * across all `events.out.tfevents.*` files of the folder (a resumed writer adds a file), with the
 * position of each record so a restarted Studio continues where it stopped.
 */
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
