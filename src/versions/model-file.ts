import { envelopeHeader, openEnvelope } from './file-envelope.ts';
import { float32ToLeBytes, leBytesToFloat32 } from './float32-le.ts';

/** Magic of model and residual files ("Cohort MoDeL"). */
export const MODEL_FILE_MAGIC = 'CMDL';

/**
 * The parts of a model file (`models/<modelHashHex>.f32`, `residual.f32`): the 48-byte header
 * (magic "CMDL", version, float count, SHA-256 of the payload; see `envelopeHeader`) and the
 * payload, raw little-endian float32. Write them in order; the payload may alias `values`.
 */
export function modelFileParts(values: Float32Array): Uint8Array[] {
  const payload = float32ToLeBytes(values);
  return [envelopeHeader(MODEL_FILE_MAGIC, [payload], 4), payload];
}

/**
 * The float32 values of a model file, after checking header and checksum. A fresh array.
 *
 * @throws VersionError `STORE_CORRUPT` naming `path`.
 */
export function readModelFile(bytes: Uint8Array, path: string): Float32Array {
  return leBytesToFloat32(openEnvelope(bytes, MODEL_FILE_MAGIC, 4, path));
}
