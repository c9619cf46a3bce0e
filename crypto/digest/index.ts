export { bytesEqual } from './bytes-equal.ts';
export { chunkCrc32s, crc32, MAX_CRC_CHUNK_SIZE, verifyChunkCrc32s } from './crc32.ts';
export { merkleProof, merkleRoot, merkleRootFromProof, merkleTree, verifyMerkleProof } from './merkle.ts';
export { sha256, sha256Hex } from './sha256.ts';
