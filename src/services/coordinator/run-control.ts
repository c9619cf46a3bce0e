import { CohortError, InvalidArgumentError } from '../../errors/index.ts';
import type { CoordinatorStats, RoundSummary } from './events.ts';
import { RecentRounds } from './recent-rounds.ts';

/** Most rounds one run may ask for. */
export const MAX_RUN_ROUNDS = 1_000_000;

/** Most characters of a run's label. */
export const MAX_RUN_LABEL = 128;

/**
 * What an operator sets when starting a run. Only `rounds` changes what the coordinator does:
 * the other round settings (deadline, vote timeout, codec, learning) are the configuration's,
 * pinned for the federation, because sites and the commit params depend on them.
 */
export interface RunSettings {
  /** Rounds to run (each decided round counts, COMMIT or ABORT, rollback rounds included). */
  readonly rounds: number;
  /** Free text naming the run (shown in lists; not interpreted). */
  readonly label?: string;
}

/** Where a run stands. */
export type RunState = 'running' | 'stopping' | 'completed' | 'stopped';

/** One run: a named span of rounds and what they decided. */
export interface RunInfo {
  /** `run-<n>`, counted from 1 in this coordinator process. */
  readonly id: string;
  readonly label: string;
  /** Rounds asked for; null for the start-up run (`--rounds`), which counts log rounds instead. */
  readonly rounds: number | null;
  /** Start-up run: the last round number it runs (null: until stopped); null for API runs. */
  readonly untilRound: number | null;
  readonly state: RunState;
  /** Who started it: an admin token id, or `cli` for the start-up run. */
  readonly startedBy: string;
  readonly startedUnixMs: number;
  /** Who asked it to stop (a token id), or null. */
  readonly stoppedBy: string | null;
  readonly endedUnixMs: number | null;
  /** Its decided rounds, COMMITs and ABORTs: every one. */
  readonly decided: number;
  readonly committed: number;
  readonly aborted: number;
  /** Its newest decided rounds (at most `RECENT_ROUND_SUMMARIES`), in order. */
  readonly summaries: readonly RoundSummary[];
}

interface Run {
  id: string;
  label: string;
  rounds: number | null;
  untilRound: number | null;
  state: RunState;
  startedBy: string;
  startedUnixMs: number;
  stoppedBy: string | null;
  endedUnixMs: number | null;
  summaries: RecentRounds;
}

/** What {@link RunControl.admit} waits with (the coordinator). */
export interface RunHost {
  stopping(): boolean;
  setPhase(phase: CoordinatorStats['phase']): void;
  until(condition: () => boolean, deadline: number): Promise<boolean>;
}

/**
 * Training runs (docs/admin-api.md): rounds open only inside a run. The start-up run comes from
 * `--rounds` (`round.count`); with `idle`, the coordinator outlives its runs and waits for the next
 * one started through the admin API, and a rollback requested between runs runs at once as a
 * round of its own. Stopping a run lets the round in progress be decided and opens no other.
 * Runs live in the coordinator's memory; the log keeps their rounds and the admin actions that
 * started and stopped them.
 */
export class RunControl {
  readonly #idle: boolean;
  readonly #now: () => number;
  readonly #wake: () => void;
  readonly #runs: Run[] = [];
  #active: Run | undefined;
  /** Rollbacks queued and not yet let through by {@link admit} (one round each). */
  #rollbacksWaiting = 0;
  #closed = false;

  constructor(options: { idle: boolean; now: () => number; wake: () => void }) {
    this.#idle = options.idle;
    this.#now = options.now;
    this.#wake = options.wake;
  }

  /**
   * The start-up run, up to round `untilRound` (0: until stopped), as `--rounds` asks; none when
   * `untilRound` is undefined (an idle coordinator without `--rounds`).
   */
  begin(untilRound: number | undefined): void {
    if (untilRound === undefined) return;
    this.#active = this.#create('start-up', null, untilRound === 0 ? null : untilRound, 'cli');
  }

