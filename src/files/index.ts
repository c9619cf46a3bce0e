export { type FileOutput, type WriteAllOrNoneOptions, writeAllOrNone } from './write-all-or-none.ts';
