import type { TextSink } from '../log/index.ts';

/**
 * A per-round progress bar: on a TTY one line redrawn in place as sites finish; elsewhere (CI,
 * pipes) only the finished-round lines, so logs stay readable.
 */
export class RoundProgress {
  readonly #out: TextSink;
  readonly #tty: boolean;
  readonly #rounds: number;

  constructor(out: TextSink, rounds: number, tty: boolean) {
    this.#out = out;
    this.#tty = tty;
    this.#rounds = rounds;
  }

  /** Redraws the bar for `done` of `total` sites of `round` (TTY only). */
  sites(run: string, round: number, done: number, total: number): void {
    if (!this.#tty) return;
    const width = 24;
    const filled = Math.round((done / total) * width);
    this.#out.write(
      `\r${run} round ${round}/${this.#rounds} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} sites`,
    );
  }

  /** Prints the finished round's line. */
  round(line: string): void {
    this.#out.write(this.#tty ? `\r\x1b[2K${line}\n` : `${line}\n`);
  }
}
