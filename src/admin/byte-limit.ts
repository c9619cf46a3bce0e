import { Transform, type TransformCallback } from 'node:stream';
import { assertInteger } from '../errors/index.ts';
import { AdminApiError } from './admin-error.ts';

/**
 * A pass-through that lets at most `maxBytes` through: the chunk that crosses the bound is cut at
 * it, `onExceeded` is called and the stream errors (`AUDIT_TOO_LARGE`), so an answer past the
 * bound is cut off instead of ending as if whole.
 */
export function byteLimit(maxBytes: number, onExceeded: () => void): Transform {
  assertInteger('maxBytes', maxBytes, 0, Number.MAX_SAFE_INTEGER);
  let passed = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      if (passed + chunk.length <= maxBytes) {
        passed += chunk.length;
        callback(null, chunk);
        return;
      }
      const room = maxBytes - passed;
      passed = maxBytes;
      if (room > 0) this.push(chunk.subarray(0, room));
      onExceeded();
      callback(new AdminApiError('AUDIT_TOO_LARGE', `the answer passed its size bound (${maxBytes} bytes)`));
    },
  });
}
