import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { TrainerError } from './trainer-error.ts';

/**
 * The bytes of `name` in the per-call folder `dir`, read as untrusted: it must be a regular file
 * (not a symbolic link, FIFO or device; opened with O_NOFOLLOW and O_NONBLOCK, so neither can make
 * the agent follow or block) of at most `maxBytes` bytes, checked before anything is read.
 *
 * @throws TrainerError `TRAINER_RESULT_MISSING` (no such file, with `missingHint` appended),
 *   `TRAINER_RESULT_TOO_LARGE`, `TRAINER_RESULT_INVALID` (not a regular file, unreadable), each
 *   naming the file.
 */
export async function readResultFile(
  dir: string,
  name: string,
  maxBytes: number,
  missingHint: string,
  details: Readonly<Record<string, unknown>>,
): Promise<Uint8Array> {
  const path = join(dir, name);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new TrainerError('TRAINER_RESULT_MISSING', `${name} is missing: ${missingHint}`, {
        cause,
        details: { ...details, file: name },
      });
    }
    const why =
      code === 'ELOOP' ? 'is a symbolic link; it must be a regular file' : `cannot be read (${code})`;
    throw new TrainerError('TRAINER_RESULT_INVALID', `${name} ${why}`, {
      cause,
      details: { ...details, file: name },
    });
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      throw new TrainerError('TRAINER_RESULT_INVALID', `${name} is not a regular file`, {
        details: { ...details, file: name },
      });
    }
    if (stat.size > maxBytes) {
      throw new TrainerError(
        'TRAINER_RESULT_TOO_LARGE',
        `${name} is ${stat.size} bytes; the agent accepts at most ${maxBytes}`,
        { details: { ...details, file: name, size: stat.size, maxBytes } },
      );
    }
    const bytes = new Uint8Array(stat.size);
    let at = 0;
    while (at < bytes.length) {
      const { bytesRead } = await handle.read(bytes, at, bytes.length - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return at === bytes.length ? bytes : bytes.subarray(0, at);
  } finally {
    await handle.close();
  }
}
