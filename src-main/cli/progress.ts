/** A one-line progress bar with ETA for long commands; plain lines when stderr is not a terminal. */
import { formatDuration } from '#shared/format';
import { inertLine, inertText } from '../engine/util/inert';

export class ProgressLine {
  private readonly started = Date.now();
  private lastPlain = 0;
  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  get isTty(): boolean {
    return Boolean(this.stream.isTTY);
  }

  update(label: string, done: number, total: number, detail = ''): void {
    const fraction = total > 0 ? Math.min(done / total, 1) : 0;
    const elapsed = (Date.now() - this.started) / 1000;
    const eta = fraction > 0 && fraction < 1 ? (elapsed / fraction) * (1 - fraction) : 0;
    const width = 24;
    const filled = Math.round(fraction * width);
    const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
    const text = `${inertLine(label)} ${bar} ${done}/${total} ${formatDuration(elapsed)} elapsed${eta > 0 ? `, ETA ${formatDuration(eta)}` : ''}${detail ? `  ${inertLine(detail)}` : ''}`;
    if (this.isTty) {
      this.stream.write(`\r\x1b[2K${text.slice(0, (this.stream.columns ?? 120) - 1)}`);
    } else if (Date.now() - this.lastPlain > 5000 || done === total) {
      this.lastPlain = Date.now();
      this.stream.write(`${text}\n`);
    }
  }

  /** Print a line that stays (above the bar). */
  log(raw: string): void {
    const text = inertText(raw);
    this.stream.write(this.isTty ? `\r\x1b[2K${text}\n` : `${text}\n`);
  }

  end(): void {
    if (this.isTty) this.stream.write('\n');
  }
}
