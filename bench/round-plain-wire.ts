// Wire format of the round bench's plaintext FedAvg arm: [round u32][pad u32][weight f64][float32…].

/** Header bytes before the float32 values. */
export const PLAIN_HEADER = 16;

export function packFloats(round: number, weight: number, values: Float32Array): Uint8Array {
  const out = new Uint8Array(PLAIN_HEADER + values.byteLength);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, round, true);
  dv.setFloat64(8, weight, true);
  out.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), PLAIN_HEADER);
  return out;
}

export function unpackFloats(data: Uint8Array): { round: number; weight: number; values: Float32Array } {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const copy = data.slice(PLAIN_HEADER); // aligned copy
  return {
    round: dv.getUint32(0, true),
    weight: dv.getFloat64(8, true),
    values: new Float32Array(copy.buffer, 0, copy.byteLength / 4),
  };
}
