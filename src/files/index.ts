export { moduleUrl } from './module-url.ts';
export { type FileOutput, type WriteAllOrNoneOptions, writeAllOrNone } from './write-all-or-none.ts';
