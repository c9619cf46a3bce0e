import { readFileSync } from 'node:fs';
import { DataError } from './data-error.ts';

/** Reads a whole file; a missing or unreadable file is `DATA_FILE_MISSING` naming the path. */
export function readDataFile(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'unknown error';
    const problem =
      code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file' : `cannot be read (${String(code)})`;
    throw DataError.at('DATA_FILE_MISSING', { file: path }, problem, { cause });
  }
}
