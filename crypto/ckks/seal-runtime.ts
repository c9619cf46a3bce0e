import initialize, { type MainModule } from 'node-seal';

let runtime: Promise<MainModule> | undefined;

/**
 * The process-wide SEAL WebAssembly module. Loaded once: every SEAL instance owns its own
 * heap, which never shrinks, so one instance per process bounds memory.
 */
export function loadSeal(): Promise<MainModule> {
  runtime ??= initialize();
  return runtime;
}

export type { MainModule as SealModule };