  /**
   * Starts a run of `settings.rounds` rounds for `by` (a token id).
   *
   * @throws InvalidArgumentError for rounds outside 1..{@link MAX_RUN_ROUNDS} or a label over
   *   {@link MAX_RUN_LABEL} characters; CohortError `RUN_ACTIVE` while a run is running or
   *   stopping, `STOPPED` once the coordinator stopped.
   */
  start(settings: RunSettings, by: string): RunInfo {
    const rounds = settings?.rounds;
    if (!Number.isSafeInteger(rounds) || rounds < 1 || rounds > MAX_RUN_ROUNDS) {
      throw new InvalidArgumentError(`rounds must be an integer in 1..${MAX_RUN_ROUNDS}, got ${rounds}`, {
        details: { name: 'rounds' },
      });
    }
    const label = settings.label ?? '';
    if (typeof label !== 'string' || label.length > MAX_RUN_LABEL) {
      throw new InvalidArgumentError(`label must be at most ${MAX_RUN_LABEL} characters`, {
        details: { name: 'label' },
      });
    }
    if (this.#closed) throw new CohortError('STOPPED', 'the coordinator has stopped');
    if (this.#active !== undefined) {
      throw new CohortError('RUN_ACTIVE', `run ${this.#active.id} is ${this.#active.state}; stop it first`, {
        details: { run: this.#active.id },
      });
    }
    const run = this.#create(label, rounds, null, by);
    this.#active = run;
    this.#wake();
    return snapshot(run);
  }

  /**
   * Asks run `id` to stop: the round in progress is decided, no other opens. Stopping a stopping
   * run answers it unchanged.
   *
   * @throws CohortError `RUN_UNKNOWN`; `RUN_NOT_ACTIVE` for a run that has ended.
   */
  stop(id: string, by: string): RunInfo {
    const run = this.#runs.find((r) => r.id === id);
    if (run === undefined) throw new CohortError('RUN_UNKNOWN', `no run ${JSON.stringify(id)}`);
    if (run.state === 'running') {
      run.state = 'stopping';
      run.stoppedBy = by;
      this.#wake();
    } else if (run.state !== 'stopping') {
      throw new CohortError('RUN_NOT_ACTIVE', `run ${id} has ended (${run.state})`, { details: { run: id } });
    }
    return snapshot(run);
  }

  /** Every run of this process, oldest first. */
  list(): RunInfo[] {
    return this.#runs.map(snapshot);
  }

  /** A rollback was queued: an idle coordinator runs it without waiting for a run. */
  rollbackQueued(): void {
    this.#rollbacksWaiting++;
    this.#wake();
  }

  /**
   * Whether round `round` may open: true while the active run wants it (finishing a run that is
   * done or asked to stop), or, when idle, once a run starts or a rollback is queued; false when
   * the coordinator stops, or (not idle) once the start-up run is over.
   */
  async admit(round: number, host: RunHost): Promise<boolean> {
    for (;;) {
      if (host.stopping()) return false;
      const run = this.#active;
      if (run !== undefined) {
        if (wants(run, round)) return true;
        this.#finish(run, run.state === 'stopping' ? 'stopped' : 'completed');
      }
      if (!this.#idle) return false;
      if (this.#rollbacksWaiting > 0) {
        this.#rollbacksWaiting--;
        return true;
      }
      host.setPhase('waiting');
      await host.until(
        () => this.#rollbacksWaiting > 0 || this.#active !== undefined,
        Number.POSITIVE_INFINITY,
      );
    }
  }

  /** Whether a training round `round` belongs to a run (else only a queued rollback may run). */
  training(round: number): boolean {
    return this.#active !== undefined && wants(this.#active, round);
  }

  /** Records a decided round with the active run, if any. */
  decided(summary: RoundSummary): void {
    this.#active?.summaries.push(summary);
  }

  /** The coordinator stopped: the active run ends as stopped, and no run starts again. */
  close(): void {
    this.#closed = true;
    if (this.#active !== undefined) this.#finish(this.#active, 'stopped');
  }

  #create(label: string, rounds: number | null, untilRound: number | null, by: string): Run {
    const run: Run = {
      id: `run-${this.#runs.length + 1}`,
      label,
      rounds,
      untilRound,
      state: 'running',
      startedBy: by,
      startedUnixMs: this.#now(),
      stoppedBy: null,
      endedUnixMs: null,
      summaries: new RecentRounds(),
    };
    this.#runs.push(run);
    return run;
  }

  #finish(run: Run, state: 'completed' | 'stopped'): void {
    run.state = state;
    run.endedUnixMs = this.#now();
    if (this.#active === run) this.#active = undefined;
  }
}

function wants(run: Run, round: number): boolean {
  if (run.state !== 'running') return false;
  if (run.untilRound !== null) return round <= run.untilRound;
  return run.rounds === null || run.summaries.decided < run.rounds;
}

function snapshot(run: Run): RunInfo {
  const { summaries, ...rest } = run;
  return Object.freeze({
    ...rest,
    decided: summaries.decided,
    committed: summaries.committed,
    aborted: summaries.aborted,
    summaries: Object.freeze(summaries.recent()),
  });
}
